package jpegstrip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// photo returns a w x h image of the given kind with smooth gradients and noise, so every
// block has AC energy and DC values that differ between blocks.
func photo(kind string, w, h int, seed uint64) image.Image {
	rng := rand.New(rand.NewPCG(seed, uint64(w)<<32|uint64(h)))
	r := image.Rect(0, 0, w, h)
	px := func(x, y, c int) uint8 {
		v := (x*(3+c) + y*(5-c) + c*40) % 256
		return uint8(min(max(v+rng.IntN(41)-20, 0), 255))
	}
	switch kind {
	case "rgba":
		m := image.NewRGBA(r)
		for y := range h {
			for x := range w {
				m.SetRGBA(x, y, color.RGBA{px(x, y, 0), px(x, y, 1), px(x, y, 2), 255})
			}
		}
		return m
	case "nrgba":
		m := image.NewNRGBA(r)
		for y := range h {
			for x := range w {
				m.SetNRGBA(x, y, color.NRGBA{px(x, y, 0), px(x, y, 1), px(x, y, 2), px(x, y, 3)})
			}
		}
		return m
	case "gray":
		m := image.NewGray(r)
		for y := range h {
			for x := range w {
				m.SetGray(x, y, color.Gray{px(x, y, 0)})
			}
		}
		return m
	case "ycbcr420", "ycbcr444", "ycbcr422":
		ratio := map[string]image.YCbCrSubsampleRatio{
			"ycbcr420": image.YCbCrSubsampleRatio420,
			"ycbcr444": image.YCbCrSubsampleRatio444,
			"ycbcr422": image.YCbCrSubsampleRatio422,
		}[kind]
		m := image.NewYCbCr(r, ratio)
		for y := range h {
			for x := range w {
				m.Y[m.YOffset(x, y)] = px(x, y, 0)
				ci := m.COffset(x, y)
				m.Cb[ci], m.Cr[ci] = px(x, y, 1), px(x, y, 2)
			}
		}
		return m
	}
	panic("unknown kind " + kind)
}

// decodedEqual decodes both JPEGs with image/jpeg and reports whether their pixels differ.
func decodedEqual(t testing.TB, got, want []byte) {
	t.Helper()
	g, err := jpeg.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("decoding the spliced JPEG: %v", err)
	}
	w, err := jpeg.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatalf("decoding jpeg.Encode's output: %v", err)
	}
	if g.Bounds() != w.Bounds() {
		t.Fatalf("bounds %v, want %v", g.Bounds(), w.Bounds())
	}
	switch wm := w.(type) {
	case *image.Gray:
		gm, ok := g.(*image.Gray)
		if !ok || !bytes.Equal(gm.Pix, wm.Pix) {
			t.Fatalf("gray pixels differ (%T)", g)
		}
	case *image.YCbCr:
		gm, ok := g.(*image.YCbCr)
		if !ok || gm.SubsampleRatio != wm.SubsampleRatio {
			t.Fatalf("decoded %T, want %T %v", g, w, wm.SubsampleRatio)
		}
		for _, p := range [][2][]byte{{gm.Y, wm.Y}, {gm.Cb, wm.Cb}, {gm.Cr, wm.Cr}} {
			if !bytes.Equal(p[0], p[1]) {
				t.Fatal("YCbCr pixels differ")
			}
		}
	default:
		t.Fatalf("image/jpeg decoded %T", w)
	}
}

