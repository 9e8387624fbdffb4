package document

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestDocx_PandocCode: a DOCX pandoc made keeps its code: inline code (character style
// VerbatimChar) as backticks, code blocks (paragraph style SourceCode, their highlighted
// tokens in styles based on VerbatimChar, lines split by <w:br/>) as fenced blocks whose
// lines, indentation and Markdown-looking characters are kept as they are, without the
// tokens' bold or italics. testdata/code-pandoc.docx was made from testdata/code-pandoc.md by
// `pandoc -o code-pandoc.docx code-pandoc.md` (pandoc 2.17.1.1, Debian 12).
func TestDocx_PandocCode(t *testing.T) {
	c := docCatalog()
	in := filepath.Join("testdata", "code-pandoc.docx")
	md := string(docMustConvert(t, c, fmtDOCX, fmtMarkdown, in, convert.Options{}))
	for _, want := range []string{
		"# Code sample\n",
		"Call `parse(x *Node)` and then `render()` to draw.\n",
		"```\nfunc main() {\n    fmt.Println(\"a < b && *c*\")\n}\n```\n",
		"A plain block:\n",
		"```\n$ convsvc serve --listen :8080\n  indented # not a heading\n```\n",
		"Text after `x_y` and **bold**.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	h := string(docMustConvert(t, c, fmtDOCX, fmtHTML, in, convert.Options{}))
	for _, want := range []string{
		"<code>parse(x *Node)</code>",
		"<pre><code>func main() {\n    fmt.Println(&#34;a &lt; b &amp;&amp; *c*&#34;)\n}</code></pre>",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
}

// TestDocx_WordCode: code as Word users write it: each line a paragraph in a monospace font
// (direct formatting), consecutive ones making one block, and inline code in a character
// style (Word's "HTML Code") or a monospace run.
func TestDocx_WordCode(t *testing.T) {
	styles := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">` +
		`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>` +
		`<w:style w:type="character" w:styleId="HTMLCode"><w:name w:val="HTML Code"/><w:rPr><w:rFonts w:ascii="Courier New" w:hAnsi="Courier New"/></w:rPr></w:style>` +
		`<w:style w:type="paragraph" w:styleId="PlainCode"><w:name w:val="Listing"/><w:basedOn w:val="Normal"/><w:rPr><w:rFonts w:ascii="Courier New" w:hAnsi="Courier New"/></w:rPr></w:style>` +
		`</w:styles>`
	mono := func(text string) string {
		return `<w:p><w:r><w:rPr><w:rFonts w:ascii="Consolas" w:hAnsi="Consolas"/></w:rPr><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
	}
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
		`<w:p><w:r><w:t>Run:</w:t></w:r></w:p>` +
		mono("go test ./...") + mono("  -run TestX_*") +
		`<w:p><w:r><w:t xml:space="preserve">Inline </w:t></w:r><w:r><w:rPr><w:rStyle w:val="HTMLCode"/></w:rPr><w:t>x := 1</w:t></w:r>` +
		`<w:r><w:t xml:space="preserve"> and </w:t></w:r><w:r><w:rPr><w:rFonts w:ascii="Courier New"/></w:rPr><w:t>y_z</w:t></w:r><w:r><w:t xml:space="preserve"> here.</w:t></w:r></w:p>` +
		`<w:p><w:pPr><w:pStyle w:val="PlainCode"/></w:pPr><w:r><w:t>SELECT 1;</w:t></w:r></w:p>` +
		`</w:body></w:document>`
	in := docMinimalDOCX(t, map[string]string{"word/document.xml": doc, "word/styles.xml": styles})
	out, err := docConvertData(t, docCatalog(), fmtDOCX, fmtMarkdown, in, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out)
	for _, want := range []string{
		"Run:\n\n```\ngo test ./...\n  -run TestX_*\n```\n",
		"Inline `x := 1` and `y_z` here.\n",
		"```\nSELECT 1;\n```",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestDocx_CodeText: in plain text a DOCX's code block is indented by four spaces, as a
// Markdown code block is, its lines together and as they are.
func TestDocx_CodeText(t *testing.T) {
	txt := string(docMustConvert(t, docCatalog(), fmtDOCX, fmtTXT, filepath.Join("testdata", "code-pandoc.docx"), convert.Options{}))
	for _, want := range []string{
		"A plain block:\n\n    $ convsvc serve --listen :8080\n      indented # not a heading\n\nText after x_y and bold.",
		"    func main() {\n        fmt.Println(\"a < b && *c*\")\n    }\n",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
}

// docMinimalDOCX zips the smallest package a DOCX reader opens around parts (word/document.xml
// and any others): the content types and the package relationship to the main part.
func docMinimalDOCX(t *testing.T, parts map[string]string) []byte {
	t.Helper()
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
	}
	for name, data := range parts {
		files[name] = data
	}
	return docGenZip(t, files)
}
