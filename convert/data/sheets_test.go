package data

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// sampleSheets is a workbook of three sheets, "Books", "Costs" and "Notes & ideas", written by
// testdata/data/make-sample-sheets.py with Python's standard library (no excelize code).
const sampleSheets = "../../testdata/data/sample-sheets.xlsx"

// convertSheet converts a workbook file through the catalog with the sheet option.
func convertSheet(t *testing.T, path, to, sheet string) (string, []convert.Warning, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	ws, err := testCatalog().Convert(context.Background(), "xlsx", to, convert.Options{Sheet: sheet}, f, &out, t.TempDir())
	return out.String(), ws, err
}

// TestXLSX_Sheets: without the sheet option the first sheet is converted and a warning names
// the others; with it, the named or numbered sheet is converted and nothing is dropped silently.
func TestXLSX_Sheets(t *testing.T) {
	// CSV as RFC 4180 writes it: CRLF line ends; booleans as the CSV writer spells them.
	books := "id,title,year\r\n1,The Hobbit,1937\r\n2,Cien años de soledad,1967\r\n"
	costs := "item,cents,paid\r\npaper,1250,true\r\nink,899,false\r\npostage,310,true\r\n"
	notes := "note\r\n日本語のメモ\r\n\"\"\"quoted\"\", with a comma\"\r\n"
	dropped := []convert.Warning{{Code: convert.WarnSheetsDropped,
		Message: `the workbook has 3 sheets; only the first, "Books", was converted, not "Costs", "Notes & ideas" (choose one with the sheet option)`}}
	for _, tc := range []struct {
		sheet, want string
		warnings    []convert.Warning
	}{
		{"", books, dropped},
		{"Books", books, nil},
		{"Costs", costs, nil},
		{"costs", costs, nil}, // Excel's names ignore case
		{"2", costs, nil},
		{"Notes & ideas", notes, nil},
		{"3", notes, nil},
	} {
		got, ws, err := convertSheet(t, sampleSheets, "csv", tc.sheet)
		if err != nil {
			t.Fatalf("sheet %q: %v", tc.sheet, err)
		}
		if got != tc.want {
			t.Errorf("sheet %q: csv\n%q\nwant\n%q", tc.sheet, got, tc.want)
		}
		if !reflect.DeepEqual(ws, tc.warnings) {
			t.Errorf("sheet %q: warnings %+v, want %+v", tc.sheet, ws, tc.warnings)
		}
	}

	// The sheet's cells keep their types in a typed target.
	got, ws, err := convertSheet(t, sampleSheets, "json", "Costs")
	if err != nil || ws != nil {
		t.Fatalf("Costs to json: %v, warnings %+v", err, ws)
	}
	if want := `[{"item":"paper","cents":1250,"paid":true},{"item":"ink","cents":899,"paid":false},{"item":"postage","cents":310,"paid":true}]`; compactJSON(t, got) != want {
		t.Errorf("Costs to json = %s, want %s", got, want)
	}

	// A chained conversion (xlsx -> html -> pdf, say) warns as well: every step reports.
	if _, ws, err := convertSheet(t, sampleSheets, "markdown", ""); err != nil || !reflect.DeepEqual(ws, dropped) {
		t.Errorf("to markdown: %v, warnings %+v, want %+v", err, ws, dropped)
	}

	// A one-sheet workbook loses nothing and says nothing.
	if _, ws, err := convertSheet(t, filepath.Join("..", "..", "testdata", "data", "sample.xlsx"), "csv", ""); err != nil || ws != nil {
		t.Errorf("sample.xlsx: %v, warnings %+v, want none", err, ws)
	}
}

// TestXLSX_SheetUnknown: a sheet the workbook lacks fails, naming the sheets it has.
func TestXLSX_SheetUnknown(t *testing.T) {
	for sheet, want := range map[string]string{
		"Summary": `options.sheet: the workbook has no sheet named "Summary" (its sheets: "Books", "Costs", "Notes & ideas")`,
		"4":       `options.sheet: the workbook has 3 sheet(s), so there is no sheet 4 (its sheets: "Books", "Costs", "Notes & ideas")`,
		"0":       `options.sheet: the workbook has 3 sheet(s), so there is no sheet 0 (its sheets: "Books", "Costs", "Notes & ideas")`,
	} {
		_, _, err := convertSheet(t, sampleSheets, "csv", sheet)
		var ce *convert.Error
		if !errors.As(err, &ce) || ce.Message != want {
			t.Errorf("sheet %q: %v, want the message %q", sheet, err, want)
		}
	}
}

// compactJSON returns s without insignificant white space.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("invalid JSON %q: %v", s, err)
	}
	return b.String()
}

// TestXLSX_Extras: a workbook's formulas, pictures and hyperlinks, which a table does not keep,
// are reported; the values are written as computed. sample-extras.xlsx is written by
// make-sample-sheets.py extras (Python's standard library).
func TestXLSX_Extras(t *testing.T) {
	got, ws, err := convertSheet(t, "../../testdata/data/sample-extras.xlsx", "csv", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "item,cents\r\npaper,1250\r\nink,899\r\ntotal,2149\r\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
	want := []convert.Warning{
		{Code: convert.WarnFormattingDropped, Message: "the workbook has formulas; their cells were written as their last computed values"},
		{Code: convert.WarnImagesDropped, Message: "the workbook's charts and pictures were not converted"},
		{Code: convert.WarnLinksDropped, Message: "the workbook's hyperlinks were reduced to their cells' text"},
	}
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("warnings %+v, want %+v", ws, want)
	}
}

// TestData_CommentsWarned: comments of YAML, TOML and XML inputs, which no target keeps, are
// reported; a '#' inside a value is not a comment.
func TestData_CommentsWarned(t *testing.T) {
	for _, tc := range []struct {
		from, to, input string
		want            []convert.Warning
	}{
		{"yaml", "json", "# settings\nname: convsvc # the service\nport: 8080\n", []convert.Warning{
			{Code: convert.WarnMetadataDropped, Message: "the YAML's comments were not kept; only its values were converted"}}},
		{"yaml", "json", "name: \"a # not a comment\"\nport: 8080\n", nil},
		{"toml", "yaml", "# settings\nname = \"convsvc\"\nport = 8080 # the port\n", []convert.Warning{
			{Code: convert.WarnMetadataDropped, Message: "the TOML's comments were not kept; only its values were converted"}}},
		{"toml", "yaml", "name = \"a # not a comment\"\n", nil},
		{"xml", "json", "<config><!-- settings --><name>convsvc</name></config>", []convert.Warning{
			{Code: convert.WarnMetadataDropped, Message: "the XML's comments were not kept; only its values were converted"}}},
		{"yaml", "csv", "# rows\n- {a: 1}\n- {a: 2}\n", []convert.Warning{
			{Code: convert.WarnMetadataDropped, Message: "the YAML's comments were not kept; only its values were converted"}}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, []byte(tc.input), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		ws, err := testCatalog().Convert(context.Background(), tc.from, tc.to, convert.Options{}, f, &out, dir)
		f.Close()
		if err != nil {
			t.Fatalf("%s -> %s %q: %v", tc.from, tc.to, tc.input, err)
		}
		if !reflect.DeepEqual(ws, tc.want) {
			t.Errorf("%s -> %s %q: warnings %+v, want %+v", tc.from, tc.to, tc.input, ws, tc.want)
		}
	}
}
