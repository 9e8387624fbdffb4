package standard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/cputime"
)

// slowInput is an input that takes its converter seconds of CPU, per family.
type slowInput struct {
	name, from, to string
	data           []byte
}

// noisePNG is a w x h PNG of noise: slow to encode in every format, compressing poorly.
func noisePNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// toneWAV is secs seconds of a 44.1 kHz stereo 16-bit tone.
func toneWAV(secs int) []byte {
	const rate = 44100
	n := rate * secs
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+n*4))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(2), uint32(rate), uint32(rate * 4), uint16(4), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(n*4))
	s := make([]byte, 4)
	for i := 0; i < n; i++ {
		v := int16(8000 * math.Sin(float64(i)*2*math.Pi*440/rate))
		binary.LittleEndian.PutUint16(s, uint16(v))
		binary.LittleEndian.PutUint16(s[2:], uint16(v))
		b.Write(s)
	}
	return b.Bytes()
}

func bigMarkdown(paras int) []byte {
	var b strings.Builder
	for i := 0; i < paras; i++ {
		fmt.Fprintf(&b, "## Section %d\n\nSome *emphasis* and **strong** text with a [link](https://example.com/%d) and `code`, repeated to fill a line of prose for the layout engine to wrap.\n\n- item one\n- item two\n\n", i, i)
	}
	return []byte(b.String())
}

func bigHTML(paras int) []byte {
	var b strings.Builder
	b.WriteString("<html><body>")
	for i := 0; i < paras; i++ {
		fmt.Fprintf(&b, "<h2>Section %d</h2><p>Some <em>emphasis</em> and <strong>strong</strong> text with a <a href=\"https://example.com/%d\">link</a>, repeated to fill a line of prose for the layout engine.</p><ul><li>one</li><li>two</li></ul>", i, i)
	}
	b.WriteString("</body></html>")
	return []byte(b.String())
}

func bigSVG(n int) []byte {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000">`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d" fill="rgb(%d,%d,%d)" fill-opacity="0.5"/>`, (i*37)%4000, (i*91)%4000, 200+i%300, i%255, (i*7)%255, (i*13)%255)
	}
	b.WriteString(`</svg>`)
	return []byte(b.String())
}

// TestAbandon_CPUFallsToIdle starts many slow conversions of every family at once (images
// quantized, audio encoded, documents laid out, SVG rasterized, a PDF page rendered), cancels them
// once they all run, and requires every converter to return within a generous bound and the
// process's CPU to fall to idle: the CPU consumed in a window after the last one returned must
// be under a tenth of a core, and all of them together may burn only a little CPU between the
// cancel and their return. The PDF page is rendered by PDFium in wazero, whose instance is
// killed when the context ends. The AVIF and lossy WebP encoders are left out: they are C
// translated to Go (wasm2go) with no way to interrupt them, bounded by their pixel limits
// and by the worker slot an abandoned conversion keeps (docs/reliability.md).
func TestAbandon_CPUFallsToIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("slow inputs")
	}
	cat := NewCatalog(convert.Limits{})
	img := noisePNG(6000, 6000)
	wav := toneWAV(600)
	md := bigMarkdown(20000)
	htm := bigHTML(40000)
	svg := bigSVG(20000)
	pdf, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", "doc-render-bomb.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []slowInput{
		{"png->gif", "png", "gif", img}, {"png->gif", "png", "gif", img},
		{"wav->flac", "wav", "flac", wav}, {"wav->flac", "wav", "flac", wav},
		{"md->pdf", "markdown", "pdf", md}, {"md->pdf", "markdown", "pdf", md},
		{"html->pdf", "html", "pdf", htm},
		{"svg->png", "svg", "png", svg}, {"svg->png", "svg", "png", svg},
		{"pdf->png", "pdf", "png", pdf},
	}
	dir := t.TempDir()
	// PDFium compiles its WebAssembly on first use (seconds of CPU, once per process, not
	// interruptible): do that before the measurement with a quick PDF -> text.
	warm, err := os.Open(filepath.Join("..", "..", "testdata", "documents", "sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	if _, err := cat.Convert(context.Background(), "pdf", "txt", convert.Options{}, warm, io.Discard, dir); err != nil {
		t.Logf("warming PDFium: %v", err)
	}
	type result struct {
		name string
		err  error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan result, len(cases))
	started := make(chan struct{}, len(cases))
	for i, c := range cases {
		path := filepath.Join(dir, fmt.Sprintf("in%d", i))
		if err := os.WriteFile(path, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		go func() {
			started <- struct{}{}
			_, err := cat.Convert(ctx, c.from, c.to, convert.Options{}, in, io.Discard, dir)
			results <- result{c.name, err}
		}()
	}
	for range cases {
		<-started
	}
	// Let them get into their long loops, then give them all up.
	time.Sleep(2 * time.Second)
	cpuCancel := cputime.Self()
	cancel()
	cancelled := time.Now()
	deadline := time.After(60 * time.Second)
	finishedEarly := 0
	for range cases {
		select {
		case r := <-results:
			t.Logf("%s returned %v after the cancel", r.name, time.Since(cancelled))
			if !errors.Is(r.err, context.Canceled) {
				finishedEarly++ // done before the cancel: not a test of stopping
				t.Logf("%s ended before the cancel: %v", r.name, r.err)
			}
		case <-deadline:
			t.Fatalf("conversions still running 60s after the cancel")
		}
	}
	overrun := cputime.Self() - cpuCancel
	t.Logf("%d conversions returned %v after the cancel, using %v of CPU meanwhile", len(cases), time.Since(cancelled), overrun)
	if finishedEarly > len(cases)/2 {
		t.Errorf("%d of %d conversions finished before the cancel; the inputs are not slow enough", finishedEarly, len(cases))
	}
	// Quiet, they use about 0.5s between them. Uncancelled, a PNG to GIF takes 3s of CPU and a
	// Markdown to PDF 2s, so one of them running on to its end would break the bound. HTML is
	// here once: HTML to Markdown's whitespace pass (html-to-markdown's collapse) cannot be
	// interrupted and costs about a second for this input; with three HTML conversions CI's
	// load once pushed the sum to 3.3s.
	if overrun > 3*time.Second {
		t.Errorf("the cancelled conversions used %v of CPU after the cancel, want under 3s", overrun)
	}
	runtime.GC() // the garbage of the conversions is not theirs to keep running for
	cpu0 := cputime.Self()
	time.Sleep(2 * time.Second)
	if idle := cputime.Self() - cpu0; idle > 200*time.Millisecond {
		t.Errorf("the process used %v of CPU in the 2s after every conversion returned, want idle (under 200ms)", idle)
	} else {
		t.Logf("CPU in the 2s after: %v", idle)
	}
}
