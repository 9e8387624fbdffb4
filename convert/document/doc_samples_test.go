package document

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font/gofont/goregular"

	"github.com/convsvc/convsvc/internal/testing/testpdf"
)

// TestGenerateDocumentSamples rewrites the generated document samples (sample.pdf,
// sample.docx), the hostile doc-* files and the document fuzz seeds. It runs only with
// CONVSVC_GEN_SAMPLES=1; the files are committed, this records how they were made. The
// hand-written samples (sample.md, .html, .txt, .svg) are not touched.
func TestGenerateDocumentSamples(t *testing.T) {
	if os.Getenv("CONVSVC_GEN_SAMPLES") == "" {
		t.Skip("set CONVSVC_GEN_SAMPLES=1 to regenerate the document samples")
	}
	docs := filepath.Join("..", "..", "testdata", "documents")
	hostile := filepath.Join("..", "..", "testdata", "hostile")
	write := func(dir, name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	samplePDF := docGenSamplePDF(t)
	write(docs, "sample.pdf", samplePDF)
	sampleDOCX := docGenDOCX(t, docSampleDocumentXML, true)
	write(docs, "sample.docx", sampleDOCX)

	write(hostile, "doc-billion-laughs.svg", []byte(docBillionLaughsSVG))
	write(hostile, "doc-external-refs.svg", []byte(docExternalRefsSVG("http://127.0.0.1:9/x")))
	write(hostile, "doc-use-bomb.svg", []byte(docUseBombSVG))
	write(hostile, "doc-dash-bomb.svg", []byte(docDashBombSVG))
	write(hostile, "doc-external-refs.html", []byte(docExternalRefsHTML("http://127.0.0.1:9/x", "/etc/passwd")))
	write(hostile, "doc-deep-nesting.html", []byte(strings.Repeat("<div>", 200_000)+"deep"))
	write(hostile, "doc-nested-lists.md", docNestedListsMarkdown(5<<20))
	write(hostile, "doc-nested-lists-4m.md", docNestedListsMarkdown(MaxMarkdownBytes-100))
	write(hostile, "doc-emphasis.md", []byte(strings.Repeat("*a_ ", (MaxMarkdownBytes-100)/4)))
	write(hostile, "doc-huge-page-count.pdf", testpdf.PDF(docHugePageCountObjects...))
	write(hostile, "doc-huge-page.pdf", testpdf.PDF(docHugePageObjects...))
	write(hostile, "doc-truncated.pdf", samplePDF[:len(samplePDF)/2])
	write(hostile, "doc-render-bomb.pdf", docRenderBombPDF(t))
	write(hostile, "doc-password.pdf", docGenPasswordPDF(t))
	write(hostile, "doc-wrong-magic.pdf", docPNGHeader())
	write(hostile, "doc-zip-bomb.docx", docDOCXBomb(t, false))
	write(hostile, "doc-zip-bomb-lying.docx", docDOCXBomb(t, true))
	write(hostile, "doc-not-docx.docx", docGenZip(t, map[string]string{"xl/workbook.xml": "<workbook/>"}))
	write(hostile, "doc-binary.md", docPNGHeader())

	// Fuzz seeds: the samples and the hostile structures, small. The SVG reader's targets are
	// in its own package.
	seed := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if target == "FuzzSVG" {
			dir = filepath.Join("internal", "svg", "testdata", "fuzz", target)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(dir, name, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)))
	}
	for _, name := range []string{"sample.svg"} {
		b, _ := os.ReadFile(filepath.Join(docs, name))
		seed("FuzzSVG", name, b)
	}
	seed("FuzzSVG", "billion-laughs", []byte(docBillionLaughsSVG))
	seed("FuzzSVG", "external-refs", []byte(docExternalRefsSVG("http://127.0.0.1:9/x")))
	seed("FuzzSVG", "use-bomb", []byte(docUseBombSVG))
	seed("FuzzSVG", "no-viewbox", []byte(`<svg width="10mm" height="1in"><circle cx="5" cy="5" r="4"/></svg>`))
	seed("FuzzDocx", "sample.docx", sampleDOCX)
	seed("FuzzDocx", "minimal.docx", docGenDOCX(t, `<w:document xmlns:w="`+nsW+`"><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>`, false))
	for _, name := range []string{"sample.md"} {
		b, _ := os.ReadFile(filepath.Join(docs, name))
		seed("FuzzMarkdown", name, b)
	}
	seed("FuzzMarkdown", "nested", []byte("- a\n  - b\n    > c\n    > > d\n\n| a | b |\n|---|:-:|\n| *x* | `y` |\n"))
	for _, name := range []string{"sample.html"} {
		b, _ := os.ReadFile(filepath.Join(docs, name))
		seed("FuzzHTML", name, b)
	}
	seed("FuzzHTML", "refs", []byte(docExternalRefsHTML("http://127.0.0.1:9/x", "/etc/passwd")))
}

