package document

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// docPSNR is the PSNR in dB of b against a over R, G and B, both composited over white.
func docPSNR(t *testing.T, a, b image.Image) float64 {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	var sum float64
	n := 0
	over := func(c uint32, al uint32) float64 { return (float64(c) + float64(0xffff-al)) / 257 }
	for y := 0; y < a.Bounds().Dy(); y++ {
		for x := 0; x < a.Bounds().Dx(); x++ {
			r1, g1, b1, a1 := a.At(a.Bounds().Min.X+x, a.Bounds().Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(b.Bounds().Min.X+x, b.Bounds().Min.Y+y).RGBA()
			for _, d := range []float64{over(r1, a1) - over(r2, a2), over(g1, a1) - over(g2, a2), over(b1, a1) - over(b2, a2)} {
				sum += d * d
				n++
			}
		}
	}
	if sum == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(sum/float64(n)))
}

func docDecodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// useFontDir sets the font directory for one test.
func useFontDir(t *testing.T, dir string) {
	SetFontDir(dir)
	t.Cleanup(func() { SetFontDir(DefaultFontDir) })
}

// TestSVGText_Sample draws sample-text.svg (make-sample-text-svg.py) with the embedded fonts
// only: the title's pixels are there, in its colour, where rsvg-convert draws them, and the
// drawing is closer to rsvg-convert's than the same drawing without its text.
func TestSVGText_Sample(t *testing.T) {
	useFontDir(t, "")
	c := docCatalog()
	ref := docDecodePNG(t, must(os.ReadFile(docPath("sample-text.rsvg.png"))))
	got := docDecodePNG(t, docMustConvert(t, c, fmtSVG, "png", docPath("sample-text.svg"), convert.Options{}))
	noText := strings.NewReplacer("Quarterly sales</text>", "</text>", ">Q1<", "><", ">Q2<", "><", ">Q3<", "><", ">Q4<", "><").
		Replace(string(must(os.ReadFile(docPath("sample-text.svg")))))
	bare := docDecodePNG(t, must(docConvertData(t, c, fmtSVG, "png", []byte(noText), convert.Options{})))
	// Title: #1a237e, centred on x=160 with its baseline at y=36, 26 px bold.
	count := func(img image.Image) int {
		n := 0
		for y := 10; y < 40; y++ {
			for x := 40; x < 280; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if r>>8 < 0x60 && g>>8 < 0x60 && b>>8 > 0x60 {
					n++
				}
			}
		}
		return n
	}
	if n, want := count(got), count(ref)/2; n < want {
		t.Errorf("%d title-coloured pixels in the title's box, want at least %d (rsvg-convert draws %d)", n, want, count(ref))
	}
	if n := count(bare); n != 0 {
		t.Errorf("the drawing without text has %d title-coloured pixels", n)
	}
	pText, pBare := docPSNR(t, ref, got), docPSNR(t, ref, bare)
	t.Logf("PSNR against rsvg-convert: %.2f dB with text (embedded fonts), %.2f dB without", pText, pBare)
	if !(pText > pBare) {
		t.Errorf("PSNR %.2f dB with text, not above %.2f dB without", pText, pBare)
	}
}

// TestSVGText_SampleSystemFonts draws sample-text.svg with the system's fonts, as rsvg-convert
// does through fontconfig (DejaVu for the generic families): nearly the same pixels.
func TestSVGText_SampleSystemFonts(t *testing.T) {
	if _, err := os.Stat("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("DejaVu fonts (Debian's fonts-dejavu-core) are not installed; .ci/run installs them")
		}
		t.Skip("DejaVu fonts (Debian's fonts-dejavu-core) are not installed")
	}
	useFontDir(t, "/usr/share/fonts/truetype/dejavu")
	ref := docDecodePNG(t, must(os.ReadFile(docPath("sample-text.rsvg.png"))))
	got := docDecodePNG(t, docMustConvert(t, docCatalog(), fmtSVG, "png", docPath("sample-text.svg"), convert.Options{}))
	p := docPSNR(t, ref, got)
	t.Logf("PSNR against rsvg-convert: %.2f dB", p)
	if p < 40 {
		t.Errorf("PSNR %.2f dB, want 40 or more", p)
	}
}

