package document

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// heldWriter records how much of the catalog's memory budget is held when the PDF is
// written (fpdf writes the whole file at the end, after every font is added and subset).
type heldWriter struct {
	c     *convert.Catalog
	held  int64
	wrote bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		w.held, _ = w.c.MemoryUse()
	}
	return len(p), nil
}

// docMeasureConversion runs one conversion and returns the bytes it allocated and the
// budget held while the output was written.
func docMeasureConversion(t *testing.T, c *convert.Catalog, from, to string, data []byte) (alloc uint64, held int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	w := &heldWriter{c: c}
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	if _, err := c.Convert(context.Background(), from, to, convert.Options{}, in, w, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&b)
	if !w.wrote {
		t.Fatal("nothing written")
	}
	return b.TotalAlloc - a.TotalAlloc, w.held
}

// TestPDF_FaceMemoryCharged: what the CJK and Hangul fallback faces add to making a PDF (21
// and 12 MB allocated for a few characters, more per character kept; the lead measured 33 MB
// over the estimate for both) is charged to the memory budget: for each document with such
// characters, the budget held beyond that of the same document in Latin letters is at least
// the bytes allocated beyond it, and not more than twice that plus 4 MiB. Allocation
// (runtime TotalAlloc) bounds the heap the conversion may reach from above. Consecutive
// ideographs use a face's second fpdf instance (pdfMaxRun), which is charged too, up to
// MaxPDFFallbackChars of them.
func TestPDF_FaceMemoryCharged(t *testing.T) {
	if raceEnabled {
		// 24.0 MB allocated against 23.2 MB charged in one -race run, 20.7 MB in plain runs:
		// the race detector's sync.Pool drops buffers at random. The plain run measures it.
		t.Skip("allocation totals are not repeatable under -race")
	}
	useFontDir(t, "")
	c := testCatalog(convert.Limits{MaxConversionMemory: 8 << 30})
	distinct := func(lo, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteRune(rune(lo + i))
			if i%40 == 39 {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	latinOf := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if r >= 0x3000 {
				b.WriteString("ab") // the same bytes or so: the estimate counts input bytes
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	// The catalog writes through a 64 KiB buffer: the PDFs are made larger than that (the
	// same padding in both documents) so that the first write happens inside the converter,
	// while its reservations are held: a noise image in Markdown, a title (the PDF's Info,
	// not compressed) in HTML and SVG, random letters in text.
	rng := rand.New(rand.NewPCG(1, 2))
	letters := func(n int, sep string) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte(byte('a' + rng.IntN(26)))
			if i%60 == 59 {
				b.WriteString(sep)
			} else if i%7 == 6 {
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	noise := image.NewNRGBA(image.Rect(0, 0, 160, 160))
	for i := range noise.Pix {
		noise.Pix[i] = byte(rng.IntN(256))
	}
	var png1 bytes.Buffer
	if err := png.Encode(&png1, noise); err != nil {
		t.Fatal(err)
	}
	img := "![noise](data:image/png;base64," + base64.StdEncoding.EncodeToString(png1.Bytes()) + ")"
	title := letters(70_000, " ")
	svg := func(text string) string {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80"><title>` + title + `</title><text x="5" y="50">` + text + `</text></svg>`
	}
	html := func(text string) string { return "<title>" + title + "</title><p>" + text + "</p>" }
	for _, tc := range []struct {
		name, from, doc string
	}{
		{"markdown CJK", fmtMarkdown, "# Title\n\nSome text 東京 here.\n\n" + img},
		{"markdown Hangul", fmtMarkdown, "# Title\n\nSome text 한국어 here.\n\n" + img},
		{"markdown both", fmtMarkdown, "# Title\n\nSome text 東京 한국어 here.\n\n" + img},
		{"markdown 400 ideographs", fmtMarkdown, "# Title\n\n" + distinct(0x4e00, 400) + "\n\n" + img},
		{"markdown 3000 consecutive ideographs", fmtMarkdown, "# Title\n\n" + distinct(0x4e00, 3000) + "\n\n" + img},
		{"markdown ideographs at the cap", fmtMarkdown, "# Title\n\n" + distinct(0x4e00, MaxPDFFallbackChars) + "\n\n" + img},
		{"svg 3000 consecutive ideographs", fmtSVG, svg(strings.ReplaceAll(distinct(0x4e00, 3000), "\n", ""))},
		{"markdown code block", fmtMarkdown, "# Title\n\n```\nx := \"東京 한국어\"\n```\n\n" + img},
		{"html both", fmtHTML, html("Some text 東京 한국어 here.")},
		{"text both", fmtTXT, "Some text 東京 한국어 here.\n" + letters(150_000, "\n")},
		{"svg both", fmtSVG, svg("Some text 東京 한국어 here.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			latin := latinOf(tc.doc)
			if latin == tc.doc {
				t.Fatal("the document has no CJK characters")
			}
			// Once each first: fonts are parsed for their metrics once per process.
			docMeasureConversion(t, c, tc.from, fmtPDF, []byte(tc.doc))
			docMeasureConversion(t, c, tc.from, fmtPDF, []byte(latin))
			alloc, held := docMeasureConversion(t, c, tc.from, fmtPDF, []byte(tc.doc))
			baseAlloc, baseHeld := docMeasureConversion(t, c, tc.from, fmtPDF, []byte(latin))
			if baseHeld == 0 {
				t.Fatal("the PDF was written after the conversion gave its memory back: make it larger than the catalog's output buffer")
			}
			extraAlloc, extraHeld := int64(alloc)-int64(baseAlloc), held-baseHeld
			t.Logf("allocated %.1f MB (Latin %.1f MB), budget held %.1f MB (Latin %.1f MB): %.1f MB more allocated, %.1f MB more charged",
				float64(alloc)/1e6, float64(baseAlloc)/1e6, float64(held)/1e6, float64(baseHeld)/1e6, float64(extraAlloc)/1e6, float64(extraHeld)/1e6)
			if extraAlloc < 4<<20 {
				t.Fatalf("the CJK document allocates only %d bytes more: not measuring the fallback faces", extraAlloc)
			}
			if extraHeld < extraAlloc {
				t.Errorf("the budget charges %.1f MB for the CJK faces, below the %.1f MB they allocate", float64(extraHeld)/1e6, float64(extraAlloc)/1e6)
			}
			if extraHeld > 2*extraAlloc+4<<20 {
				t.Errorf("the budget charges %.1f MB for the CJK faces, over twice the %.1f MB they allocate", float64(extraHeld)/1e6, float64(extraAlloc)/1e6)
			}
			if h, w := c.MemoryUse(); h != 0 || w != 0 {
				t.Errorf("after the conversions %d bytes are held, %d waiting; want all given back", h, w)
			}
		})
	}
}

// TestCJK_CodeBlocksAndText: Markdown code blocks and plain text, set in the monospaced face,
// draw the characters it lacks with the CJK and Hangul faces as body text does: two different
// strings of as many characters render differently (boxes would be identical, which the
// runes no face has show), the text layer has them, a character no face has is reported, and a
// long line of ideographs (wider than the monospaced cells) wraps inside the right margin.
func TestCJK_CodeBlocksAndText(t *testing.T) {
	c := docCatalog()
	docs := map[string]func(string) string{
		"markdown code block": func(s string) string { return "# T\n\n```\nx := \"" + s + "\"\n```\n" },
		"indented code":       func(s string) string { return "# T\n\n    code " + s + "\n" },
		"text":                func(s string) string { return "text " + s + "\n" },
	}
	from := map[string]string{"markdown code block": fmtMarkdown, "indented code": fmtMarkdown, "text": fmtTXT}
	for name, mk := range docs {
		t.Run(name, func(t *testing.T) {
			if raceShort() && name != "markdown code block" {
				t.Skip("-race -short: the code block only (eight page renders each); the plain step runs all three")
			}
			render := func(s string) []byte {
				return must(docConvertData(t, c, from[name], "png", []byte(mk(s)), convert.Options{}))
			}
			for _, pair := range [][2]string{{"中文字", "日月火"}, {"ひらがな", "カタカナ"}, {"한국어", "텍스트"}} {
				if bytes.Equal(render(pair[0]), render(pair[1])) {
					t.Errorf("%q and %q render the same (boxes?)", pair[0], pair[1])
				}
			}
			if !bytes.Equal(render("ᚠᚢᚦ"), render("ᚨᚱᚲ")) {
				t.Errorf("characters no font has do not render as identical boxes; the check above proves nothing")
			}
			path := docWriteTemp(t, []byte(mk("東京 한국어 ᚠ")))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var pdf bytes.Buffer
			ws, err := c.Convert(context.Background(), from[name], fmtPDF, convert.Options{}, f, &pdf, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) != 1 || ws[0].Code != convert.WarnGlyphsMissing || !strings.Contains(ws[0].Message, "U+16A0") || strings.Contains(ws[0].Message, "U+6771") {
				t.Errorf("warnings %v, want one glyphs_missing naming U+16A0 only", ws)
			}
			if text := strings.Join(docReadPDF(t, pdf.Bytes()).text, " "); !strings.Contains(text, "東京") || !strings.Contains(text, "한국어") {
				t.Errorf("the PDF's text %q lacks 東京 or 한국어", text)
			}
			// 150 ideographs: about 1.5 lines of monospaced cells' count, 2.5 lines' width.
			long := strings.Repeat("東", 150)
			pdfData := must(docConvertData(t, c, from[name], fmtPDF, []byte(mk(long)), convert.Options{}))
			if text := strings.Join(docReadPDF(t, pdfData).text, ""); strings.Count(text, "東") != 150 {
				t.Errorf("the PDF's text has %d of the 150 ideographs", strings.Count(text, "東"))
			}
			img := docDecodePNG(t, must(docConvertData(t, c, fmtPDF, "png", pdfData, convert.Options{DPI: 72})))
			b := img.Bounds()
			right := b.Max.X - int(math.Floor(pdfMargin)) + 2 // the right margin, in 72 dpi pixels
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := right; x < b.Max.X; x++ {
					if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 < 0x80 && g>>8 < 0x80 && bl>>8 < 0x80 {
						t.Fatalf("a dark pixel at (%d, %d), in the right margin (from x=%d): the line was not wrapped", x, y, right)
					}
				}
			}
		})
	}
}
