package document

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// TestDocument_Scaling holds issue 18 item 2 for the document family: the Markdown, HTML,
// DOCX and SVG readers and the HTML, Markdown, text, EPUB and PDF writers take about 4x the
// CPU time for 4x the input, for shapes that would expose a check against every earlier
// item (many links and link definitions, headings, list items, table rows, runs,
// relationships, shapes).
func TestDocument_Scaling(t *testing.T) {
	rep := func(n int, head, tail string, item func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			b.WriteString(item(i))
		}
		b.WriteString(tail)
		return []byte(b.String())
	}
	mdLinks := func(n int) []byte {
		return rep(n, "# Links\n\n", "", func(i int) string {
			return fmt.Sprintf("Paragraph %d with [a link][r%d] and [another](https://example.com/%d) and *emphasis*.\n\n[r%d]: https://example.org/%d\n\n", i, i, i, i, i)
		})
	}
	mdHeadings := func(n int) []byte {
		return rep(n, "", "", func(i int) string {
			return fmt.Sprintf("# Chapter %d\n\nText of chapter %d.\n\n## Section %d\n\n- item\n- item\n\n", i, i, i)
		})
	}
	mdTable := func(n int) []byte {
		return rep(n, "| a | b | c |\n|---|---|---|\n", "", func(i int) string { return fmt.Sprintf("| %d | x%d | [l](https://e.com/%d) |\n", i, i, i) })
	}
	htmlMany := func(n int) []byte {
		return rep(n, "<html><body>", "</body></html>", func(i int) string {
			return fmt.Sprintf(`<h2 id="h%d">Head %d</h2><p>Text <a href="#h%d">self</a> <a href="https://e.com/%d">web</a> <b>bold</b></p><ul><li>x</li></ul>`, i, i, i, i)
		})
	}
	htmlTable := func(n int) []byte {
		return rep(n, "<table><tr><th>a</th><th>b</th></tr>", "</table>", func(i int) string { return fmt.Sprintf("<tr><td>%d</td><td>x</td></tr>", i) })
	}
	docx := func(n int) []byte {
		var body, rels strings.Builder
		for i := range n {
			fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://e.com/%d" TargetMode="External"/>`, i+10, i)
			fmt.Fprintf(&body, `<w:p><w:r><w:rPr><w:b/></w:rPr><w:t>Para %d </w:t></w:r><w:hyperlink r:id="rId%d"><w:r><w:t>link</w:t></w:r></w:hyperlink></w:p>`, i, i+10)
		}
		return docGenZip(t, map[string]string{
			"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
			"_rels/.rels":         `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
			"word/document.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>` +
				body.String() + `</w:body></w:document>`,
			"word/_rels/document.xml.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`,
		})
	}
	svg := func(n int) []byte {
		return rep(n, `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">`, "</svg>", func(i int) string {
			return fmt.Sprintf(`<rect id="r%d" x="%d" y="%d" width="2" height="2" fill="#%06x"/>`, i, i%60, (i/60)%60, i*37%0xffffff)
		})
	}
	cases := []struct {
		name, from, to string
		n              int
		gen            func(n int) []byte
	}{
		{"markdown links to html", fmtMarkdown, fmtHTML, 2_000, mdLinks},
		{"markdown links to txt", fmtMarkdown, fmtTXT, 2_000, mdLinks},
		{"markdown headings to epub", fmtMarkdown, fmtEPUB, 300, mdHeadings},
		{"markdown table to txt", fmtMarkdown, fmtTXT, 5_000, mdTable},
		{"markdown to pdf", fmtMarkdown, fmtPDF, 200, mdLinks},
		{"html to markdown", fmtHTML, fmtMarkdown, 2_000, htmlMany},
		{"html table to markdown", fmtHTML, fmtMarkdown, 2_000, htmlTable},
		{"html to epub", fmtHTML, fmtEPUB, 300, htmlMany},
		{"docx to html", fmtDOCX, fmtHTML, 2_000, docx},
		{"docx to txt", fmtDOCX, fmtTXT, 2_000, docx},
		{"svg shapes to png", fmtSVG, "png", 1_000, svg},
	}
	c := docCatalog()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			convtest.Scaling(t, cputime.Self, tc.n, tc.gen, func(t *testing.T, in []byte) error {
				_, err := docConvertData(t, c, tc.from, tc.to, in, convert.Options{})
				return err
			})
		})
	}
}