// TestSVGText_PDF: the drawing's text is PDF text.
func TestSVGText_PDF(t *testing.T) {
	useFontDir(t, "")
	out := docMustConvert(t, docCatalog(), fmtSVG, fmtPDF, docPath("sample-text.svg"), convert.Options{})
	text := strings.Join(docReadPDF(t, out).text, " ")
	for _, w := range []string{"Quarterly sales", "Q1", "Q2", "Q3", "Q4", "Source:", "internal"} {
		if !strings.Contains(text, w) {
			t.Errorf("the PDF's text %q lacks %q", text, w)
		}
	}
}

// TestSVGText_Warnings: text on a path is reported as not rendered, a character no font has
// as glyphs missing, and plain text as nothing.
func TestSVGText_Warnings(t *testing.T) {
	useFontDir(t, "")
	c := docCatalog()
	svg := func(body string) string {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><path id="p" d="M0 40 L100 40"/>` + body + `</svg>`
	}
	tests := []struct {
		body string
		want []string
	}{
		{`<text x="5" y="30">Hello 中文 한국어</text>`, nil},
		{`<text x="5" y="30"><textPath href="#p">on a path</textPath></text>`, []string{convert.WarnTextNotRendered}},
		{`<text x="5" y="30">runes ᚠᚢ</text>`, []string{convert.WarnGlyphsMissing}},
		{`<defs><g id="label"><text x="5" y="30">reused</text></g></defs><use href="#label" x="10"/>`, []string{convert.WarnTextNotRendered}},
		{`<defs><g id="shape"><rect width="5" height="5"/></g></defs><use href="#shape" x="10"/><text x="5" y="30">plain</text>`, nil},
	}
	for _, tt := range tests {
		for _, to := range []string{"png", fmtPDF} {
			path := docWriteTemp(t, []byte(svg(tt.body)))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := c.Convert(context.Background(), fmtSVG, to, convert.Options{}, f, io.Discard, t.TempDir())
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, w := range ws {
				codes = append(codes, w.Code)
				if w.Message == "" {
					t.Errorf("%s: warning %s without a message", tt.body, w.Code)
				}
			}
			if strings.Join(codes, ",") != strings.Join(tt.want, ",") {
				t.Errorf("%s to %s: warnings %v, want %v", tt.body, to, ws, tt.want)
			}
		}
	}
}

// TestCJK_Documents: Markdown, HTML and DOCX with Chinese, Japanese and Korean text
// (make-sample-cjk.py) give PDFs whose text layer has the characters, with no warning. Their
// PNGs have glyphs, not boxes: two different strings of as many characters render differently,
// while two strings of characters no font has render identically (every one the same box),
// which shows the check can fail.
func TestCJK_Documents(t *testing.T) {
	c := docCatalog()
	for _, tc := range []struct{ sample, from string }{
		{"sample-cjk.md", fmtMarkdown}, {"sample-cjk.html", fmtHTML}, {"sample-cjk.docx", fmtDOCX},
	} {
		f, err := os.Open(docPath(tc.sample))
		if err != nil {
			t.Fatal(err)
		}
		var pdf bytes.Buffer
		ws, err := c.Convert(context.Background(), tc.from, fmtPDF, convert.Options{}, f, &pdf, t.TempDir())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 0 {
			t.Errorf("%s: warnings %v", tc.sample, ws)
		}
		text := strings.Join(docReadPDF(t, pdf.Bytes()).text, " ")
		for _, w := range []string{"多言語", "中文文本，简体与繁體。", "ひらがな、カタカナ、日本語の漢字。", "한국어 텍스트와 한글."} {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the PDF's text %q lacks %q", tc.sample, text, w)
			}
		}
	}
	doc := map[string]func(string) string{
		fmtMarkdown: func(s string) string { return "# " + s + "\n\n" + s + "\n" },
		fmtHTML:     func(s string) string { return "<html><body><h1>" + s + "</h1><p>" + s + "</p></body></html>" },
	}
	for from, mk := range doc {
		if raceShort() && from != fmtMarkdown {
			continue // -race -short: Markdown's eight page renders only; the plain step renders HTML's too
		}
		render := func(s string) []byte {
			return must(docConvertData(t, c, from, "png", []byte(mk(s)), convert.Options{}))
		}
		for _, pair := range [][2]string{{"中文字", "日月火"}, {"ひらがな", "カタカナ"}, {"한국어", "텍스트"}} {
			if bytes.Equal(render(pair[0]), render(pair[1])) {
				t.Errorf("%s: %q and %q render the same (boxes?)", from, pair[0], pair[1])
			}
		}
		if !bytes.Equal(render("ᚠᚢᚦ"), render("ᚨᚱᚲ")) {
			t.Errorf("%s: characters no font has do not render as identical boxes; the check above proves nothing", from)
		}
	}
}

// TestCJK_GlyphsMissingWarned: a character no embedded font has is reported.
func TestCJK_GlyphsMissingWarned(t *testing.T) {
	c := docCatalog()
	path := docWriteTemp(t, []byte("Runes ᚠ and 中文\n"))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws, err := c.Convert(context.Background(), fmtMarkdown, fmtPDF, convert.Options{}, f, io.Discard, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Code != convert.WarnGlyphsMissing || !strings.Contains(ws[0].Message, "U+16A0") || strings.Contains(ws[0].Message, "U+4E2D") {
		t.Errorf("warnings %v, want one glyphs_missing naming U+16A0 only", ws)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkSVGText draws sample-text.svg to PNG (the figures in docs/decisions.md).
func BenchmarkSVGText(b *testing.B) {
	SetFontDir("/usr/share/fonts/truetype/dejavu")
	defer SetFontDir(DefaultFontDir)
	c := docCatalog()
	data, err := os.ReadFile(docPath("sample-text.svg"))
	if err != nil {
		b.Fatal(err)
	}
	must(docConvertData(b, c, fmtSVG, "png", data, convert.Options{}))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		must(docConvertData(b, c, fmtSVG, "png", data, convert.Options{}))
	}
}

// BenchmarkCJKPDF makes a PDF of a Markdown paragraph in Chinese, Japanese and Korean and
// one of the same length in Latin (the figures in docs/dependencies.md).
func BenchmarkCJKPDF(b *testing.B) {
	c := docCatalog()
	for _, tc := range []struct{ name, text string }{
		{"cjk", strings.Repeat("中文文本，日本語のひらがなとカタカナ、한국어 텍스트. ", 20)},
		{"latin", strings.Repeat("Latin text, with some words in it, and more of them here. ", 20)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data := []byte("# Title\n\n" + tc.text + "\n")
			must(docConvertData(b, c, fmtMarkdown, fmtPDF, data, convert.Options{}))
			b.ReportAllocs()
			b.ResetTimer()
			var out []byte
			for b.Loop() {
				out = must(docConvertData(b, c, fmtMarkdown, fmtPDF, data, convert.Options{}))
			}
			b.ReportMetric(float64(len(out)), "pdf-bytes")
		})
	}
}

// TestSVGText_Concurrent: drawings with text made at once give the same bytes as one alone
// (shared faces and the font directory are read concurrently; run with -race).
func TestSVGText_Concurrent(t *testing.T) {
	useFontDir(t, "")
	c := docCatalog()
	want := map[string][]byte{}
	for _, to := range []string{"png", fmtPDF} {
		want[to] = docMustConvert(t, c, fmtSVG, to, docPath("sample-text.svg"), convert.Options{})
	}
	SetFontDir("") // read again, now by the goroutines at once
	errs := make(chan string, 8)
	for i := range 8 {
		to := []string{"png", fmtPDF}[i%2]
		go func() {
			out, err := docConvertFile(t, c, fmtSVG, to, docPath("sample-text.svg"), convert.Options{})
			switch {
			case err != nil:
				errs <- err.Error()
			case to == "png" && !bytes.Equal(out, want[to]):
				errs <- "a PNG made concurrently differs"
			default:
				errs <- ""
			}
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
