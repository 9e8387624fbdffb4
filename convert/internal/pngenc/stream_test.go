package pngenc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// streamBytes encodes m through a StreamEncoder, strip rows at a time.
func streamBytes(t *testing.T, m image.Image, gray bool, strip int, o *Options) []byte {
	t.Helper()
	b := m.Bounds()
	var buf bytes.Buffer
	e, err := NewStreamEncoder(context.Background(), &buf, b.Dx(), b.Dy(), gray, o)
	if err != nil {
		t.Fatal(err)
	}
	for y := b.Min.Y; y < b.Max.Y; y += strip {
		r := image.Rect(b.Min.X, y, b.Max.X, min(y+strip, b.Max.Y))
		if err := e.WriteRows(m.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The streamed PNG is byte for byte Encode's, for photos and graphics (whose bands take the
// other filter and deflater), RGB and gray, strips that do and do not line up with the bands,
// and non-default options.
func TestStreamEncoder_SameBytesAsEncode(t *testing.T) {
	photo := testimg.Photo(701, 389)
	graphic := image.NewRGBA(image.Rect(0, 0, 640, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 640; x++ {
			graphic.Set(x, y, color.RGBA{uint8(x / 64 * 20), uint8(y / 30 * 25), 90, 255})
		}
	}
	gray := image.NewGray(photo.Bounds())
	for y := 0; y < 389; y++ {
		for x := 0; x < 701; x++ {
			gray.Set(x, y, photo.At(x, y))
		}
	}
	cases := map[string]struct {
		m    image.Image
		gray bool
	}{"photo": {photo, false}, "graphic": {graphic, false}, "gray": {gray, true}}
	for name, c := range cases {
		for _, o := range []*Options{nil, {Workers: 3, BandRows: 7, Level: 5}, {Filter: FilterPaeth, Compressor: Stdlib}} {
			var want bytes.Buffer
			if err := Encode(context.Background(), &want, c.m, o); err != nil {
				t.Fatal(err)
			}
			for _, strip := range []int{1, 16, 50, 10000} {
				got := streamBytes(t, c.m, c.gray, strip, o)
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("%s, options %+v, %d-row strips: %d bytes differ from Encode's %d", name, o, strip, len(got), want.Len())
				}
			}
		}
	}
}

// A cancelled context stops the encoder: WriteRows or Close returns the context's error, and
// nothing after the header is ended as a PNG.
func TestStreamEncoder_Cancel(t *testing.T) {
	m := testimg.Photo(500, 400)
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	e, err := NewStreamEncoder(ctx, &buf, 500, 400, false, &Options{BandRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(m.SubImage(image.Rect(0, 0, 500, 100))); err != nil {
		t.Fatal(err)
	}
	cancel()
	werr := e.WriteRows(m.SubImage(image.Rect(0, 100, 500, 400)))
	cerr := e.Close()
	if !errors.Is(cerr, context.Canceled) || (werr != nil && !errors.Is(werr, context.Canceled)) {
		t.Fatalf("WriteRows %v, Close %v: want context.Canceled", werr, cerr)
	}
	if bytes.Contains(buf.Bytes(), []byte("IEND")) {
		t.Error("a cancelled PNG was ended with IEND")
	}
}

// Close reports missing rows instead of ending a short PNG.
func TestStreamEncoder_MissingRows(t *testing.T) {
	var buf bytes.Buffer
	e, err := NewStreamEncoder(context.Background(), &buf, 10, 10, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(image.NewGray(image.Rect(0, 0, 10, 4))); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after 4 of 10 rows: no error")
	}
}

// waitGoroutines fails the test unless the goroutine count falls back to before within a
// generous bound (the encoder's writer and workers end by Close).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines still running:\n%s", n-before, buf[:runtime.Stack(buf, true)])
	}
}

// errDisk is limitWriter's error.
var errDisk = errors.New("disk full")

// limitWriter takes ok bytes, then fails every write with errDisk.
type limitWriter struct{ ok, n int }

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.ok {
		return 0, errDisk
	}
	w.n += len(p)
	return len(p), nil
}

// A write error of the output, in the header or after some bands, is what NewStreamEncoder,
// or WriteRows and Close, return; the PNG is not ended and no goroutine is left.
func TestStreamEncoder_WriteError(t *testing.T) {
	m := testimg.Photo(500, 400)
	for _, ok := range []int{0, 40, 3000} {
		before := runtime.NumGoroutine()
		w := &limitWriter{ok: ok}
		e, err := NewStreamEncoder(context.Background(), w, 500, 400, false, &Options{BandRows: 8, Workers: 2})
		if ok < 33 { // signature and IHDR
			if !errors.Is(err, errDisk) {
				t.Errorf("ok %d: NewStreamEncoder %v, want %v", ok, err, errDisk)
			}
			waitGoroutines(t, before)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var werr error
		for y := 0; y < 400 && werr == nil; y += 10 {
			werr = e.WriteRows(m.SubImage(image.Rect(0, y, 500, y+10)))
		}
		cerr := e.Close()
		if !errors.Is(cerr, errDisk) || (werr != nil && !errors.Is(werr, errDisk)) {
			t.Errorf("ok %d: WriteRows %v, Close %v; want %v", ok, werr, cerr, errDisk)
		}
		if w.n > ok {
			t.Errorf("ok %d: %d bytes taken", ok, w.n)
		}
		waitGoroutines(t, before)
	}
}

// gateWriter takes the PNG signature and IHDR and blocks every later write until open is
// closed, closing blocked when the first of them arrives.
type gateWriter struct {
	bytes.Buffer
	blocked chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (w *gateWriter) Write(p []byte) (int, error) {
	if w.Len() >= 8+25 {
		w.once.Do(func() { close(w.blocked) })
		<-w.open
	}
	return w.Buffer.Write(p)
}

// While the output blocks, WriteRows fills the encoder's queue and then waits; cancelling
// the context ends that wait at once with the context's error (the output still blocked),
// and Close returns it once the output's write returns, leaving no goroutine.
func TestStreamEncoder_CancelWhileOutputBlocks(t *testing.T) {
	m := testimg.Photo(300, 2000)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &gateWriter{blocked: make(chan struct{}), open: make(chan struct{})}
	// The first 256 KiB IDAT chunk is full after a few bands of a photo, so the output blocks
	// long before the 2000 rows are queued.
	e, err := NewStreamEncoder(ctx, w, 300, 2000, false, &Options{BandRows: 16, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() {
		var err error
		for y := 0; y < 2000 && err == nil; y += 16 {
			err = e.WriteRows(m.SubImage(image.Rect(0, y, 300, y+16)))
		}
		werr <- err
	}()
	select {
	case <-w.blocked:
	case err := <-werr:
		t.Fatalf("every row was queued (%v) without the output writing a chunk", err)
	}
	cancel()
	select {
	case err := <-werr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WriteRows %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("WriteRows did not return after the cancel while the output blocked")
	}
	close(w.open)
	if err := e.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close %v, want context.Canceled", err)
	}
	if bytes.Contains(w.Bytes(), []byte("IEND")) {
		t.Error("a cancelled PNG was ended with IEND")
	}
	waitGoroutines(t, before)
}

// A second Close returns an error instead of panicking, and WriteRows after Close refuses.
func TestStreamEncoder_CloseTwice(t *testing.T) {
	var buf bytes.Buffer
	e, err := NewStreamEncoder(context.Background(), &buf, 4, 2, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(image.NewGray(image.Rect(0, 0, 4, 2))); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	n := buf.Len()
	if err := e.Close(); !errors.Is(err, errEncoderFailed) {
		t.Errorf("second Close: %v, want errEncoderFailed", err)
	}
	if err := e.WriteRows(image.NewGray(image.Rect(0, 0, 4, 1))); !errors.Is(err, errEncoderFailed) {
		t.Errorf("WriteRows after Close: %v, want errEncoderFailed", err)
	}
	if buf.Len() != n {
		t.Errorf("%d bytes written after Close", buf.Len()-n)
	}
}
