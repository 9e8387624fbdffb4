package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// docIdeographs is a Markdown document of n distinct consecutive CJK ideographs from U+4E00
// (the shape that made fpdf's width table cubic in the run's length), 40 to a paragraph,
// repeated times times.
func docIdeographs(n, times int) []byte {
	var b strings.Builder
	for range times {
		for i := range n {
			b.WriteRune(rune(0x4e00 + i))
			if i%40 == 39 {
				b.WriteString("\n\n")
			}
		}
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

// TestPDF_ManyCJKCharacters converts 3000 distinct consecutive ideographs to PDF: every one
// must be in the PDF's text, within a CPU-time bound the run took several times over before
// fpdf was given runs of at most pdfMaxRun characters (about 13 s of CPU; now about 0.1 s).
func TestPDF_ManyCJKCharacters(t *testing.T) {
	const n = 3000
	c := docCatalog()
	start := cputime.Self()
	out, err := docConvertData(t, c, fmtMarkdown, fmtPDF, docIdeographs(n, 1), convert.Options{})
	used := cputime.Self() - start
	if err != nil {
		t.Fatal(err)
	}
	if limit := 4 * time.Second * convtest.RaceSlowdown; used > limit {
		t.Errorf("%d distinct ideographs took %v of CPU, over %v", n, used, limit)
	}
	t.Logf("%d distinct ideographs: %v of CPU, %d KB of PDF", n, used, len(out)>>10)
	text := strings.Join(docReadPDF(t, out).text, "")
	var lost []string
	for i := range n {
		if r := rune(0x4e00 + i); !strings.ContainsRune(text, r) {
			lost = append(lost, fmt.Sprintf("U+%04X", r))
		}
	}
	if len(lost) > 0 {
		t.Errorf("the PDF's text lacks %d of the %d ideographs, first %v", len(lost), n, lost[:min(len(lost), 5)])
	}
}

// TestPDF_FallbackRunsBounded lays out consecutive ideographs, in order and in an order meant
// to join runs late (every other one first, then the gaps, then from the end), and checks that
// no fpdf instance of a face draws a run of more than pdfMaxRun consecutive characters, that
// each character has one instance, and that only the runs too long use the second instance.
func TestPDF_FallbackRunsBounded(t *testing.T) {
	orders := map[string]func(n int) []rune{
		"in order": func(n int) []rune {
			var rs []rune
			for i := range n {
				rs = append(rs, rune(0x4e00+i))
			}
			return rs
		},
		"gaps filled late": func(n int) []rune {
			var rs []rune
			for i := 0; i < n; i += 2 {
				rs = append(rs, rune(0x4e00+i))
			}
			for i := n - 1; i >= 0; i-- {
				if i%2 == 1 {
					rs = append(rs, rune(0x4e00+i))
				}
			}
			return rs
		},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			d, err := newPDFDoc(context.Background(), convert.Params{}, "")
			if err != nil {
				t.Fatal(err)
			}
			rs := order(5000)
			st := inlineStyle{size: pdfBodySize}
			d.words(nil, string(rs), st)
			if d.err != nil {
				t.Fatal(d.err)
			}
			first, second := pdfFallbacks[0], pdfFallbacks[pdfFallbackFaces]
			if len(d.glyphs[first])+len(d.glyphs[second]) != len(rs) {
				t.Fatalf("%d + %d characters placed, want %d", len(d.glyphs[first]), len(d.glyphs[second]), len(rs))
			}
			for _, f := range []*pdfFont{first, second} {
				set := d.glyphs[f]
				for r := range set {
					if set[r-1] {
						continue
					}
					n := 0
					for set[r+rune(n)] {
						n++
					}
					if n > pdfMaxRun {
						t.Errorf("%s draws a run of %d from U+%04X, over %d", f.family, n, r, pdfMaxRun)
					}
				}
				for r := range set {
					if f == second && d.glyphs[first][r] {
						t.Errorf("U+%04X is in both instances", r)
					}
				}
			}
			if len(d.glyphs[second]) == 0 || len(d.glyphs[second]) > len(rs)/pdfMaxRun*2+2 {
				t.Errorf("%d characters in the second instance, want some and at most %d", len(d.glyphs[second]), len(rs)/pdfMaxRun*2+2)
			}
		})
	}
	// Common text (a sentence's worth of scattered ideographs) needs no second instance.
	d, err := newPDFDoc(context.Background(), convert.Params{}, "")
	if err != nil {
		t.Fatal(err)
	}
	d.words(nil, "東京都の天気は晴れです。日本語の文章を書きます。中文字符测试。", inlineStyle{size: pdfBodySize})
	if n := len(d.glyphs[pdfFallbacks[pdfFallbackFaces]]); n != 0 {
		t.Errorf("%d characters of a sentence went to the second instance", n)
	}
}

