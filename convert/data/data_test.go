package data

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/archive"
	"github.com/convsvc/convsvc/convert/audio"
	"github.com/convsvc/convsvc/convert/document"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

var updateDataGolden = flag.Bool("update-data-golden", false, "rewrite testdata/data/golden from the current converters")

// testCatalog has every family, registered as standard.Register does (standard cannot be
// imported here: it imports this package); the others import no data code, so the data tests
// may use them. Tables become Markdown and HTML only when the document family is there.
var testCatalog = sync.OnceValue(func() *convert.Catalog {
	c := convert.NewEmptyCatalog(convert.Limits{})
	convimage.Register(c)
	document.Register(c)
	Register(c)
	audio.Register(c)
	archive.Register(c)
	document.RegisterPDFPageArchive(c)
	return c
})

// TestData_Matrix converts every sample to every data format it reaches, and every data sample
// to Markdown and HTML, and reads each output back (the data part of the standard catalog's
// conversion matrix; data as PDF, text or EPUB is the document family's).
func TestData_Matrix(t *testing.T) {
	checkers := map[string]convtest.Checker{}
	for _, f := range dataFormats {
		checkers[f.ID] = checkDataOutput(f.ID)
	}
	checkers["markdown"] = checkTableDocument("markdown")
	checkers["html"] = checkTableDocument("html")
	owns := func(from, to string) bool {
		return isDataFormat(to) || isDataFormat(from) && (to == "markdown" || to == "html")
	}
	convtest.Matrix(t, testCatalog(), owns, checkers)
}

// checkTableDocument counts the table rows of a Markdown or HTML output against the source's.
func checkTableDocument(to string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		from := convtest.FormatOfSample(testCatalog(), source)
		out, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		if !isDataFormat(from) {
			if len(out) == 0 {
				t.Fatal("empty output")
			}
			return
		}
		cols, rows := readTableFile(t, from, source)
		var gotRows int
		switch to {
		case "markdown":
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) < 2 || !strings.HasPrefix(lines[1], "| ---") {
				t.Fatalf("no Markdown table:\n%s", out)
			}
			if got := strings.Count(lines[1], "---"); got != len(cols) {
				t.Fatalf("%d columns, want %d", got, len(cols))
			}
			gotRows = len(lines) - 2
		case "html":
			if !bytes.Contains(out, []byte("<table>")) {
				t.Fatalf("no HTML table:\n%s", out)
			}
			if got := bytes.Count(out, []byte("<th>")); got != len(cols) {
				t.Fatalf("%d header cells, want %d", got, len(cols))
			}
			gotRows = bytes.Count(out, []byte("<tr>")) - 1
		}
		if gotRows != len(rows) {
			t.Fatalf("%d rows, want %d", gotRows, len(rows))
		}
	}
}

func isDataFormat(id string) bool {
	return slices.ContainsFunc(dataFormats, func(f convert.Format) bool { return f.ID == id })
}

func fileSection(t testing.TB, path string) *io.SectionReader {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

// readTableFile reads a file of a data format as header and rows of cell texts.
func readTableFile(t testing.TB, format, path string) ([]string, [][]string) {
	t.Helper()
	r, closeFn, err := openTableReader(context.Background(), format, fileSection(t, path), false, convert.Params{})
	if err != nil {
		t.Fatalf("reading %s as a %s table: %v", path, format, err)
	}
	defer closeFn()
	var rows [][]string
	for {
		row, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading %s as a %s table: %v", path, format, err)
		}
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cellText(v)
		}
		rows = append(rows, cells)
	}
	return slices.Clone(r.columns()), rows
}

// sameCell compares cell texts, numbers by value ("6" and "6.0", "12.5" and "12.50").
func sameCell(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && fa == fb
}

// stringify turns every scalar into its text, for comparisons through XML, which has only text.
func stringify(v any) any {
	switch v := v.(type) {
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.key, stringify(m.val)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = stringify(e)
		}
		return a
	}
	return cellText(v)
}

