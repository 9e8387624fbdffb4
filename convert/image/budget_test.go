package image

import (
	"context"
	"errors"
	"image"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// TestImage_MemoryBudget runs two conversions whose estimates together exceed the budget:
// the second waits until the first has finished, then runs.
func TestImage_MemoryBudget(t *testing.T) {
	// A 300x300 PNG to BMP writes 270 KB: more than runStep's 64 KB buffer, so the encoder
	// itself blocks in the blocking writer while its share of the budget is held.
	src := encodeTemp(t, testimg.Photo(300, 300))
	png, bmp := CodecByID("png"), CodecByID("bmp")
	est := memoryEstimate(png, bmp, 1, 300*300, 300*300, false, false)
	c := testCatalog(convert.Limits{MaxConversionMemory: est * 3 / 2})

	run := func(w io.Writer) chan error {
		done := make(chan error, 1)
		go func() {
			done <- func() error {
				_, err := c.Convert(context.Background(), "png", "bmp", convert.Options{}, openFile(t, src), w, t.TempDir())
				return err
			}()
		}()
		return done
	}
	first, second := newBlockingWriter(), newBlockingWriter()
	firstDone := run(first)
	<-first.started
	if got, _ := c.MemoryUse(); got != est {
		t.Fatalf("budget in use %d during the first conversion, want its estimate %d", got, est)
	}
	secondDone := run(second)
	convtest.WaitFor(t, "the second conversion to wait", func() bool { _, n := c.MemoryUse(); return n == 1 })
	select {
	case <-second.started:
		t.Fatal("the second conversion started while the first held the budget")
	case <-time.After(50 * time.Millisecond):
	}
	close(first.release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	<-second.started
	close(second.release)
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
	if first.n != second.n || first.n < 270_000 {
		t.Errorf("wrote %d and %d bytes", first.n, second.n)
	}
	if got, _ := c.MemoryUse(); got != 0 {
		t.Errorf("budget in use %d after both finished", got)
	}

	// A conversion whose estimate exceeds the whole budget fails at once.
	c = testCatalog(convert.Limits{MaxConversionMemory: 1 << 20})
	_, err := c.Convert(context.Background(), "png", "bmp", convert.Options{}, openFile(t, src), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, "converting this 300x300 PNG to BMP needs an estimated ") ||
		!strings.HasSuffix(ce.Message, " of memory, over the 1.0 MiB conversion memory budget (--max-conversion-memory); use a smaller input") {
		t.Errorf("err = %v, want the budget exceeded", err)
	}
}

// TestImage_MemoryEstimates keeps the estimates at or a little above the peak RSS that
// TestImageMeasure found converting 12-megapixel images (in MiB: PNG to JPEG 47, to WebP 347,
// to lossless WebP 703, to AVIF 348; AVIF to PNG 204; JPEG XL to PNG 326; TIFF to PNG 179). AVIF
// was 1342 and 407 before wasmcodec gave the codec's memory a mapping of its own.
func TestImage_MemoryEstimates(t *testing.T) {
	const px = 12_000_000
	for _, tt := range []struct {
		from, to string
		lossless bool
		lo, hi   int64 // MiB
	}{
		{"png", "jpeg", false, 47, 200},
		{"png", "webp", false, 347, 450},
		{"png", "webp", true, 703, 850},
		{"png", "avif", false, 348, 450},
		{"avif", "png", false, 204, 300},
		{"jxl", "png", false, 326, 450},
		{"tiff", "png", false, 179, 300},
	} {
		est := memoryEstimate(CodecByID(tt.from), CodecByID(tt.to), 1, px, px, false, tt.lossless)
		if mb := est >> 20; mb < tt.lo || mb > tt.hi {
			t.Errorf("%s to %s (lossless %v) at 12 MP: %d MiB, want %d..%d", tt.from, tt.to, tt.lossless, mb, tt.lo, tt.hi)
		}
	}
}

// blockingWriter holds the first write until released, so a conversion can be caught in the
// middle of encoding.
type blockingWriter struct {
	started chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
	n       int
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.release
	w.n += len(p)
	return len(p), nil
}

// budgetWhileWriting converts src (a file) with c from from to dstID under opts, and returns the budget
// in use while the output is being written (the conversion blocked on its first write), after
// checking that the conversion then ends well and gives the budget back.
func budgetWhileWriting(t *testing.T, c *convert.Catalog, from, src, dstID string, opts convert.Options) int64 {
	t.Helper()
	bw := newBlockingWriter()
	done := make(chan error, 1)
	go func() {
		_, err := c.Convert(context.Background(), from, dstID, opts, openFile(t, src), bw, t.TempDir())
		done <- err
	}()
	select {
	case <-bw.started:
	case err := <-done:
		t.Fatalf("%s -> %s: the conversion ended before writing: %v", from, dstID, err)
	}
	got, _ := c.MemoryUse()
	close(bw.release)
	if err := <-done; err != nil {
		t.Fatalf("%s -> %s: %v", from, dstID, err)
	}
	if after, _ := c.MemoryUse(); after != 0 {
		t.Errorf("budget in use %d after the conversion", after)
	}
	if bw.n == 0 {
		t.Error("nothing written")
	}
	return got
}

// skipBudgetTestInShort skips, under -short, a memory-budget test of a 3000x2000 image through
// a streamed path: under -race -short (.ci/run's second suite) each took one to two and a half
// minutes at a load of 20, nine of them. The plain run runs them all, and the same paths'
// same-bytes tests, on smaller images, still run under the race detector.
func skipBudgetTestInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a 3000x2000 budget test; the plain run runs it")
	}
}

// shortQualities is the qualities a same-bytes test runs: all of them, or under -short only
// the first (the default). Under -race -short each such test of a streamed path took 2.5 to 3
// minutes at a load of 16-20 with both; the plain run checks every quality.
func shortQualities(all ...int) []int {
	if testing.Short() {
		return all[:1]
	}
	return all
}

// shortSizes is shortQualities for the image sizes of a same-bytes test: under -short (the
// race run) it drops the tall narrow 257x2000 and makes 1000x517 300x517, which still has
// many strips (JPEG's 128 rows, TIFF's 64) with a short last one and, in 256x256 tiles, edge
// tiles on the right and at the bottom, at a third of the pixels: the race detector checks
// the decoder and encoder goroutines' hand-offs, which do not change with the width, and
// 1000x517's samples, made and converted under it, were the biggest share of each such test
// (at a load of 16-18 TestStreamToTIFF_SameBytesAsWholeImage took 45 s, 27 s of it in the
// 1000x517 cases, besides making their samples). The plain run checks every size byte for byte.
func shortSizes(all ...image.Point) []image.Point {
	if !testing.Short() {
		return all
	}
	var out []image.Point
	for _, p := range all {
		switch p {
		case image.Pt(257, 2000):
			continue
		case image.Pt(1000, 517):
			p = image.Pt(300, 517)
		}
		out = append(out, p)
	}
	return out
}

// shortTargets is shortQualities for the targets of a strip-resize same-bytes test.
func shortTargets(all ...string) []string {
	if testing.Short() {
		return all[:1]
	}
	return all
}