// TestPDF_FallbackCharsCap checks that a document with more distinct CJK characters than
// MaxPDFFallbackChars fails with a user error, quickly (in CPU time), before the PDF is written,
// and that one at the cap, consecutive (fpdf's worst case), converts quickly.
func TestPDF_FallbackCharsCap(t *testing.T) {
	c := docCatalog()
	start := cputime.Self()
	_, err := docConvertData(t, c, fmtMarkdown, fmtPDF, docIdeographs(MaxPDFFallbackChars+1, 1), convert.Options{})
	used := cputime.Self() - start
	docWantError(t, err, fmt.Sprintf("the document uses more than %d distinct characters that need the embedded CJK or Hangul fonts", MaxPDFFallbackChars))
	if limit := 4 * time.Second * convtest.RaceSlowdown; used > limit {
		t.Errorf("refusing took %v of CPU, over %v", used, limit)
	}
	t.Logf("refused in %v of CPU", used)
	// At the cap, the document converts, and fpdf's Output (which cannot be interrupted)
	// is short: this is the most CPU a cancelled conversion can go on burning in it.
	start = cputime.Self()
	if _, err := docConvertData(t, c, fmtMarkdown, fmtPDF, docIdeographs(MaxPDFFallbackChars, 1), convert.Options{}); err != nil {
		t.Errorf("%d distinct characters: %v", MaxPDFFallbackChars, err)
	}
	used = cputime.Self() - start
	if limit := 4 * time.Second * convtest.RaceSlowdown; used > limit {
		t.Errorf("%d distinct consecutive ideographs took %v of CPU, over %v", MaxPDFFallbackChars, used, limit)
	}
	t.Logf("at the cap: %v of CPU", used)
}

// TestPDF_CJKCancelStopsCPU cancels a long conversion (many pages) of a document with as many
// distinct consecutive ideographs as allowed once it runs, and requires it to return
// context.Canceled having burnt little CPU after the cancel. Where the cancel lands is not
// controlled: the layout checks the context, and what fpdf's Output may burn after it is
// bounded by TestPDF_FallbackCharsCap.
func TestPDF_CJKCancelStopsCPU(t *testing.T) {
	c := docCatalog()
	path := docWriteTemp(t, docIdeographs(MaxPDFFallbackChars, 100))
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	before := cputime.Self()
	go func() {
		var out bytes.Buffer
		_, err := c.Convert(ctx, fmtMarkdown, fmtPDF, convert.Options{}, in, &out, t.TempDir())
		done <- err
	}()
	// Cancel once the conversion has used some CPU (about 0.6 s in all); the bound on the
	// wait is generous because the machine may be busy.
	deadline := time.Now().Add(2 * time.Minute)
	for cputime.Self()-before < 100*time.Millisecond {
		select {
		case err := <-done:
			t.Fatalf("the conversion returned %v before it could be cancelled", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the conversion did not use 100 ms of CPU in 2 minutes")
		}
	}
	cancel()
	cancelled := cputime.Self()
	var got error
	select {
	case got = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the conversion did not return within 2 minutes of the cancel")
	}
	after := cputime.Self() - cancelled
	if !errors.Is(got, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", got)
	}
	if limit := 2 * time.Second * convtest.RaceSlowdown; after > limit {
		t.Errorf("%v of CPU burnt between the cancel and the return, over %v", after, limit)
	}
	t.Logf("%v of CPU between the cancel and the return", after)
}

// docSVGIdeographs is an SVG whose text is n distinct consecutive ideographs from U+4E00, 40
// to a <text> line.
func docSVGIdeographs(n int) []byte {
	var b strings.Builder
	lines := (n + 39) / 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="%d">`, lines*24+24)
	for l := range lines {
		fmt.Fprintf(&b, `<text x="10" y="%d" font-size="20">`, l*24+24)
		for i := l * 40; i < min(n, l*40+40); i++ {
			b.WriteRune(rune(0x4e00 + i))
		}
		b.WriteString("</text>")
	}
	b.WriteString("</svg>")
	return []byte(b.String())
}

// TestSVGPDF_ManyCJKCharacters does for SVG text what TestPDF_ManyCJKCharacters does for
// Markdown: 3000 distinct consecutive ideographs all in the PDF's text, in its place, within
// a CPU-time bound; over MaxPDFFallbackChars distinct characters, a user error.
func TestSVGPDF_ManyCJKCharacters(t *testing.T) {
	if raceShort() {
		t.Skip("-race -short: one goroutine laying out 3000 ideographs; the plain step runs it, TestPDF_ManyCJKCharacters runs here")
	}
	const n = 3000
	c := docCatalog()
	start := cputime.Self()
	out, err := docConvertData(t, c, fmtSVG, fmtPDF, docSVGIdeographs(n), convert.Options{})
	used := cputime.Self() - start
	if err != nil {
		t.Fatal(err)
	}
	if limit := 8 * time.Second * convtest.RaceSlowdown; used > limit {
		t.Errorf("%d distinct ideographs took %v of CPU, over %v", n, used, limit)
	}
	t.Logf("%d distinct ideographs: %v of CPU, %d KB of PDF", n, used, len(out)>>10)
	text := strings.Join(docReadPDF(t, out).text, "")
	// Each line's pieces (of the face's two instances) are read back in order.
	for l := range n / 40 {
		var line strings.Builder
		for i := l * 40; i < l*40+40; i++ {
			line.WriteRune(rune(0x4e00 + i))
		}
		if !strings.Contains(text, line.String()) {
			t.Fatalf("the PDF's text lacks line %d, %q", l, line.String())
		}
	}
	start = cputime.Self()
	_, err = docConvertData(t, c, fmtSVG, fmtPDF, docSVGIdeographs(MaxPDFFallbackChars+1), convert.Options{})
	used = cputime.Self() - start
	docWantError(t, err, fmt.Sprintf("the SVG's text uses more than %d distinct characters", MaxPDFFallbackChars))
	if limit := 8 * time.Second * convtest.RaceSlowdown; used > limit {
		t.Errorf("refusing took %v of CPU, over %v", used, limit)
	}
}
