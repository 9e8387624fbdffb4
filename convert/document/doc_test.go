package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/cputime"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

var updateDocGolden = flag.Bool("update-doc-golden", false, "rewrite testdata/documents/golden from the current converters")

// docPath is a file under testdata/documents.
func docPath(name string) string { return filepath.Join("..", "..", "testdata", "documents", name) }

// docConvertFile runs one conversion of a file through the catalog.
func docConvertFile(t testing.TB, c *convert.Catalog, from, to, path string, opts convert.Options) ([]byte, error) {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	_, err = c.Convert(context.Background(), from, to, opts, in, &out, t.TempDir())
	return out.Bytes(), err
}

// convertBytes runs one conversion of data through the catalog.
func docConvertData(t testing.TB, c *convert.Catalog, from, to string, data []byte, opts convert.Options) ([]byte, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return docConvertFile(t, c, from, to, path, opts)
}

func docMustConvert(t testing.TB, c *convert.Catalog, from, to, path string, opts convert.Options) []byte {
	t.Helper()
	out, err := docConvertFile(t, c, from, to, path, opts)
	if err != nil {
		t.Fatalf("%s to %s: %v", from, to, err)
	}
	return out
}

// TestDocument_Golden compares the deterministic conversions with their golden files; run
// with -update-doc-golden to rewrite them after a deliberate change.
func TestDocument_Golden(t *testing.T) {
	c := docCatalog()
	cases := []struct{ sample, from, to, golden string }{
		{"sample.md", fmtMarkdown, fmtHTML, "sample.md.html"},
		{"sample.md", fmtMarkdown, fmtTXT, "sample.md.txt"},
		{"sample.html", fmtHTML, fmtMarkdown, "sample.html.md"},
		{"sample.html", fmtHTML, fmtTXT, "sample.html.txt"},
		{"sample.txt", fmtTXT, fmtHTML, "sample.txt.html"},
		{"sample.docx", fmtDOCX, fmtMarkdown, "sample.docx.md"},
		{"sample.docx", fmtDOCX, fmtHTML, "sample.docx.html"},
		{"sample.docx", fmtDOCX, fmtTXT, "sample.docx.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			got := docMustConvert(t, c, tc.from, tc.to, docPath(tc.sample), convert.Options{})
			path := docPath(filepath.Join("golden", tc.golden))
			if *updateDocGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-doc-golden to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update-doc-golden after a deliberate change):\n%s", path, got)
			}
		})
	}
}

// docWantError fails unless err is an *Error whose message contains want.
func docWantError(t *testing.T, err error, want string) {
	t.Helper()
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if !strings.Contains(ce.Message, want) {
		t.Fatalf("message %q does not contain %q", ce.Message, want)
	}
}