// normNumbers rewrites numbers to a canonical float text so 1.50 and 1.5 compare equal.
func normNumbers(v any) any {
	switch v := v.(type) {
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.key, normNumbers(m.val)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = normNumbers(e)
		}
		return a
	case json.Number:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return v
}

// checkDataOutput reads the output back: as a table (header and every cell) when either side
// is a table format, else as a tree equal to the source's (compared as text through XML).
func checkDataOutput(to string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		from := convtest.FormatOfSample(testCatalog(), source)
		tableView := !slices.Contains(treeFormats, from) || !slices.Contains(treeFormats, to)
		if !isDataFormat(from) {
			// Another family's source: the output must at least read back.
			if slices.Contains(treeFormats, to) {
				if _, err := readTree(context.Background(), to, fileSection(t, output)); err != nil {
					t.Fatalf("output does not read back as %s: %v", to, err)
				}
			} else {
				readTableFile(t, to, output)
			}
			return
		}
		if tableView {
			wantCols, wantRows := readTableFile(t, from, source)
			gotCols, gotRows := readTableFile(t, to, output)
			if !slices.Equal(gotCols, wantCols) {
				t.Fatalf("header %q, want %q", gotCols, wantCols)
			}
			if len(gotRows) != len(wantRows) {
				t.Fatalf("%d rows, want %d", len(gotRows), len(wantRows))
			}
			for i := range wantRows {
				for j := range wantRows[i] {
					if !sameCell(gotRows[i][j], wantRows[i][j]) {
						t.Errorf("row %d column %q = %q, want %q", i+1, wantCols[j], gotRows[i][j], wantRows[i][j])
					}
				}
			}
			return
		}
		want, err := readTree(context.Background(), from, fileSection(t, source))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readTree(context.Background(), to, fileSection(t, output))
		if err != nil {
			t.Fatalf("output does not read back as %s: %v", to, err)
		}
		if from == "xml" || to == "xml" {
			want, got = stringify(want), stringify(got)
		}
		if want, got = normNumbers(want), normNumbers(got); !reflect.DeepEqual(got, want) {
			t.Fatalf("tree differs from the source's:\ngot  %v\nwant %v", got, want)
		}
	}
}

// runCatalog runs one catalog conversion on in-memory input.
func runCatalog(t testing.TB, from, to string, input []byte) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "in")
	if err := os.WriteFile(p, input, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	_, err = testCatalog().Convert(context.Background(), from, to, convert.Options{}, f, &out, dir)
	return out.Bytes(), err
}

func dataConvertOK(t *testing.T, from, to, input string) string {
	t.Helper()
	out, err := runCatalog(t, from, to, []byte(input))
	if err != nil {
		t.Fatalf("%s -> %s: %v", from, to, err)
	}
	return string(out)
}

// wantUserError checks that err is an *Error whose message contains want.
func wantUserError(t *testing.T, err error, want string) {
	t.Helper()
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want an *Error containing %q", err, err, want)
	}
	if !strings.Contains(ce.Message, want) {
		t.Fatalf("message %q does not contain %q", ce.Message, want)
	}
}

func TestData_Golden(t *testing.T) {
	for _, g := range []struct{ sample, from, to string }{
		{"sample.csv", "csv", "json"},
		{"sample.json", "json", "yaml"},
		{"sample.yaml", "yaml", "toml"},
		{"sample.xml", "xml", "json"},
		{"sample.tsv", "tsv", "markdown"},
	} {
		t.Run(g.from+"->"+g.to, func(t *testing.T) {
			if _, ok := testCatalog().Format(g.to); !ok {
				t.Skipf("no %s format", g.to)
			}
			in, err := os.ReadFile(filepath.Join("..", "..", "testdata", "data", g.sample))
			if err != nil {
				t.Fatal(err)
			}
			out, err := runCatalog(t, g.from, g.to, in)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("..", "..", "testdata", "data", "golden", g.sample+"."+g.to)
			if *updateDataGolden {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-data-golden to create it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("output differs from %s:\n%s", golden, out)
			}
		})
	}
}