// docGenSamplePDF writes a three-page PDF with UTF-8 text in an embedded font, a drawing and a
// page of another size.
func docGenSamplePDF(t *testing.T) []byte {
	f := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", SizeStr: "A5"})
	f.SetCreationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f.SetCatalogSort(true)
	f.SetCompression(true)
	f.AddUTF8FontFromBytes("go", "", goregular.TTF)
	f.SetTitle("convsvc sample PDF", true)
	pages := []string{
		"Page 1: convsvc sample document. Zürich, Αθήνα, Москва.",
		"Page 2: the quick brown fox jumps over the lazy dog.",
		"Page 3: last page, with a drawing.",
	}
	for i, text := range pages {
		if i == 2 {
			f.AddPageFormat("L", fpdf.SizeType{Wd: 300, Ht: 420})
			f.SetFillColor(0x2e, 0x7d, 0x32)
			f.Rect(40, 120, 120, 80, "F")
			f.SetDrawColor(0xc6, 0x28, 0x28)
			f.SetLineWidth(4)
			f.Circle(260, 160, 50, "D")
		} else {
			f.AddPage()
		}
		f.SetFont("go", "", 14)
		f.Text(40, 60, text)
	}
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func docGenPasswordPDF(t *testing.T) []byte {
	f := fpdf.New("P", "pt", "A6", "")
	f.SetCreationDate(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f.SetProtection(fpdf.CnProtectPrint, "secret", "owner")
	f.AddPage()
	f.SetFont("Helvetica", "", 12)
	f.Text(20, 40, "secret text")
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// docHugePageCountObjects claim two billion pages in a tree that holds one.
var docHugePageCountObjects = []string{
	"<< /Type /Catalog /Pages 2 0 R >>",
	"<< /Type /Pages /Kids [3 0 R] /Count 2000000000 >>",
	"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
	testpdf.Stream("0 0 1 rg 10 10 50 50 re f"),
}

// docHugePageObjects has a page of 200 x 200 inches: 900 megapixels at 150 dpi.
var docHugePageObjects = []string{
	"<< /Type /Catalog /Pages 2 0 R >>",
	"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
	"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 14400 14400] /Contents 4 0 R >>",
	testpdf.Stream("0 0 1 rg 10 10 50 50 re f"),
}

// docRenderBombPDF is a tiny PDF whose page draws a form that draws a form ... four levels of
// 100 calls each: 10^8 filled rectangles, minutes of rendering from a few hundred bytes.
func docRenderBombPDF(t *testing.T) []byte {
	var leaf strings.Builder
	for i := range 100 {
		fmt.Fprintf(&leaf, "%d %d 1 1 re f\n", i%10, i/10)
	}
	call := func(name string) string {
		return strings.TrimSpace(strings.Repeat("/"+name+" Do\n", 100))
	}
	form := func(content, res string) string {
		return fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 200 200] %s /Length %d >>\nstream\n%s\nendstream", res, len(content), content)
	}
	return testpdf.PDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /XObject << /D 7 0 R >> >> /Contents 4 0 R >>",
		testpdf.Stream(call("D")),
		form(leaf.String(), ""),
		form(call("A"), "/Resources << /XObject << /A 5 0 R >> >>"),
		form(call("B"), "/Resources << /XObject << /B 6 0 R >> >>"),
	)
}

func docPNGHeader() []byte {
	return []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00\x90\x91h6")
}

const docBillionLaughsSVG = `<?xml version="1.0"?>
<!DOCTYPE svg [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
 <!ENTITY ext SYSTEM "file:///etc/passwd">
]>
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><text>&lol9;&ext;</text></svg>
`

// docExternalRefsSVG refers to base (an URL) every way SVG can: images, use, CSS url() and
// @import, a script, a foreign object and an external DTD.
func docExternalRefsSVG(base string) string {
	return `<?xml version="1.0"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "` + base + `/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64" viewBox="0 0 64 64">
  <style>@import url(` + base + `/style.css); rect { fill: url(` + base + `/paint.svg#p); }</style>
  <image href="` + base + `/image.png" width="64" height="64"/>
  <image xlink:href="file:///etc/passwd" width="64" height="64"/>
  <use xlink:href="` + base + `/other.svg#shape"/>
  <use href="file:///etc/hostname#x"/>
  <script xlink:href="` + base + `/script.js">fetch("` + base + `/from-script")</script>
  <foreignObject width="10" height="10"><iframe xmlns="http://www.w3.org/1999/xhtml" src="` + base + `/frame"/></foreignObject>
  <rect x="4" y="4" width="56" height="56" fill="#3366cc" style="stroke: url(` + base + `/stroke)" filter="url(` + base + `/f.svg#blur)"/>
  <a xlink:href="` + base + `/link"><circle cx="32" cy="32" r="10" fill="#ffcc00"/></a>
</svg>
`
}

// docUseBombSVG nests <use> inside <defs> ten deep, ten times each: 10^10 paths if replayed,
// and a <use> of its own group.
const docUseBombSVG = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="50" height="50">
<defs>
<path id="a0" d="M0 0 L10 10"/>
<g id="a1"><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/><use xlink:href="#a0"/></g>
<g id="a2"><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/><use xlink:href="#a1"/></g>
<g id="a3"><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/><use xlink:href="#a2"/></g>
<g id="self"><use xlink:href="#self"/></g>
</defs>
<use xlink:href="#a3"/><use xlink:href="#self"/>
<rect width="20" height="20" fill="red"/>
</svg>
`

// docDashBombSVG strokes a long path with a dash pattern of a millionth of a pixel.
const docDashBombSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">
<path d="M0 0 L100000 100000 L0 100000 Z" stroke="black" stroke-width="1" stroke-dasharray="0.000001 0.000001" fill="none"/>
<rect width="10" height="10" fill="blue"/>
</svg>
`

// docExternalRefsHTML refers to base (an URL) and a local file every way HTML can.
func docExternalRefsHTML(base, file string) string {
	return `<!DOCTYPE html>
<html><head>
<title>References</title>
<link rel="stylesheet" href="` + base + `/style.css">
<link rel="stylesheet" href="file://` + file + `">
<script src="` + base + `/script.js"></script>
<style>@import url(` + base + `/import.css); body { background: url(file://` + file + `); }</style>
<base href="` + base + `/">
</head><body>
<h1>References</h1>
<p>Text before <img src="` + base + `/image.png" alt="web image"> and <img src="file://` + file + `" alt="local file"> after.</p>
<img src="relative.png">
<iframe src="` + base + `/frame"></iframe>
<object data="` + base + `/object.swf"></object>
<video src="` + base + `/video.mp4"></video>
<svg><image href="` + base + `/svg-image.png"/></svg>
<p><a href="` + base + `/page">a link is only text</a></p>
</body></html>
`
}

// docNestedListsMarkdown is n bytes of lists nested one level deeper on every line.
func docNestedListsMarkdown(n int) []byte {
	var b bytes.Buffer
	for depth := 0; b.Len() < n; depth++ {
		b.WriteString(strings.Repeat("- ", depth%5000+1))
		b.WriteString("item\n")
	}
	return b.Bytes()
}

// docGenZip writes a zip with the given entries, in name order, with a fixed time.
func docGenZip(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	docSortStrings(names)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(files[n]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func docSortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// docGenDOCX packages a document.xml; with full set, the styles, numbering, hyperlink
// relationships and core properties of the sample too.
func docGenDOCX(t *testing.T, documentXML string, full bool) []byte {
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>`,
		"word/document.xml": documentXML,
	}
	if full {
		files["word/styles.xml"] = docSampleStylesXML
		files["word/numbering.xml"] = docSampleNumberingXML
		files["word/_rels/document.xml.rels"] = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/><Relationship Id="rId10" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/wiki" TargetMode="External"/><Relationship Id="rId11" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="file:///etc/passwd" TargetMode="External"/></Relationships>`
		files["docProps/core.xml"] = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Project Plan 2026</dc:title><dc:creator>convsvc</dc:creator></cp:coreProperties>`
	}
	return docGenZip(t, files)
}

// docDOCXBomb is a DOCX whose document.xml inflates to 256 MB; with lying, its header
// says 1000 bytes.
func docDOCXBomb(t *testing.T, lying bool) []byte {
	unit := []byte("<w:p><w:r><w:t>" + strings.Repeat("a", 1000) + "</w:t></w:r></w:p>")
	head := []byte(`<w:document xmlns:w="` + nsW + `"><w:body>`)
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestCompression)
	crc := crc32.NewIEEE()
	zw.Write(head)
	crc.Write(head)
	block := bytes.Repeat(unit, (1<<20)/len(unit))
	total := len(head)
	for total < 256<<20 {
		zw.Write(block)
		crc.Write(block)
		total += len(block)
	}
	zw.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, _ := w.Create("[Content_Types].xml")
	f.Write([]byte("<Types/>"))
	declared := uint64(total)
	if lying {
		declared = 1000
	}
	f, err := w.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc.Sum32(),
		CompressedSize64: uint64(z.Len()), UncompressedSize64: declared})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(z.Bytes())
	w.Close()
	return buf.Bytes()
}

const docSampleStylesXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="MyHeading"><w:name w:val="My Heading"/><w:basedOn w:val="berschrift2"/></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
<w:style w:type="character" w:styleId="Hyperlink"><w:name w:val="Hyperlink"/></w:style>
</w:styles>`

const docSampleNumberingXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
</w:numbering>`

// docSampleDocumentXML exercises what the DOCX reader keeps: a title, headings by built-in,
// localised and inherited styles, run formatting, hyperlinks (one to a local file, which must
// not become a link), bullets two levels deep, a numbered list, a table with a header row and
// a merged cell, breaks and tabs, tracked deletions, field codes and alternate content.
const docSampleDocumentXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">
<w:body>
<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Project Plan</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Teams in </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>Zürich</w:t></w:r><w:r><w:t xml:space="preserve">, </w:t></w:r><w:r><w:rPr><w:i/></w:rPr><w:t>Αθήνα</w:t></w:r><w:r><w:t xml:space="preserve"> and </w:t></w:r><w:r><w:rPr><w:u w:val="single"/></w:rPr><w:t>Москва</w:t></w:r><w:r><w:t xml:space="preserve"> share one </w:t></w:r><w:r><w:rPr><w:strike/></w:rPr><w:t>spreadsheet</w:t></w:r><w:r><w:t xml:space="preserve"> plan. Details are on </w:t></w:r><w:hyperlink r:id="rId10"><w:r><w:rPr><w:rStyle w:val="Hyperlink"/></w:rPr><w:t>the wiki</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve">, not in </w:t></w:r><w:hyperlink r:id="rId11"><w:r><w:t>a local file</w:t></w:r></w:hyperlink><w:r><w:t>.</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="berschrift2"/></w:pPr><w:r><w:t>Milestones</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="ListBullet"/></w:pPr><w:r><w:t>Design review</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Architecture</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Security</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="ListBullet"/></w:pPr><w:r><w:t>Launch in </w:t></w:r><w:r><w:rPr><w:b/><w:i/></w:rPr><w:t>March</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>Collect requirements</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr></w:pPr><w:r><w:t>Write the code</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="MyHeading"/></w:pPr><w:r><w:t>Budget</w:t></w:r></w:p>
<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/></w:tblPr><w:tblGrid><w:gridCol w:w="3000"/><w:gridCol w:w="3000"/><w:gridCol w:w="3000"/></w:tblGrid>
<w:tr><w:trPr><w:tblHeader/></w:trPr><w:tc><w:p><w:r><w:rPr><w:b/></w:rPr><w:t>Item</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:rPr><w:b/></w:rPr><w:t>Cost</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:rPr><w:b/></w:rPr><w:t>Owner</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>Servers</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>1200</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Νίκος</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>Licences</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>300</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Иван</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>Total</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>1500</w:t></w:r></w:p></w:tc></w:tr>
</w:tbl>
<w:p><w:r><w:t>Line one</w:t><w:br/><w:t>Line two</w:t><w:tab/><w:t>after a tab</w:t></w:r></w:p>
<w:p><w:del w:id="1" w:author="x"><w:r><w:delText>deleted words</w:delText></w:r></w:del><w:r><w:t xml:space="preserve">Kept words, page </w:t></w:r><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>1</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:t>.</w:t></w:r></w:p>
<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:t>Chosen</w:t></mc:Choice><mc:Fallback><w:t>Fallback</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>
<w:sectPr/>
</w:body>
</w:document>`