// TestDocument_WrongInput feeds every document input something else and checks the message
// says what it looks like.
func TestDocument_WrongInput(t *testing.T) {
	c := docCatalog()
	png := docPNGHeader()
	pdf, err := os.ReadFile(docPath("sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	htmlPage := []byte("<!DOCTYPE html><html><body><p>hi</p></body></html>")
	cases := []struct {
		from, to string
		data     []byte
		want     string
	}{
		{fmtPDF, fmtTXT, png, "input is not a valid PDF file (it looks like PNG)"},
		{fmtPDF, "png", htmlPage, "input is not a valid PDF file (it looks like HTML)"},
		{fmtPDF, fmtTXT, []byte("just some words"), "input is not a valid PDF file (it looks like text)"},
		{fmtPDF, fmtTXT, []byte("%PDF-1.7\nthis is not a PDF at all"), "input is not a valid PDF file"},
		{fmtMarkdown, fmtHTML, png, "input is not a valid Markdown file (it looks like PNG)"},
		{fmtMarkdown, fmtHTML, pdf, "input is not a valid Markdown file (it looks like PDF)"},
		{fmtTXT, fmtHTML, []byte("text\x00with a NUL"), "NUL byte at offset 4"},
		{fmtHTML, fmtMarkdown, png, "input is not a valid HTML file (it looks like PNG)"},
		{fmtDOCX, fmtTXT, pdf, "input is not a valid DOCX file (it looks like PDF)"},
		{fmtDOCX, fmtTXT, []byte("plain words"), "input is not a valid DOCX file (it looks like text)"},
		{fmtDOCX, fmtTXT, docGenZip(t, map[string]string{"xl/workbook.xml": "<workbook/>"}), "it looks like an Excel workbook"},
		{fmtDOCX, fmtTXT, docGenZip(t, map[string]string{"a.txt": "a"}), "it is a ZIP archive without word/document.xml"},
		{fmtDOCX, fmtTXT, []byte("PK\x03\x04 truncated"), "input is not a valid DOCX file (its ZIP structure is broken"},
		{fmtSVG, "png", png, "input is not a valid SVG file (it looks like PNG)"},
		{fmtSVG, "png", htmlPage, "input is not a valid SVG file (its root element is <html>, not <svg>)"},
		{fmtSVG, "png", []byte("<svg><rect></svg>"), "input is not a valid SVG file"},
		{"png", fmtPDF, pdf, "input is not a valid PNG file (it looks like PDF)"},
		{"jpeg", fmtPDF, png, "input is not a valid JPEG file (it looks like PNG)"},
	}
	for _, tc := range cases {
		t.Run(tc.from+"<-"+tc.want, func(t *testing.T) {
			steps, err := c.Path(tc.from, tc.to)
			if err != nil || len(steps) != 1 {
				t.Fatalf("path %s to %s: %v, %v", tc.from, tc.to, steps, err)
			}
			_, err = docConvertData(t, c, tc.from, tc.to, tc.data, convert.Options{})
			docWantError(t, err, tc.want)
		})
	}
}

// TestDocument_Encodings reads text that is not UTF-8 the way such files usually are.
func TestDocument_Encodings(t *testing.T) {
	c := docCatalog()
	cases := []struct {
		name, from string
		data       []byte
	}{
		{"utf-8 bom", fmtTXT, []byte("\xef\xbb\xbfGrüße")},
		{"utf-16le bom", fmtTXT, []byte("\xff\xfeG\x00r\x00\xfc\x00\xdf\x00e\x00")},
		{"utf-16be bom", fmtMarkdown, []byte("\xfe\xff\x00G\x00r\x00\xfc\x00\xdf\x00e")},
		{"windows-1252", fmtTXT, []byte("Gr\xfc\xdfe")},
		{"html meta charset", fmtHTML, []byte("<html><head><meta charset=\"iso-8859-7\"></head><body><p>Gr\xfc\xdfe \xe1\xe2\xe3</p></body></html>")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := fmtHTML
			if tc.from == fmtHTML {
				to = fmtMarkdown
			}
			out, err := docConvertData(t, c, tc.from, to, tc.data, convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := "Grüße"
			if tc.from == fmtHTML {
				want = "Grόίe αβγ" // ISO-8859-7 reads those bytes as Greek
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestMarkdownGuard checks each bound on what goldmark is given, and that ordinary documents
// pass it.
func TestMarkdownGuard(t *testing.T) {
	ok := [][]byte{
		[]byte("# Title\n\nSome *emphasis* and **strong** text with [a link](https://x) and `code`.\n"),
		[]byte(strings.Repeat("- [x] item with a [link](https://example.com) and *emphasis*\n", 5000)),
		[]byte("```\n" + strings.Repeat(">", 1000) + strings.Repeat("*_[", 2000) + "\n```\n"),
		[]byte(strings.Repeat(strings.Repeat("  ", 10)+"- nested ten deep\n", 100)),
		[]byte(strings.Repeat("A paragraph with [nested [brackets] here](u) and *more*.\n", 50)),
		[]byte("| a | b |\n|---|---|\n" + strings.Repeat("| x | y |\n", 10000)),
		[]byte(strings.Repeat("Paragraph with \\* escaped \\_ marks \\[ \\] and [link](u).\n\n", 10000)),
		[]byte("---\n***\n- - -\n1) one\n2) two\n"),
	}
	for i, src := range ok {
		if err := mdGuard(src); err != nil {
			t.Errorf("ordinary document %d refused: %v", i, err)
		}
	}
	bad := []struct {
		src  []byte
		want string
	}{
		{[]byte(strings.Repeat(">", 100) + " quote"), "more than 16 levels deep (line 1)"},
		{[]byte("text\n" + strings.Repeat("- ", 40) + "x"), "more than 16 levels deep (line 2)"},
		{[]byte(strings.Repeat(" ", 300) + "- deep"), "columns, over the 128 column limit"},
		{[]byte(strings.Repeat("*a_ ", 400)), "more than 500 emphasis, link and code markers"},
		{[]byte(strings.Repeat("[a](b ", 300)), "more than 500"},
		{[]byte(strings.Repeat("[", 20) + "a"), "nests brackets more than 16 deep"},
		{[]byte("|" + strings.Repeat("a|", 300) + "\n|" + strings.Repeat("-|", 300) + "\n"), "table of 300 columns"},
		{[]byte("|" + strings.Repeat("a|", 200) + "\n|" + strings.Repeat("-|", 200) + "\n" + strings.Repeat("|a\n", 6000)), "more than 1048576 cells"},
	}
	for _, tc := range bad {
		err := mdGuard(tc.src)
		if err == nil {
			t.Errorf("%.40q... accepted", tc.src)
			continue
		}
		docWantError(t, err, tc.want)
	}
}

// TestMarkdownGuard_WorstCaseTime runs goldmark's slowest known constructs at the largest sizes
// the guard lets through: each must parse in seconds, not minutes.
func TestMarkdownGuard_WorstCaseTime(t *testing.T) {
	if testing.Short() || convtest.RaceEnabled {
		t.Skip("slow: parses 30 MB of pathological Markdown")
	}
	const size = MaxMarkdownBytes
	unit := func(s string, perBlock int) []byte {
		block := strings.Repeat(s, perBlock) + "\n\n"
		return []byte(strings.Repeat(block, size/len(block)))
	}
	cases := map[string][]byte{
		"mismatched emphasis": unit("*a_ ", mdMaxInlineMarks/2-1),
		"unclosed links":      unit("[a](b ", mdMaxInlineMarks/2-1),
		"nested brackets":     unit(strings.Repeat("[", mdMaxBrackets)+"a"+strings.Repeat("]", mdMaxBrackets)+" ", mdMaxInlineMarks/(2*mdMaxBrackets)),
		"nested quotes":       unit(strings.Repeat(">", mdMaxNesting)+" a\n", 1),
		"nested lists":        unit(strings.Repeat("- ", mdMaxNesting)+"a\n", 1),
		"indented lists":      unit(strings.Repeat("  ", mdMaxNesting-1)+"- a\n", 1),
		"wide table":          []byte("|" + strings.Repeat("a|", mdMaxTableColumns) + "\n|" + strings.Repeat("-|", mdMaxTableColumns) + "\n" + strings.Repeat("|a\n", mdMaxTableCells/mdMaxTableColumns-2)),
	}
	limit := 15 * time.Second // of CPU, not wall time (issue 24): about 3 s each
	for name, src := range cases {
		start := cputime.Self()
		if err := mdGuard(src); err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		doc := markdownEngine().Parser().Parse(docTextReader(src))
		_ = doc
		if d := cputime.Self() - start; d > limit {
			t.Errorf("%s: %d bytes took %v of CPU to parse", name, len(src), d)
		} else {
			t.Logf("%s: %d KB in %v", name, len(src)>>10, d)
		}
	}
}

// TestDocx_Structure checks what the DOCX reader keeps, drops and refuses to link.
func TestDocx_Structure(t *testing.T) {
	out := docMustConvert(t, docCatalog(), fmtDOCX, fmtHTML, docPath("sample.docx"), convert.Options{})
	s := string(out)
	for _, want := range []string{
		"<title>Project Plan 2026</title>",
		"<h1>Project Plan</h1>",
		"<h2>Milestones</h2>", // localised style id, named "heading 2"
		"<h2>Budget</h2>",     // a style based on it
		"<strong>Zürich</strong>", "<em>Αθήνα</em>", "<u>Москва</u>", "<s>spreadsheet</s>",
		`<a href="https://example.com/wiki">the wiki</a>`,
		"<ul>\n<li>Design review<ul>\n<li>Architecture</li>\n<li>Security</li></ul>\n</li>\n<li>Launch in <strong><em>March</em></strong></li></ul>",
		"<ol>\n<li>Collect requirements</li>\n<li>Write the code</li></ol>",
		"<th><strong>Item</strong></th>", `<td colspan="2">Total</td>`,
		"Line one<br>\nLine two after a tab",
		"Kept words, page 1.",
		"Chosen",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"deleted words", "PAGE", "Fallback", "file:", "etc/passwd"} {
		if strings.Contains(s, bad) {
			t.Errorf("HTML has %q", bad)
		}
	}
}

// TestEPUB_Structure checks chapters, navigation and packaged images.
func TestEPUB_Structure(t *testing.T) {
	c := docCatalog()
	md := "# One\n\nFirst chapter ![dot](" + docDataURIPNG(t) + ") and ![remote](https://example.com/x.png).\n\n# Two\n\nSecond <script>alert(1)</script> chapter.\n"
	out, err := docConvertData(t, c, fmtMarkdown, fmtEPUB, []byte(md), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := docZipEntries(t, out)
	for _, name := range []string{"mimetype", "OEBPS/chapter-001.xhtml", "OEBPS/chapter-002.xhtml", "OEBPS/images/img-001.png", "OEBPS/nav.xhtml"} {
		if _, ok := files[name]; !ok {
			t.Errorf("no %s in %v", name, docKeys(files))
		}
	}
	if !strings.Contains(files["OEBPS/nav.xhtml"], `<a href="chapter-002.xhtml">Two</a>`) {
		t.Errorf("nav:\n%s", files["OEBPS/nav.xhtml"])
	}
	if !strings.Contains(files["OEBPS/chapter-001.xhtml"], `<img src="images/img-001.png" alt="dot"/>`) {
		t.Errorf("chapter 1:\n%s", files["OEBPS/chapter-001.xhtml"])
	}
	if strings.Contains(files["OEBPS/chapter-001.xhtml"], "example.com/x.png") || strings.Contains(files["OEBPS/chapter-002.xhtml"], "script") {
		t.Errorf("remote image or script kept")
	}
	if !strings.Contains(files["OEBPS/content.opf"], `href="images/img-001.png" media-type="image/png"`) {
		t.Errorf("image not in the manifest:\n%s", files["OEBPS/content.opf"])
	}
}

func docKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestDocument_Cancelled checks every document converter gives up on a cancelled context.
func TestDocument_Cancelled(t *testing.T) {
	c := docCatalog()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range [][3]string{
		{fmtMarkdown, fmtPDF, "sample.md"}, {fmtMarkdown, fmtEPUB, "sample.md"}, {fmtHTML, fmtPDF, "sample.html"},
		{fmtTXT, fmtPDF, "sample.txt"}, {fmtDOCX, fmtTXT, "sample.docx"}, {fmtSVG, "png", "sample.svg"}, {fmtPDF, "png", "sample.pdf"},
	} {
		in, err := os.Open(docPath(tc[2]))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Convert(ctx, tc[0], tc[1], convert.Options{}, in, io.Discard, t.TempDir())
		in.Close()
		docWantError(t, err, "conversion cancelled")
	}
}

// TestPDFLayout_Stress lays out what strains a layout: a long document over many pages,
// a word wider than the page, a table of many columns and long cells, code with very long
// lines, lists nested to the limit, and characters the font lacks.
func TestPDFLayout_Stress(t *testing.T) {
	if raceShort() {
		t.Skip("-race -short: one goroutine laying out 20+ pages; the plain step runs it")
	}
	c := docCatalog()
	var md strings.Builder
	md.WriteString("# Stress\n\n")
	for i := range 400 {
		md.WriteString("Paragraph number " + strings.Repeat("lorem ipsum dolor ", 20) + "end" + string(rune('A'+i%26)) + ".\n\n")
	}
	md.WriteString(strings.Repeat("x", 5000) + "\n\n")
	md.WriteString("|" + strings.Repeat(" column |", 30) + "\n|" + strings.Repeat("---|", 30) + "\n")
	for range 50 {
		md.WriteString("|" + strings.Repeat(" a long cell with several words |", 30) + "\n")
	}
	md.WriteString("\n```\n" + strings.Repeat("code_without_spaces_", 200) + "\n```\n\n")
	for d := range 32 {
		md.WriteString(strings.Repeat("  ", d) + "- level\n")
	}
	md.WriteString("\n東京 😀 \u0007 \U00010000 last words\n")
	out, err := docConvertData(t, c, fmtMarkdown, fmtPDF, []byte(md.String()), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := docReadPDF(t, out)
	if sum.pages < 20 {
		t.Errorf("%d pages", sum.pages)
	}
	all := strings.Join(sum.text, "")
	t.Logf("last page: %q", sum.text[len(sum.text)-1])
	for _, w := range []string{"endZ.", "last words", "東京"} {
		if !strings.Contains(all, w) {
			t.Errorf("text lacks %q", w)
		}
	}
}

// TestDocument_Hostile runs every hostile doc-* file through the conversions it targets:
// each must fail with the expected message, or be neutralised, in bounded time and memory.
func TestDocument_Hostile(t *testing.T) {
	c := docCatalog()
	cases := []struct {
		file, from, to string
		want           string // "" when the file is neutralised and converts
	}{
		{"doc-billion-laughs.svg", fmtSVG, "png", "the SVG declares XML entities in a DTD, which are not allowed"},
		{"doc-external-refs.svg", fmtSVG, "png", ""},
		{"doc-use-bomb.svg", fmtSVG, "png", ""},
		{"doc-dash-bomb.svg", fmtSVG, "png", ""},
		{"doc-external-refs.html", fmtHTML, fmtPDF, ""},
		{"doc-external-refs.html", fmtHTML, fmtEPUB, ""},
		{"doc-deep-nesting.html", fmtHTML, fmtMarkdown, "open stack of elements exceeds 512 nodes"},
		{"doc-nested-lists.md", fmtMarkdown, fmtHTML, "the Markdown input is 5.0 MiB, over the 4.0 MiB limit"},
		{"doc-nested-lists-4m.md", fmtMarkdown, fmtHTML, "nests lists or quotes more than 16 levels deep"},
		{"doc-nested-lists-4m.md", fmtMarkdown, fmtPDF, "nests lists or quotes more than 16 levels deep"},
		{"doc-emphasis.md", fmtMarkdown, fmtPDF, "emphasis, link and code markers"},
		{"doc-binary.md", fmtMarkdown, fmtHTML, "it looks like PNG"},
		{"doc-huge-page-count.pdf", fmtPDF, fmtTXT, ""}, // PDFium counts the one page there is
		{"doc-huge-page-count.pdf", fmtPDF, "png", ""},
		{"doc-huge-page.pdf", fmtPDF, "png", "would be 30000x30000 pixels, over the 100 megapixel limit"},
		{"doc-truncated.pdf", fmtPDF, fmtTXT, "input is not a valid PDF file (PDFium could not open it)"},
		{"doc-password.pdf", fmtPDF, fmtTXT, "the PDF is protected by a password"},
		{"doc-wrong-magic.pdf", fmtPDF, "png", "input is not a valid PDF file (it looks like PNG)"},
		{"doc-zip-bomb.docx", fmtDOCX, fmtTXT, "the DOCX part word/document.xml expands to more than 32.0 MiB"},
		{"doc-zip-bomb-lying.docx", fmtDOCX, fmtTXT, "the part word/document.xml does not match its ZIP header"},
		{"doc-not-docx.docx", fmtDOCX, fmtHTML, "it looks like an Excel workbook"},
	}
	for _, tc := range cases {
		t.Run(tc.file+"->"+tc.to, func(t *testing.T) {
			var peak uint64
			stop := docSampleHeap(&peak)
			start, startCPU := time.Now(), cputime.Self()
			out, err := docConvertFile(t, c, tc.from, tc.to, filepath.Join("..", "..", "testdata", "hostile", tc.file), convert.Options{})
			elapsed, cpu := time.Since(start), cputime.Self()-startCPU
			stop()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want a neutralised conversion, got %v", err)
				}
				if len(out) == 0 {
					t.Fatal("empty output")
				}
			} else {
				docWantError(t, err, tc.want)
			}
			// CPU, not wall time: the machine may be busy (issue 24). PDFium may render on
			// every core, so the 10 s bound is per core.
			if limit := 10 * time.Second * convtest.RaceSlowdown * time.Duration(runtime.GOMAXPROCS(0)); cpu > limit {
				t.Errorf("took %v of CPU", cpu)
			}
			if peak > 1<<30 {
				t.Errorf("heap peaked at %d MB", peak>>20)
			}
			t.Logf("%v (%v of CPU), heap peak %d MB", elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), peak>>20)
		})
	}
}

// docSampleHeap records the largest heap in use until the returned function is called.
func docSampleHeap(peak *uint64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestHTML_Cleaned checks that HTML outputs keep no reference the input made to other resources.
func TestHTML_Cleaned(t *testing.T) {
	c := docCatalog()
	src := []byte(docExternalRefsHTML("http://127.0.0.1:9/x", "/etc/passwd"))
	for _, to := range []string{fmtMarkdown, fmtTXT} {
		out, err := docConvertData(t, c, fmtHTML, to, src, convert.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		bad := []string{"style.css", "script.js", "passwd", "frame", "object.swf", "video.mp4", "svg-image"}
		if to == fmtMarkdown {
			// Web images stay references for the Markdown's reader; local files go.
			if !strings.Contains(s, "![web image](http://127.0.0.1:9/x/image.png)") {
				t.Errorf("markdown lost the web image reference:\n%s", s)
			}
		} else {
			bad = append(bad, "image.png", "relative.png")
		}
		for _, bad := range bad {
			if strings.Contains(s, bad) {
				t.Errorf("%s output keeps %q:\n%s", to, bad, s)
			}
		}
		for _, want := range []string{"References", "web image", "local file", "a link is only text"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s output lacks %q:\n%s", to, want, s)
			}
		}
	}
}

// docHTMLBody returns the body element of an HTML page.
func docHTMLBody(t *testing.T, data []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := findElement(doc, atom.Body)
	if b == nil {
		t.Fatal("no body")
	}
	return b
}

// TestText_ToHTML checks paragraphs, line breaks and escaping.
func TestText_ToHTML(t *testing.T) {
	out, err := docConvertData(t, docCatalog(), fmtTXT, fmtHTML, []byte("First <line>\r\nsecond & line\r\n\r\n\r\nNext\fPage"), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "<p>First &lt;line&gt;<br>\nsecond &amp; line</p>\n<p>Next</p>\n<p>Page</p>\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("got\n%s\nwant it to contain\n%s", out, want)
	}
	if b := docHTMLBody(t, out); b.FirstChild == nil {
		t.Errorf("empty body")
	}
}

// docDataURIPNG is a small PNG as a data: URI.
func docDataURIPNG(t testing.TB) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 8, 6))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// docZipEntries reads every entry of a zip archive.
func docZipEntries(t testing.TB, data []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = string(b)
	}
	return files
}

// docTextReader wraps Markdown source for goldmark's parser.
func docTextReader(src []byte) text.Reader { return text.NewReader(src) }

// docCatalog is the catalog the document tests share (and with it PDFium's compiled module).
var docCatalog = sync.OnceValue(func() *convert.Catalog { return testCatalog(convert.Limits{}) })