func TestData_LossIsAnError(t *testing.T) {
	tests := []struct {
		from, to, input, want string
	}{
		{"json", "toml", `{"a": {"b": null}}`, "json -> toml: value at $.a.b is null, which TOML cannot hold"},
		{"json", "toml", `"just a string"`, "json -> toml: the top level is a string, but TOML needs a table"},
		{"json", "toml", `{"big": 123456789012345678901234}`, "json -> toml: value at $.big is 123456789012345678901234, beyond the range of TOML's 64-bit integers"},
		{"json", "toml", `{"a": [1, null]}`, "json -> toml: value at $.a[1] is null, which TOML cannot hold"},
		{"yaml", "json", "x: .inf\n", "yaml -> json: value at $.x is infinity, which JSON cannot hold"},
		{"json", "csv", `[{"a": 1, "b": {"c": 2}}]`, `json -> csv: value at $[0].b is an object, but a table cell cannot hold one`},
		{"json", "csv", `[{"a": 1}, [1, 2]]`, "json -> csv: value at $[1] is an array, but a table needs an array of objects"},
		{"json", "csv", `{"a": [], "b": 2}`, `json -> csv: the object at $ has a member "b" beside the table`},
		{"json", "csv", `{"data": [{"a": 1}], "meta": 2}`, `json -> csv: the object at $ has a member "meta" beside the table`},
		{"json", "csv", `42`, "json -> csv: the top level is a number, but a table needs an array of objects"},
		{"yaml", "csv", "a: 1\nb: [1, 2]\n", "yaml -> csv: value at $[0].b is an array, but a table cell cannot hold one"},
		{"ndjson", "csv", "{\"a\":1}\n{\"a\":[1]}\n", `ndjson -> csv: value of "a" on line 2 is an array`},
		{"json", "xml", `"just a string"`, "json -> xml: the top level is a string, but XML needs one root element"},
		{"json", "xml", `{"a": 1, "@convsvc": 2}`, `json -> xml: the top level has 2 members and one is named "@convsvc", which the XML root wrapper needs for itself`},
		{"json", "csv", `{"a": 1, "hosts": ["x"]}`, `json -> csv: value at $.hosts is an array, but a table cell cannot hold one`},
		{"toml", "tsv", "a = 1\nhosts = [\"x\"]\n", `toml -> tsv: value at $[0].hosts is an array, but a table cell cannot hold one`},
		{"yaml", "ndjson", "a: 1\nb: {c: .nan}\n", "yaml -> ndjson: value at $[0].b.c is NaN, which JSON cannot hold"},
		{"json", "xml", `{"a": {"b c": 1}}`, `json -> xml: key "b c" at $.a["b c"] is not a valid XML element name`},
		{"json", "xml", `{"a": {"b": [[1]]}}`, `json -> xml: value at $.a.b[0] is an array inside an array`},
		{"json", "xml", `{"a": {"b": []}}`, `json -> xml: value at $.a.b is an empty array, which XML cannot hold`},
		{"json", "xml", `{"a": {"@x": {"y": 1}}}`, `json -> xml: value at $.a["@x"] is an object, but XML an attribute can only hold text`},
		{"csv", "json", "a,a\n1,2\n", `csv -> json: the header names column "a" twice, but JSON objects need unique keys`},
		{"csv", "xml", "a b\n1\n", `csv -> xml: key "a b" at $.rows.row[0]["a b"] is not a valid XML element name`},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to+" "+tt.input, func(t *testing.T) {
			_, err := runCatalog(t, tt.from, tt.to, []byte(tt.input))
			wantUserError(t, err, tt.want)
		})
	}
}

