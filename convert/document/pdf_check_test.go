package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	"github.com/convsvc/convsvc/convert/document/internal/svg"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// Output checkers of the document family. This file's name sorts after image_test.go and
// data_test.go on purpose: its init wraps the checkers they registered for raster targets
// and for markdown and html, handing them the sources they know (raster images, data files)
// and checking the others (documents, PDF, SVG) itself.

// docSampleWords are words each document sample's outputs must contain, whatever the path.
var docSampleWords = map[string][]string{
	"sample.md":   {"Quarterly Report", "Zürich", "Αθήνα", "Москва", "Revenue", "Finally publish"},
	"sample.html": {"Travel Guide", "Zürich", "Санкт-Петербург", "Kilometres"},
	"sample.txt":  {"Meeting Notes", "Νίκος", "Benchmarks"},
	"sample.docx": {"Project Plan", "Zürich", "Milestones", "Licences"},
	"sample.pdf":  {"convsvc sample document", "Zürich", "quick brown fox", "last page"},
}

// docWords returns the words expected in outputs of source, or nil for sources whose
// text is not known here (images, SVG, data files).
func docWords(source string) []string {
	if filepath.Base(filepath.Dir(source)) != "documents" {
		return nil
	}
	return docSampleWords[filepath.Base(source)]
}

// docCheckWords fails unless text holds every word (spaces and line ends compared loosely).
func docCheckWords(t *testing.T, text string, words []string) {
	t.Helper()
	flat := strings.Join(strings.Fields(text), " ")
	for _, w := range words {
		if !strings.Contains(flat, w) {
			t.Errorf("output lacks %q; it has:\n%.2000s", w, text)
		}
	}
}

// docSourceFormat is the format of a sample by its extension.
func docSourceFormat(source string) string { return convtest.FormatOfSample(docCatalog(), source) }

// docDelegateChecker returns a checker that hands sources theirs accepts to prev, if any, and
// checks the others with mine.
func docDelegateChecker(prev func(*testing.T, string, string), theirs func(string) bool, mine func(*testing.T, string, string)) func(*testing.T, string, string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		if prev != nil && theirs(source) {
			prev(t, source, output)
			return
		}
		mine(t, source, output)
	}
}

// docPDFSummary is what tests read back from a PDF.
type docPDFSummary struct {
	pages int
	sizes [][2]float64 // points
	text  []string
}

// docReadPDF opens a PDF with PDFium and reads every page's size and text.
func docReadPDF(t testing.TB, data []byte) docPDFSummary {
	t.Helper()
	s, err := pdfium.Open(context.Background(), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
	if err != nil {
		t.Fatalf("PDFium cannot open the PDF: %v", err)
	}
	defer s.Close()
	sum := docPDFSummary{pages: s.Pages()}
	for i := range min(s.Pages(), 500) {
		w, h, err := s.PageSize(i)
		if err != nil {
			t.Fatal(err)
		}
		text, err := s.Text(i)
		if err != nil {
			t.Fatal(err)
		}
		sum.sizes = append(sum.sizes, [2]float64{w, h})
		sum.text = append(sum.text, text)
	}
	return sum
}

func docReadOutput(t *testing.T, output string) []byte {
	t.Helper()
	data, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// docCheckPDF reads the PDF back: at least one page, the sample's words in its text, and
// for images one page of the image's size.
func docCheckPDF(t *testing.T, source, output string) {
	data := docReadOutput(t, output)
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		t.Fatalf("output is not a PDF: %.20q", data)
	}
	sum := docReadPDF(t, data)
	if sum.pages < 1 {
		t.Fatal("PDF has no pages")
	}
	docCheckWords(t, strings.Join(sum.text, "\n"), docWords(source))
	switch from := docSourceFormat(source); {
	case docImageFormatOf(source) != "":
		size := docSampleSize(t, source)
		w, h := rasterPagePoints(size.X, size.Y)
		if sum.pages != 1 || math.Abs(sum.sizes[0][0]-w) > 1 || math.Abs(sum.sizes[0][1]-h) > 1 {
			t.Errorf("%d pages, first %v; want 1 page of %.1fx%.1f", sum.pages, sum.sizes[0], w, h)
		}
	case from == fmtSVG:
		w, h := docSVGSize(t, source)
		if sum.pages != 1 || math.Abs(sum.sizes[0][0]-w*0.75) > 1 || math.Abs(sum.sizes[0][1]-h*0.75) > 1 {
			t.Errorf("%d pages, first %v; want 1 page of %.1fx%.1f", sum.pages, sum.sizes[0], w*0.75, h*0.75)
		}
	case filepath.Base(source) == "sample.md" || filepath.Base(source) == "sample.html":
		// Headings are in the outline: fpdf writes them as /Outlines with /Title entries.
		if !bytes.Contains(data, []byte("/Outlines")) {
			t.Error("PDF has no outline")
		}
	}
}

// docSVGSize is an SVG sample's intrinsic size in CSS pixels.
func docSVGSize(t *testing.T, source string) (w, h float64) {
	t.Helper()
	w, h, err := svg.Size(context.Background(), docReadOutput(t, source))
	if err != nil {
		t.Fatal(err)
	}
	return w, h
}

// docCheckText checks UTF-8 text with the sample's words.
func docCheckText(t *testing.T, source, output string) {
	data := docReadOutput(t, output)
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("output is not UTF-8 text: %.100q", data)
	}
	docCheckWords(t, string(data), docWords(source))
}

