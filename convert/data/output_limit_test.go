package data

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// craftXLSX packages one worksheet (the rows' XML) and a shared strings table into the
// smallest xlsx excelize opens.
func craftXLSX(t testing.TB, rows string, shared []string) []byte {
	t.Helper()
	var sst strings.Builder
	fmt.Fprintf(&sst, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d" uniqueCount="%d">`, len(shared), len(shared))
	for _, s := range shared {
		sst.WriteString("<si><t>" + s + "</t></si>")
	}
	sst.WriteString("</sst>")
	files := []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + rows + `</sheetData></worksheet>`},
		{"xl/sharedStrings.xml", sst.String()},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestData_OutputAmplificationRefused holds issue 18 item 4 for the data family: small
// inputs that expand without bound (an XLSX header cell in column XFD padding every sparse
// row to 16,384 columns; one long shared string referenced by every cell; a YAML alias
// repeated) fail conversion_failed naming the output limit, with at most the 64 MiB floor
// written, instead of writing hundreds of megabytes or running until the timeout.
func TestData_OutputAmplificationRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB per case")
	}
	var sparse strings.Builder
	sparse.WriteString(`<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c><c r="XFD1" t="inlineStr"><is><t>z</t></is></c></row>`)
	for r := 2; r <= 40_000; r++ {
		fmt.Fprintf(&sparse, `<row r="%d"><c r="A%d"><v>1</v></c></row>`, r, r)
	}
	var shared strings.Builder
	shared.WriteString(`<row r="1">`)
	for c := 0; c < 10; c++ {
		fmt.Fprintf(&shared, `<c r="%c1" t="inlineStr"><is><t>h%d</t></is></c>`, 'A'+c, c)
	}
	shared.WriteString(`</row>`)
	for r := 2; r <= 20_000; r++ {
		fmt.Fprintf(&shared, `<row r="%d">`, r)
		for c := 0; c < 10; c++ {
			fmt.Fprintf(&shared, `<c r="%c%d" t="s"><v>0</v></c>`, 'A'+c, r)
		}
		shared.WriteString(`</row>`)
	}
	cases := []struct {
		name, from, to string
		in             []byte
	}{
		{"sparse rows", "xlsx", "csv", craftXLSX(t, sparse.String(), nil)},
		{"shared strings", "xlsx", "csv", craftXLSX(t, shared.String(), []string{strings.Repeat("x", 32000)})},
		{"shared strings to json", "xlsx", "json", craftXLSX(t, shared.String(), []string{strings.Repeat("x", 32000)})},
		// Every row its own key: the union of 12,000 columns pads every row.
		{"json rows of distinct keys to csv", "json", "csv", distinctKeys(12_000)},
		{"yaml aliases to json", "yaml", "json", yamlAliases()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.in) > 512<<10 {
				t.Fatalf("crafted input is %d bytes; it should be small", len(tc.in))
			}
			out, err := runCatalog(t, tc.from, tc.to, tc.in)
			if !errors.Is(err, convert.ErrOutputTooLarge) {
				t.Fatalf("%d-byte %s -> %s: err = %v, want ErrOutputTooLarge", len(tc.in), tc.from, tc.to, err)
			}
			wantUserError(t, err, "the output ratio limit")
			if limit := max(convert.OutputRatioFloor, convert.DefaultMaxOutputRatio*len(tc.in)); len(out) > limit {
				t.Errorf("wrote %d bytes, over the %d limit", len(out), limit)
			}
			t.Logf("%d-byte input refused after %d bytes: %v", len(tc.in), len(out), err)
		})
	}
}

// distinctKeys is a JSON array of n objects, each with one key no other has.
func distinctKeys(n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"k%d":1}`, i)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// yamlAliases is a YAML file that names one 60,000-character string once and refers to it
// 2,000 times: each alias is a few bytes, its expansion the whole string.
func yamlAliases() []byte {
	var b strings.Builder
	b.WriteString("base: &s " + strings.Repeat("y", 60_000) + "\nrefs:\n")
	for range 2_000 {
		b.WriteString("  - *s\n")
	}
	return []byte(b.String())
}