func TestData_InvalidInput(t *testing.T) {
	tests := []struct{ from, to, input, want string }{
		{"json", "yaml", `{"a": 1,}`, "input is not a valid JSON file (line 1, column 9: invalid character '}'"},
		{"json", "yaml", "{\"a\": 1}\n{\"a\": 2}\n", "input is not a valid JSON file (more data after the first value, at line 2, column 2; is it NDJSON?)"},
		{"json", "yaml", `{"a": 1, "a": 2}`, `key "a" appears twice`},
		{"json", "yaml", "", "input is not a valid JSON file (it is empty)"},
		{"json", "csv", "\x89PNG\r\n\x1a\n\x00\x00", "input is not a valid JSON file (it looks like PNG)"},
		{"csv", "json", "\xff\xfea\x00,\x00", "input is not a valid CSV file (it is UTF-16 text; save it as UTF-8)"},
		{"csv", "json", "a,b\n1,2,3\n", "input is not a valid CSV file (line 2 has a different number of fields than the header's 2"},
		{"csv", "json", "a,b\n\"1,2\n", "input is not a valid CSV file (line 2, column 6: extraneous or missing \" in quoted-field)"},
		{"yaml", "json", "a: 1\n---\nb: 2\n", "input holds more than one YAML document"},
		{"yaml", "json", "a: [1, 2\n", "input is not a valid YAML file"},
		{"toml", "json", "a = \n", "input is not a valid TOML file (line 1, column"},
		{"xml", "json", "<a><b></a>", "input is not a valid XML file (line 1"},
		{"xml", "json", "<a/><b/>", "a second root element <b> follows <a>"},
		{"xml", "json", "hello", "input is not a valid XML file (it does not start with '<')"},
		{"xml", "json", "PK\x03\x04\x00\x00\x00\x00", "input is not a valid XML file (it looks like ZIP)"},
		{"xlsx", "csv", "a,b\n1,2\n", "input is not a valid XLSX file (it looks like text)"},
		{"ndjson", "csv", "{\"a\":1}\n{\"a\":\n", "input is not a valid NDJSON file (line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to+" "+tt.input, func(t *testing.T) {
			_, err := runCatalog(t, tt.from, tt.to, []byte(tt.input))
			wantUserError(t, err, tt.want)
		})
	}
}

// configSample is a plain configuration file: six top-level keys, one a list, one a table.
var configSample = map[string]string{
	"json": `{"title": "svc", "port": 8080, "debug": true, "ratio": 0.5, "hosts": ["a", "b|c"], "db": {"user": "u", "pool": 4}}`,
	"yaml": "title: svc\nport: 8080\ndebug: true\nratio: 0.5\nhosts: [a, b|c]\ndb: {user: u, pool: 4}\n",
	"toml": "title = \"svc\"\nport = 8080\ndebug = true\nratio = 0.5\nhosts = [\"a\", \"b|c\"]\n\n[db]\nuser = \"u\"\npool = 4\n",
}

// TestData_ConfigFilesAsXML checks that several top-level members get the documented root
// wrapper, and that reading it back gives the members again.
func TestData_ConfigFilesAsXML(t *testing.T) {
	want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root convsvc=\"members\">\n  <title>svc</title>\n  <port>8080</port>\n  <debug>true</debug>\n  <ratio>0.5</ratio>\n  <hosts>a</hosts>\n  <hosts>b|c</hosts>\n  <db>\n    <user>u</user>\n    <pool>4</pool>\n  </db>\n</root>\n"
	wantJSON := "{\n  \"title\": \"svc\",\n  \"port\": \"8080\",\n  \"debug\": \"true\",\n  \"ratio\": \"0.5\",\n  \"hosts\": [\n    \"a\",\n    \"b|c\"\n  ],\n  \"db\": {\n    \"user\": \"u\",\n    \"pool\": \"4\"\n  }\n}\n"
	for _, from := range []string{"json", "yaml", "toml"} {
		t.Run(from, func(t *testing.T) {
			got := dataConvertOK(t, from, "xml", configSample[from])
			if got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			if back := dataConvertOK(t, "xml", "json", got); back != wantJSON {
				t.Fatalf("read back as\n%s\nwant\n%s", back, wantJSON)
			}
		})
	}
	// One member holding an array is wrapped too; a root of another name, or without the
	// attribute, is an ordinary element.
	if got := dataConvertOK(t, "json", "xml", `{"item": [1, 2]}`); !strings.Contains(got, "<root convsvc=\"members\">\n  <item>1</item>\n  <item>2</item>\n</root>") {
		t.Errorf("one array member: %s", got)
	}
	if got := dataConvertOK(t, "xml", "json", "<root><a>1</a><b>2</b></root>"); got != "{\n  \"root\": {\n    \"a\": \"1\",\n    \"b\": \"2\"\n  }\n}\n" {
		t.Errorf("plain <root>: %s", got)
	}
}