// docCheckMarkdown checks UTF-8 Markdown with the sample's words, tables as pipe tables
// and headings as ATX headings.
func docCheckMarkdown(t *testing.T, source, output string) {
	data := docReadOutput(t, output)
	if !utf8.Valid(data) {
		t.Fatal("output is not UTF-8")
	}
	words := docWords(source)
	docCheckWords(t, string(data), words)
	if words == nil || docSourceFormat(source) == fmtPDF || docSourceFormat(source) == fmtTXT {
		return
	}
	if !bytes.Contains(data, []byte("\n|")) || !bytes.Contains(data, []byte("---")) {
		t.Errorf("no table in the Markdown:\n%s", data)
	}
	if !bytes.HasPrefix(data, []byte("# ")) && !bytes.Contains(data, []byte("\n# ")) {
		t.Errorf("no level 1 heading in the Markdown:\n%s", data)
	}
}

// docCheckHTML parses the page and finds the sample's words in its body and its first
// heading in an h1 or the title.
func docCheckHTML(t *testing.T, source, output string) {
	data := docReadOutput(t, output)
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) {
		t.Errorf("not a complete HTML page: %.100s", data)
	}
	body := findElement(doc, atom.Body)
	if body == nil {
		t.Fatal("no body")
	}
	words := docWords(source)
	docCheckWords(t, nodeText(body), words)
	if len(words) > 0 && docSourceFormat(source) != fmtPDF && docSourceFormat(source) != fmtTXT {
		h := findElement(body, atom.H1)
		if h == nil || !strings.Contains(nodeText(h), words[0]) {
			t.Errorf("no h1 with %q", words[0])
		}
	}
}

// docCheckEPUB reads the book: mimetype first and stored, the container, the package
// document, chapters that are well-formed XML and hold the sample's words.
func docCheckEPUB(t *testing.T, source, output string) {
	data := docReadOutput(t, output)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) == 0 || zr.File[0].Name != "mimetype" || zr.File[0].Method != zip.Store {
		t.Fatal("mimetype is not the first, stored entry")
	}
	read := func(f *zip.File) []byte {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if string(read(zr.File[0])) != "application/epub+zip" {
		t.Fatal("wrong mimetype")
	}
	names := map[string]bool{}
	var text strings.Builder
	chapters := 0
	for _, f := range zr.File {
		names[f.Name] = true
		if strings.HasSuffix(f.Name, ".xhtml") || strings.HasSuffix(f.Name, ".opf") || strings.HasSuffix(f.Name, ".ncx") {
			d := xml.NewDecoder(bytes.NewReader(read(f)))
			d.Strict = true
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s is not well-formed XML: %v", f.Name, err)
				}
				if cd, ok := tok.(xml.CharData); ok && strings.Contains(f.Name, "chapter-") {
					text.Write(cd)
					text.WriteByte(' ')
				}
			}
		}
		if strings.Contains(f.Name, "chapter-") {
			chapters++
		}
	}
	for _, n := range []string{"META-INF/container.xml", "OEBPS/content.opf", "OEBPS/nav.xhtml"} {
		if !names[n] {
			t.Errorf("no %s", n)
		}
	}
	if chapters == 0 {
		t.Error("no chapters")
	}
	docCheckWords(t, text.String(), docWords(source))
}

// docCheckRaster checks a raster rendered from a PDF, SVG or laid-out document: its
// size (the page at 150 dpi, the SVG at its own size; fitted where the format is small) and
// that something was drawn.
func docCheckRaster(codec *convimage.Codec) func(*testing.T, string, string) {
	return func(t *testing.T, source, output string) {
		data := docReadOutput(t, output)
		if got, _ := convert.Sniff(data); got != codec.ID {
			t.Fatalf("output sniffs as %q, want %s", got, codec.ID)
		}
		img := docDecodeRaster(t, codec.ID, data)
		var w, h int
		switch docSourceFormat(source) {
		case fmtSVG:
			sw, sh := docSVGSize(t, source)
			w, h = int(math.Ceil(sw)), int(math.Ceil(sh))
		case fmtPDF:
			sum := docReadPDF(t, docReadOutput(t, source))
			w, h = renderedSize(sum.sizes[0][0], sum.sizes[0][1], DefaultPDFDPI)
		default: // laid out on A4
			w, h = renderedSize(595.28, 841.89, DefaultPDFDPI)
		}
		if codec.FitMaxSide && (w > codec.MaxSide || h > codec.MaxSide) {
			w, h, _ = convimage.ResizeBox(w, h, convert.Options{Width: codec.MaxSide, Height: codec.MaxSide})
		}
		if got := img.Bounds().Size(); got != image.Pt(w, h) {
			t.Fatalf("output is %v, want %dx%d", got, w, h)
		}
		if !docDrawnOn(img) {
			t.Error("nothing drawn: every pixel is the same")
		}
	}
}

// docDrawnOn reports whether img has at least two different colours.
func docDrawnOn(img image.Image) bool {
	b := img.Bounds()
	first := color.NRGBAModel.Convert(img.At(b.Min.X, b.Min.Y))
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			if color.NRGBAModel.Convert(img.At(x, y)) != first {
				return true
			}
		}
	}
	return false
}

// docMatrixSkip reports the TestCatalog_Matrix pairs worth leaving out under -race: those that
// render a PDF or SVG page into a raster format other than PNG. Under the race detector a
// laid-out A4 page takes 10 to 30 s to encode as WebP or GIF, and each such pair only repeats
// what sample.pdf -> <format> and <document> -> png already cover. The matrix test calls it.
func docMatrixSkip(c *convert.Catalog, from, to string) bool {
	if !convtest.RaceEnabled || to == "png" {
		return false
	}
	steps, err := c.Path(from, to)
	if err != nil {
		return false
	}
	last := steps[len(steps)-1]
	return (last.From == fmtPDF || last.From == fmtSVG) && convimage.CodecByID(to) != nil && (from != fmtPDF || to == "webp" || to == "avif")
}
