package convert

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/bytesize"
)

func TestDefaultConversionMemory(t *testing.T) {
	got := DefaultConversionMemory()
	if got <= 0 {
		t.Fatalf("DefaultConversionMemory() = %d", got)
	}
	if total := memTotal(); total > 0 && got > total/2 {
		t.Errorf("DefaultConversionMemory() = %d, over half of MemTotal %d", got, total)
	}
	t.Logf("default conversion memory budget: %s", bytesize.Format(got))
	if l := (Limits{}).Normalized(); l.MaxConversionMemory != got {
		t.Errorf("normalized MaxConversionMemory = %d, want %d", l.MaxConversionMemory, got)
	}
}

func TestMemBudget_FIFO(t *testing.T) {
	b := newMemBudget(10)
	ctx := context.Background()
	if err := b.acquire(ctx, 6, "a"); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	var wg sync.WaitGroup
	start := func(name string, n int64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.acquire(ctx, n, name); err != nil {
				t.Error(err)
				return
			}
			order <- name
		}()
	}
	start("big", 8)
	waitFor(t, "one waiter", func() bool { return waiters(b) == 1 })
	// Fits beside "a", but "big" is queued first and must not be overtaken.
	start("small", 3)
	waitFor(t, "two waiters", func() bool { return waiters(b) == 2 })
	b.release(6)
	if got := <-order; got != "big" {
		t.Fatalf("%s was served first, want big", got)
	}
	if waiters(b) != 1 {
		t.Fatalf("small does not fit beside big, yet %d waiters remain", waiters(b))
	}
	b.release(8)
	if got := <-order; got != "small" {
		t.Fatalf("%s was served second", got)
	}
	wg.Wait()
	if b.inUse() != 3 {
		t.Errorf("in use %d, want 3", b.inUse())
	}
}

func TestMemBudget_Cancel(t *testing.T) {
	b := newMemBudget(10)
	if err := b.acquire(context.Background(), 10, "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.acquire(ctx, 5, "b") }()
	waitFor(t, "one waiter", func() bool { return waiters(b) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if waiters(b) != 0 {
		t.Error("a cancelled waiter stayed queued")
	}
	b.release(10)
	if b.inUse() != 0 {
		t.Errorf("in use %d after every release", b.inUse())
	}
}

func TestMemBudget_TooLarge(t *testing.T) {
	b := newMemBudget(1 << 20)
	err := b.acquire(context.Background(), 3<<30, "converting this")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if want := "converting this needs an estimated 3.0 GiB of memory, over the 1.0 MiB conversion memory budget (--max-conversion-memory); make the image smaller"; ce.Message != want {
		t.Errorf("Message = %q\nwant      %q", ce.Message, want)
	}
}

func waiters(b *memBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
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

// TestImage_MemoryBudget runs two conversions whose estimates together exceed the budget:
// the second waits until the first has finished, then runs.
func TestImage_MemoryBudget(t *testing.T) {
	// A 300x300 PNG to BMP writes 270 KB: more than runStep's 64 KB buffer, so the encoder
	// itself blocks in the blocking writer while its share of the budget is held.
	src := encodeTemp(t, testimg.Photo(300, 300))
	png, bmp := imageCodecByID("png"), imageCodecByID("bmp")
	est := memoryEstimate(png, bmp, 1, 300*300, 300*300, false, false)
	c := NewCatalog(Limits{MaxConversionMemory: est * 3 / 2})

	run := func(w io.Writer) chan error {
		done := make(chan error, 1)
		go func() {
			done <- c.Convert(context.Background(), "png", "bmp", Options{}, openFile(t, src), w, t.TempDir())
		}()
		return done
	}
	first, second := newBlockingWriter(), newBlockingWriter()
	firstDone := run(first)
	<-first.started
	if got := c.budget.inUse(); got != est {
		t.Fatalf("budget in use %d during the first conversion, want its estimate %d", got, est)
	}
	secondDone := run(second)
	waitFor(t, "the second conversion to wait", func() bool { return waiters(c.budget) == 1 })
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
	if got := c.budget.inUse(); got != 0 {
		t.Errorf("budget in use %d after both finished", got)
	}

	// A conversion whose estimate exceeds the whole budget fails at once.
	c = NewCatalog(Limits{MaxConversionMemory: 1 << 20})
	err := c.Convert(context.Background(), "png", "bmp", Options{}, openFile(t, src), io.Discard, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, "converting this 300x300 PNG to BMP needs an estimated ") ||
		!strings.HasSuffix(ce.Message, " of memory, over the 1.0 MiB conversion memory budget (--max-conversion-memory); make the image smaller") {
		t.Errorf("err = %v, want the budget exceeded", err)
	}
}

// TestImage_MemoryEstimates keeps the estimates at or a little above the peak RSS that
// TestImageMeasure found converting 12-megapixel images (in MiB: PNG to JPEG 47, to WebP 347,
// to lossless WebP 703, to AVIF 1342; AVIF to PNG 407; JPEG XL to PNG 326; TIFF to PNG 179).
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
		{"png", "avif", false, 1342, 1600},
		{"avif", "png", false, 407, 600},
		{"jxl", "png", false, 326, 450},
		{"tiff", "png", false, 179, 300},
	} {
		est := memoryEstimate(imageCodecByID(tt.from), imageCodecByID(tt.to), 1, px, px, false, tt.lossless)
		if mb := est >> 20; mb < tt.lo || mb > tt.hi {
			t.Errorf("%s to %s (lossless %v) at 12 MP: %d MiB, want %d..%d", tt.from, tt.to, tt.lossless, mb, tt.lo, tt.hi)
		}
	}
}