// TestData_ConfigFilesAsTables checks that a configuration file is laid out as a tree in
// Markdown and HTML (key | value rows, a section per table), that a nested value in an NDJSON
// row is kept as a value, and that documents made from them convert.
func TestData_ConfigFilesAsTables(t *testing.T) {
	for _, from := range []string{"json", "yaml", "toml"} {
		t.Run(from, func(t *testing.T) {
			md := dataConvertOK(t, from, "markdown", configSample[from])
			if want := "| key | value |\n| --- | --- |\n| title | svc |\n| port | 8080 |\n| debug | true |\n| ratio | 0.5 |\n| hosts | a, b\\|c |\n\n# db\n\n| key | value |\n| --- | --- |\n| user | u |\n| pool | 4 |\n"; md != want {
				t.Errorf("markdown:\n%s\nwant\n%s", md, want)
			}
			html := dataConvertOK(t, from, "html", configSample[from])
			for _, want := range []string{"<tr><td>hosts</td><td>a, b|c</td></tr>", "<h1>db</h1>", "<tr><td>pool</td><td>4</td></tr>"} {
				if !strings.Contains(html, want) {
					t.Errorf("html lacks %q:\n%s", want, html)
				}
			}
			nd := dataConvertOK(t, from, "ndjson", configSample[from])
			if want := `{"title":"svc","port":8080,"debug":true,"ratio":0.5,"hosts":["a","b|c"],"db":{"user":"u","pool":4}}` + "\n"; nd != want {
				t.Errorf("ndjson:\n%s\nwant\n%s", nd, want)
			}
			for _, to := range []string{"pdf", "txt", "epub"} {
				if testing.Short() && to != "pdf" {
					continue
				}
				out, err := runCatalog(t, from, to, []byte(configSample[from]))
				if err != nil || len(out) == 0 {
					t.Errorf("%s -> %s: %d bytes, %v", from, to, len(out), err)
				}
			}
		})
	}
}

// TestData_NDJSONNestedCells checks the streaming NDJSON reader: a nested value in a row becomes
// the cell's compact JSON for Markdown, and stays a value for JSON lines.
func TestData_NDJSONNestedCells(t *testing.T) {
	in := "{\"a\": 1, \"b\": [1, {\"c\": null, \"d\": \"x y\"}]}\n{\"a\": 2}\n"
	if got, want := dataConvertOK(t, "ndjson", "markdown", in), "| a | b |\n| --- | --- |\n| 1 | [1,{\"c\":null,\"d\":\"x y\"}] |\n| 2 |  |\n"; got != want {
		t.Errorf("markdown:\n%s\nwant\n%s", got, want)
	}
	if got, want := dataConvertOK(t, "json", "ndjson", `[{"a": 1, "b": {"c": [true, 1.5e3]}}]`), `{"a":1,"b":{"c":[true,1.5e3]}}`+"\n"; got != want {
		t.Errorf("ndjson:\n%s\nwant\n%s", got, want)
	}
}