func whole(t testing.TB, img image.Image, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func spliced(t testing.TB, img image.Image, q, workers, mcuRows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := encode(context.Background(), &buf, img, &jpeg.Options{Quality: q}, workers, mcuRows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restartInterval returns the DRI value of a JPEG, or -1 when it has none.
func restartInterval(b []byte) int {
	i := bytes.Index(b, []byte{0xff, markerDRI, 0, 4})
	if i < 0 {
		return -1
	}
	return int(b[i+4])<<8 | int(b[i+5])
}

func TestEncode_SameAsWholeImage(t *testing.T) {
	kinds := []string{"rgba", "ycbcr420", "ycbcr444", "ycbcr422", "gray", "nrgba"}
	sizes := []image.Point{{1, 1}, {17, 33}, {16, 16}, {33, 17}, {8, 100}, {100, 8}, {250, 190}, {401, 301}}
	for _, kind := range kinds {
		for _, sz := range sizes {
			img := photo(kind, sz.X, sz.Y, 1)
			for _, q := range []int{1, 50, 85, 100} {
				want := whole(t, img, q)
				for _, mcuRows := range []int{1, 2, 3, 0} {
					t.Run(fmt.Sprintf("%s/%dx%d/q%d/rows%d", kind, sz.X, sz.Y, q, mcuRows), func(t *testing.T) {
						got := spliced(t, img, q, 3, mcuRows)
						decodedEqual(t, got, want)
					})
				}
			}
		}
	}
}

func TestEncode_EveryQuality(t *testing.T) {
	for _, kind := range []string{"rgba", "gray"} {
		img := photo(kind, 61, 75, 2)
		for q := 1; q <= 100; q++ {
			got := spliced(t, img, q, 2, 1)
			if restartInterval(got) < 0 {
				t.Fatalf("%s q%d: no DRI segment, so the image was not split", kind, q)
			}
			decodedEqual(t, got, whole(t, img, q))
		}
	}
	// Out-of-range qualities are clipped the same way, and nil options mean the default.
	img := photo("rgba", 40, 40, 3)
	for _, q := range []int{-5, 0, 101, 1000} {
		decodedEqual(t, spliced(t, img, q, 2, 1), whole(t, img, q))
	}
	var got, want bytes.Buffer
	if err := encode(context.Background(), &got, img, nil, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&want, img, nil); err != nil {
		t.Fatal(err)
	}
	decodedEqual(t, got.Bytes(), want.Bytes())
}

// A sub-image whose bounds do not start at the origin is cut at its own MCU rows.
func TestEncode_OffsetBounds(t *testing.T) {
	for _, kind := range []string{"rgba", "ycbcr420", "gray"} {
		big := photo(kind, 120, 130, 4)
		img := big.(subImager).SubImage(image.Rect(7, 11, 113, 127))
		decodedEqual(t, spliced(t, img, 85, 2, 1), whole(t, img, 85))
	}
}

// Encode's own strip height: a few MCU rows, and a restart interval that fits in 16 bits even
// at the widest image JPEG can hold.
func TestEncode_DefaultStrips(t *testing.T) {
	for _, tc := range []struct {
		kind string
		w, h int
	}{{"rgba", 4000, 200}, {"gray", 65535, 40}, {"rgba", 65535, 40}, {"rgba", 3, 200}} {
		img := photo(tc.kind, tc.w, tc.h, 5)
		var buf bytes.Buffer
		if err := Encode(context.Background(), &buf, img, &jpeg.Options{Quality: 85}, 0); err != nil {
			t.Fatal(err)
		}
		p := newPlan(img.Bounds(), tc.kind == "gray", 0)
		if p.ri > 0xffff || p.n < 2 {
			t.Fatalf("%s %dx%d: plan %+v", tc.kind, tc.w, tc.h, p)
		}
		if got := restartInterval(buf.Bytes()); got != p.ri {
			t.Fatalf("%s %dx%d: DRI %d, want %d", tc.kind, tc.w, tc.h, got, p.ri)
		}
		decodedEqual(t, buf.Bytes(), whole(t, img, 85))
	}
	p := newPlan(image.Rect(0, 0, 4000, 3000), false, 0)
	if rows := p.stripH / 16; rows < minStripMCURows || rows > maxStripMCURows {
		t.Fatalf("12 MP strips are %d MCU rows", rows)
	}
}

func TestEncode_Deterministic(t *testing.T) {
	img := photo("rgba", 300, 257, 6)
	want := spliced(t, img, 85, 1, 1)
	for _, workers := range []int{2, 3, 8, 64} {
		if got := spliced(t, img, 85, workers, 1); !bytes.Equal(got, want) {
			t.Fatalf("%d workers wrote different bytes than 1", workers)
		}
	}
}

// Small images (one strip) and images image/jpeg refuses go to jpeg.Encode as they are.
func TestEncode_FallsBackToJPEGEncode(t *testing.T) {
	img := photo("rgba", 30, 16, 7)
	var got bytes.Buffer
	if err := Encode(context.Background(), &got, img, &jpeg.Options{Quality: 85}, 2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), whole(t, img, 85)) {
		t.Fatal("one-strip image: not jpeg.Encode's bytes")
	}
	calls := 0
	got.Reset()
	err := EncodeStrips(context.Background(), &got, img.Bounds(), false, &jpeg.Options{Quality: 85}, 2,
		func(_ context.Context, r image.Rectangle) (image.Image, error) {
			calls++
			if r != img.Bounds() {
				t.Errorf("strip %v, want the whole image", r)
			}
			return img, nil
		})
	if err != nil || calls != 1 || !bytes.Equal(got.Bytes(), whole(t, img, 85)) {
		t.Fatalf("one-strip EncodeStrips: %v, %d calls", err, calls)
	}
	tooWide := image.NewGray(image.Rect(0, 0, 1<<16, 1))
	if err := Encode(context.Background(), &bytes.Buffer{}, tooWide, nil, 2); err == nil {
		t.Fatal("a 65536-wide image encoded")
	}
}

// EncodeStrips asks for every strip once, top to bottom; rows written into the image only
// when their strip is asked for give the whole image's pixels (the race detector would also
// see a strip read before it was asked for).
func TestEncodeStrips_RowsOnDemand(t *testing.T) {
	src := photo("rgba", 97, 203, 8).(*image.RGBA)
	img := image.NewRGBA(src.Rect)
	var mu sync.Mutex
	var asked []int
	strip := func(_ context.Context, r image.Rectangle) (image.Image, error) {
		mu.Lock()
		asked = append(asked, r.Min.Y)
		mu.Unlock()
		copy(img.Pix[r.Min.Y*img.Stride:r.Max.Y*img.Stride], src.Pix[r.Min.Y*src.Stride:])
		return img.SubImage(r), nil
	}
	var got bytes.Buffer
	if err := encodeStrips(context.Background(), &got, src.Rect, false, &jpeg.Options{Quality: 85}, 3, strip, nil, 1); err != nil {
		t.Fatal(err)
	}
	if len(asked) != (203+15)/16 {
		t.Fatalf("%d strips asked for, want %d", len(asked), (203+15)/16)
	}
	slices.Sort(asked)
	for i, y := range asked {
		if y != 16*i {
			t.Fatalf("strips asked for at rows %v", asked)
		}
	}
	decodedEqual(t, got.Bytes(), whole(t, src, 85))

	// A strip of the wrong size or kind is an error, not a broken file.
	for name, f := range map[string]func(r image.Rectangle) image.Image{
		"short strip": func(r image.Rectangle) image.Image { return src.SubImage(r.Inset(1)) },
		"gray strip":  func(r image.Rectangle) image.Image { return image.NewGray(r) },
	} {
		err := encodeStrips(context.Background(), &bytes.Buffer{}, src.Rect, false, nil, 2,
			func(_ context.Context, r image.Rectangle) (image.Image, error) { return f(r), nil }, nil, 1)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// noLeak fails the test if goroutines started during it are still running shortly after.
func noLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(testtime.Scale(30 * time.Second))
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left running:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

type failWriter struct{ n, after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n++; f.n > f.after {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// holdWriter's first Write waits until hold is closed, then lets the goroutines that were
// ready run.
type holdWriter struct {
	hold  chan struct{}
	wrote bool
}

func (h *holdWriter) Write(p []byte) (int, error) {
	if !h.wrote {
		h.wrote = true
		<-h.hold
		for range 10 {
			runtime.Gosched()
		}
	}
	return len(p), nil
}

func TestEncodeStrips_Errors(t *testing.T) {
	img := photo("rgba", 64, 300, 9).(*image.RGBA)
	opts := &jpeg.Options{Quality: 85}
	errStop := errors.New("decoder failed")
	run := func(ctx context.Context, w io.Writer, f func(ctx context.Context, r image.Rectangle) error) error {
		return encodeStrips(ctx, w, img.Rect, false, opts, 2, func(ctx context.Context, r image.Rectangle) (image.Image, error) {
			if err := f(ctx, r); err != nil {
				return nil, err
			}
			return img.SubImage(r), nil
		}, nil, 1)
	}
	ok := func(context.Context, image.Rectangle) error { return nil }

	t.Run("strip error", func(t *testing.T) {
		noLeak(t)
		err := run(context.Background(), &bytes.Buffer{}, func(_ context.Context, r image.Rectangle) error {
			if r.Max.Y > 100 {
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("got %v, want %v", err, errStop)
		}
	})
	t.Run("strips block until ctx is cancelled", func(t *testing.T) {
		noLeak(t)
		ctx, cancel := context.WithCancel(context.Background())
		err := run(ctx, &bytes.Buffer{}, func(ctx context.Context, r image.Rectangle) error {
			if r.Max.Y > 50 {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("a later strip fails while an earlier one blocks", func(t *testing.T) {
		noLeak(t)
		err := run(context.Background(), &bytes.Buffer{}, func(ctx context.Context, r image.Rectangle) error {
			switch r.Min.Y {
			case 0:
				<-ctx.Done() // released only by the other strip's error
				return ctx.Err()
			case 16:
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("got %v, want %v", err, errStop)
		}
	})
	t.Run("an earlier strip sees the cancel while the writer is busy", func(t *testing.T) {
		// Strip 0 is written through a Write that holds the writer until strip 1 has seen the
		// cancel caused by strip 2's error and returned it: the writer then finds strip 1's
		// context.Canceled and ctx done at once, and must report strip 2's error (at a load of
		// 16 convert/image's tiled-TIFF test got "context canceled" instead of the decode error).
		noLeak(t)
		for range 20 {
			strip1 := make(chan struct{})
			w := &holdWriter{hold: strip1}
			err := run(context.Background(), w, func(ctx context.Context, r image.Rectangle) error {
				switch r.Min.Y {
				case 16:
					<-ctx.Done()
					defer close(strip1)
					return ctx.Err()
				case 32:
					return errStop
				}
				return nil
			})
			if !errors.Is(err, errStop) {
				t.Fatalf("got %v, want %v", err, errStop)
			}
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		noLeak(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := run(ctx, &bytes.Buffer{}, ok); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if err := Encode(ctx, &bytes.Buffer{}, img, opts, 2); !errors.Is(err, context.Canceled) {
			t.Fatalf("Encode: got %v, want context.Canceled", err)
		}
	})
	t.Run("strip panics", func(t *testing.T) {
		noLeak(t)
		err := run(context.Background(), &bytes.Buffer{}, func(_ context.Context, r image.Rectangle) error {
			if r.Max.Y > 100 {
				panic("boom")
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("got %v, want the panic as an error", err)
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		noLeak(t)
		for after := range 5 {
			err := run(context.Background(), &failWriter{after: after}, ok)
			if err == nil || err.Error() != "disk full" {
				t.Fatalf("after %d writes: got %v", after, err)
			}
		}
	})
}

// The layout checks pass on what image/jpeg writes today and fail loudly on anything the
// splice could not handle, as a Go upgrade might bring.
func TestParse(t *testing.T) {
	for _, kind := range []string{"rgba", "gray"} {
		comps := 3
		if kind == "gray" {
			comps = 1
		}
		b := whole(t, photo(kind, 40, 24, 10), 85)
		l, err := parse(b, 40, 24, comps)
		if err != nil {
			t.Fatalf("%s: image/jpeg's own output: %v", kind, err)
		}
		if h := int(l.tables[l.heightAt])<<8 | int(l.tables[l.heightAt+1]); h != 24 {
			t.Fatalf("%s: height field reads %d", kind, h)
		}
		if _, err := parse(b, 41, 24, comps); !errors.Is(err, ErrLayout) {
			t.Fatalf("%s: wrong width accepted: %v", kind, err)
		}
	}

	b := whole(t, photo("rgba", 40, 24, 10), 85)
	sos := bytes.Index(b, []byte{0xff, markerSOS})
	sof := bytes.Index(b, []byte{0xff, markerSOF0})
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(b)) }
	insert := func(at int, p ...byte) []byte {
		return edit(func(b []byte) []byte { return append(b[:at:at], append(p, b[at:]...)...) })
	}
	bad := map[string][]byte{
		"APP0 segment":      insert(2, 0xff, 0xe0, 0, 4, 'J', 'F'),
		"DRI segment":       insert(sos, 0xff, markerDRI, 0, 4, 0, 1),
		"progressive SOF2":  edit(func(b []byte) []byte { b[sof+1] = 0xc2; return b }),
		"4:4:4 sampling":    edit(func(b []byte) []byte { b[sof+11] = 0x11; return b }),
		"12-bit samples":    edit(func(b []byte) []byte { b[sof+4] = 12; return b }),
		"no EOI":            b[:len(b)-2],
		"trailing bytes":    append(bytes.Clone(b), 0),
		"RST in the data":   insert(len(b)-10, 0xff, markerRST0),
		"0xff before EOI":   insert(len(b)-2, 0xff),
		"second scan":       insert(len(b)-2, b[sos:sos+14]...),
		"truncated segment": b[:sof+6],
		"no SOI":            b[2:],
		"empty":             nil,
	}
	for name, b := range bad {
		if _, err := parse(b, 40, 24, 3); !errors.Is(err, ErrLayout) {
			t.Errorf("%s: got %v, want ErrLayout", name, err)
		}
	}

	// Strips written with other tables cannot share the first strip's.
	l1, _ := parse(b, 40, 24, 3)
	other := whole(t, photo("rgba", 40, 24, 10), 84)
	l2, err := parse(other, 40, 24, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameTables(l1, l2); !errors.Is(err, ErrLayout) {
		t.Fatalf("different quality: got %v", err)
	}
	l3, _ := parse(whole(t, photo("rgba", 40, 40, 11), 85), 40, 40, 3)
	if err := sameTables(l1, l3); err != nil {
		t.Fatalf("same tables, other height: %v", err)
	}
}

// libjpeg, when installed, decodes the spliced file to the same pixels as the whole-image
// encoding: restart markers are read the same way by a second, independent decoder.
func TestEncode_DecodesWithLibjpeg(t *testing.T) {
	djpeg, err := exec.LookPath("djpeg")
	if err != nil {
		t.Skip("djpeg (libjpeg-turbo-progs) is not installed")
	}
	dir := t.TempDir()
	for _, kind := range []string{"rgba", "gray"} {
		img := photo(kind, 333, 250, 12)
		var out [2][]byte
		for i, data := range [][]byte{spliced(t, img, 85, 2, 1), whole(t, img, 85)} {
			path := filepath.Join(dir, fmt.Sprintf("%s%d.jpg", kind, i))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if out[i], err = exec.Command(djpeg, path).Output(); err != nil {
				t.Fatalf("djpeg %s: %v", kind, err)
			}
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Fatalf("%s: libjpeg decodes the spliced file differently", kind)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	img := photo("rgba", 4000, 3000, 13)
	opts := &jpeg.Options{Quality: 85}
	b.Run("jpeg.Encode", func(b *testing.B) {
		for b.Loop() {
			if err := jpeg.Encode(&appendWriter{}, img, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, rows := range []int{1, 2, 4, 8, 16, 0} {
		b.Run(fmt.Sprintf("strips/rows%d", rows), func(b *testing.B) {
			for b.Loop() {
				if err := encode(context.Background(), &appendWriter{}, img, opts, 0, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