func TestData_XMLMapping(t *testing.T) {
	in := `<?xml version="1.0"?>
<!DOCTYPE doc>
<doc xmlns:dc="http://purl.org/dc/elements/1.1/" version="2">
  <!-- dropped -->
  <dc:title>Tea &amp; biscuits &#x263A;</dc:title>
  <item id="1">first</item>
  <item id="2"/>
  <empty/>
  <note>  spaced  </note>
  <mixed>one <b>two</b> three</mixed>
</doc>`
	got := dataConvertOK(t, "xml", "json", in)
	want := `{
  "doc": {
    "@xmlns:dc": "http://purl.org/dc/elements/1.1/",
    "@version": "2",
    "dc:title": "Tea & biscuits ☺",
    "item": [
      {
        "@id": "1",
        "#text": "first"
      },
      {
        "@id": "2"
      }
    ],
    "empty": "",
    "note": "  spaced  ",
    "mixed": {
      "b": "two",
      "#text": "one three"
    }
  }
}
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// And back: the same tree.
	back := dataConvertOK(t, "json", "xml", got)
	if again := dataConvertOK(t, "xml", "json", back); again != got {
		t.Fatalf("round trip through XML:\n%s\nbecame\n%s", got, again)
	}
}

func TestData_TypesKept(t *testing.T) {
	// Numbers keep their literal text, dates stay strings, key order is the document's.
	got := dataConvertOK(t, "yaml", "json", "z: 1.0\ny: 2001-12-14\nx: 12345678901234567890123\nw: 0x10\nv: ~\nu: 'true'\nt: [1e3, -0.5]\n")
	want := `{
  "z": 1.0,
  "y": "2001-12-14",
  "x": 12345678901234567890123,
  "w": 16,
  "v": null,
  "u": "true",
  "t": [
    1e3,
    -0.5
  ]
}
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	got = dataConvertOK(t, "toml", "yaml", "b = 1.0\na = 1979-05-27T07:32:00Z\n[t]\nz = inf\nd = 1979-05-27\n")
	want = "b: 1.0\na: \"1979-05-27T07:32:00Z\"\nt:\n  z: .inf\n  d: \"1979-05-27\"\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	got = dataConvertOK(t, "json", "toml", `{"name": "x", "n": 1, "f": 2.50, "nested": {"k": [1, 2]}, "list": [{"a": 1}, {"a": 2, "b": {"c": true}}], "s": "say \"hi\"\n"}`)
	want = `name = "x"
n = 1
f = 2.50
s = "say \"hi\"\n"

[nested]
k = [1, 2]

[[list]]
a = 1

[[list]]
a = 2

[list.b]
c = true
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if back := dataConvertOK(t, "toml", "json", got); !strings.Contains(back, `"f": 2.5`) || !strings.Contains(back, `"c": true`) {
		t.Fatalf("toml read back as %s", back)
	}
}

func TestData_CSVInference(t *testing.T) {
	got := dataConvertOK(t, "csv", "json", "\xef\xbb\xbfzip,n,f,b,s,big,e\n007,42,1.50,true,\"a,b\",4111111111111111,\n")
	want := "[\n  {\"zip\":\"007\",\"n\":42,\"f\":1.50,\"b\":true,\"s\":\"a,b\",\"big\":\"4111111111111111\",\"e\":\"\"}\n]\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := dataConvertOK(t, "csv", "json", ""); got != "[]\n" {
		t.Fatalf("empty CSV became %q", got)
	}
}

func TestData_JSONTableShapes(t *testing.T) {
	tests := []struct{ in, want string }{
		// The union of keys, in order of appearance; missing cells are empty.
		{`[{"a": 1, "b": "x"}, {"c": true, "a": 2}]`, "a,b,c\r\n1,x,\r\n2,,true\r\n"},
		{`{"rows": {"row": [{"a": 1}, {"a": 2}]}}`, "a\r\n1\r\n2\r\n"},
		{`{"a": 1, "b": null}`, "a,b\r\n1,\r\n"},
		{`{"wrap": {"a": 1}}`, "a\r\n1\r\n"},
		{`[]`, ""},
	}
	for _, tt := range tests {
		if got := dataConvertOK(t, "json", "csv", tt.in); got != tt.want {
			t.Errorf("%s -> %q, want %q", tt.in, got, tt.want)
		}
	}
	// ndjson -> json leaves absent keys absent rather than writing null.
	got := dataConvertOK(t, "ndjson", "json", "{\"a\":1}\n\n{\"b\":null}\n")
	if want := "[\n  {\"a\":1},\n  {\"b\":null}\n]\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestData_TablesAsTrees(t *testing.T) {
	got := dataConvertOK(t, "csv", "toml", "a,b\n1,x\n2,y\n")
	want := "[[rows.row]]\na = 1\nb = \"x\"\n\n[[rows.row]]\na = 2\nb = \"y\"\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if back := dataConvertOK(t, "toml", "csv", got); back != "a,b\r\n1,x\r\n2,y\r\n" {
		t.Fatalf("back %q", back)
	}
	x := dataConvertOK(t, "csv", "xml", "a,b\n1,x\n")
	if want := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rows>\n  <row>\n    <a>1</a>\n    <b>x</b>\n  </row>\n</rows>\n"; x != want {
		t.Fatalf("got\n%s\nwant\n%s", x, want)
	}
	if back := dataConvertOK(t, "xml", "tsv", x); back != "a\tb\n1\tx\n" {
		t.Fatalf("back %q", back)
	}
}

func TestData_XLSX(t *testing.T) {
	csvIn := "name,n,ok,note\nAda,1.5,true,\"multi\nline\"\nBob,00123,false,\n"
	x, err := runCatalog(t, "csv", "xlsx", []byte(csvIn))
	if err != nil {
		t.Fatal(err)
	}
	back, err := runCatalog(t, "xlsx", "json", x)
	if err != nil {
		t.Fatal(err)
	}
	want := "[\n  {\"name\":\"Ada\",\"n\":1.5,\"ok\":true,\"note\":\"multi\\nline\"},\n  {\"name\":\"Bob\",\"n\":\"00123\",\"ok\":false,\"note\":\"\"}\n]\n"
	if string(back) != want {
		t.Fatalf("got\n%s\nwant\n%s", back, want)
	}
	// A cell Excel would cut is refused, not cut.
	_, err = runCatalog(t, "csv", "xlsx", []byte("a\n"+strings.Repeat("x", 40000)+"\n"))
	wantUserError(t, err, "csv -> xlsx: cell A2 holds 40000 characters, more than the 32767 an XLSX cell holds")
}

func TestData_Hostile(t *testing.T) {
	tests := []struct {
		file, from, to, want string
		maxAlloc             uint64
	}{
		{"data-billion-laughs.yaml", "yaml", "json", "aliases expand to too many values", 32 << 20},
		{"data-xxe.xml", "xml", "json", "input is not a valid XML file (line 15: invalid character entity &xxe;)", 1 << 20},
		{"data-deep-nesting.json", "json", "yaml", "input is nested more than 1000 levels deep", 8 << 20},
		{"data-deep-nesting.json", "json", "csv", "value at $[0] is an array, but a table needs an array of objects", 8 << 20},
		{"data-ragged.csv", "csv", "json", "line 3 has a different number of fields than the header's 3", 1 << 20},
		{"data-zipbomb.xlsx", "xlsx", "csv", "input unzips to more than 1 GiB, over the limit for XLSX files (a zip bomb?)", 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.file+"->"+tt.to, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := cputime.Self() // CPU, not wall time: the machine may be busy (issue 24)
			_, err = runCatalog(t, tt.from, tt.to, in)
			elapsed := cputime.Self() - start
			runtime.ReadMemStats(&after)
			wantUserError(t, err, tt.want)
			if elapsed > 3*time.Second {
				t.Errorf("took %v of CPU", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tt.maxAlloc {
				t.Errorf("allocated %d KB, want at most %d KB", alloc>>10, tt.maxAlloc>>10)
			}
		})
	}
}

func TestData_XXENeverReadsFiles(t *testing.T) {
	// An external entity used in an attribute or a parameter entity must not pull in a file
	// either: the decoder rejects unknown entities instead of resolving them.
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("TOP-SECRET"), 0o644)
	in := `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY % p SYSTEM "file://` + secret + `"> %p; <!ENTITY e SYSTEM "file://` + secret + `">]><r a="&e;">x</r>`
	out, err := runCatalog(t, "xml", "json", []byte(in))
	if err == nil || bytes.Contains(out, []byte("TOP-SECRET")) || strings.Contains(err.Error(), "TOP-SECRET") {
		t.Fatalf("out %q, err %v", out, err)
	}
}

func TestData_Cancelled(t *testing.T) {
	var big strings.Builder
	big.WriteString("a,b\n")
	for i := range 200_000 {
		big.WriteString(strconv.Itoa(i) + ",x\n")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := io.NewSectionReader(strings.NewReader(big.String()), 0, int64(big.Len()))
	for _, to := range []string{"json", "tsv", "xlsx", "yaml"} {
		err := dataRun("csv", to)(ctx, in, io.Discard, convert.Params{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("csv -> %s with a cancelled context: %v", to, err)
		}
	}
}

func TestData_FormatsRegistered(t *testing.T) {
	c := testCatalog()
	for _, f := range dataFormats {
		got, ok := c.Format(f.ID)
		if !ok || got.Category != convert.CategoryData || got.MIME == "" || len(got.Extensions) == 0 {
			t.Errorf("format %s: %+v", f.ID, got)
		}
		for _, g := range dataFormats {
			if g.ID == f.ID {
				continue
			}
			if steps, err := c.Path(f.ID, g.ID); err != nil || len(steps) != 1 {
				t.Errorf("Path(%s, %s) = %v, %v; want one step", f.ID, g.ID, steps, err)
			}
		}
	}
}

func TestData_RecordTooLong(t *testing.T) {
	// One endless quoted field: refused once it passes DataMaxRecordBytes, not read whole.
	in := "a\n\"" + strings.Repeat("x", DataMaxRecordBytes+200<<10)
	_, err := runCatalog(t, "csv", "json", []byte(in))
	wantUserError(t, err, "input has a record longer than 16 MiB")
	in = strings.Repeat("y", DataMaxRecordBytes+200<<10) + ",b\n"
	_, err = runCatalog(t, "csv", "json", []byte(in))
	wantUserError(t, err, "input has a record longer than 16 MiB")
}

func TestData_YAMLQuoting(t *testing.T) {
	// Every string that YAML could read as something else, or not at all, survives a round
	// trip through our YAML writer, as a key and as a value; nesting keeps its shape.
	tricky := []string{"", " lead", "trail ", "yes", "No", "ON", "y", "~", "null", "Null", "1.5", "0x1F", "1e3", ".inf", "-.5",
		"+1", "2001-12-14", "- item", "a: b", "a #b", "#c", "multi\nline\n", "tab\there", "@x", "é", "\u2028", "key:",
		"'q'", `"dq"`, "%x", "!tag", "&a", "*b", "[", "{", ">", "|", "`", "=", "<<", "ok plain", "a:b", "x\x00y", "\ufeffbom"}
	obj := object{}
	for i, s := range tricky {
		obj = append(obj, member{s, s}, member{"k" + strconv.Itoa(i), []any{s, object{{s, []any{}}}, []any{[]any{s}}, object{}}})
	}
	in, err := func() ([]byte, error) {
		var b bytes.Buffer
		err := writeJSONTree(context.Background(), &b, obj)
		return b.Bytes(), err
	}()
	if err != nil {
		t.Fatal(err)
	}
	y := dataConvertOK(t, "json", "yaml", string(in))
	back := dataConvertOK(t, "yaml", "json", y)
	if back != string(in) {
		t.Fatalf("JSON -> YAML -> JSON changed the tree; YAML was:\n%s", y)
	}
}
