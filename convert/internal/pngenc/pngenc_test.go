package pngenc

import (
	"bytes"
	"context"
	"errors"
	"hash/adler32"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// stdRoundTrip is what image/png stores for m, decoded.
func stdRoundTrip(t testing.TB, m image.Image) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	d, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ourRoundTrip(t testing.TB, m image.Image, o *Options) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(context.Background(), &buf, m, o); err != nil {
		t.Fatal(err)
	}
	d, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("image/png cannot decode the output: %v", err)
	}
	return d
}

func TestMatchesImagePNG(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := [][2]int{{1, 1}, {2, 3}, {17, 1}, {1, 40}, {31, 33}, {100, 70}}
	opts := []*Options{
		nil,
		{BandRows: 1},
		{BandRows: 3, Workers: 3},
		{Filter: FilterNone, BandRows: 5},
		{Filter: FilterPaeth, Compressor: Klauspost, BandRows: 6},
		{Filter: FilterSub, Level: 3},
		{Filter: FilterUp, Compressor: Stdlib, BandRows: 7},
		{Compressor: Stdlib, BandRows: 9},
		{Filter: FilterAverage, Level: 9},
		{Filter: FilterAdaptive, BandRows: 2},
		{Filter: FilterMinSAD, BandRows: 4},
	}
	for _, kind := range []string{"gray", "nrgba", "rgba"} {
		for _, opaque := range []bool{false, true} {
			for _, sub := range []bool{false, true} {
				for _, sz := range sizes {
					m := testimg.Random(rng, kind, sz[0], sz[1], opaque, sub)
					want := stdRoundTrip(t, m)
					for oi, o := range opts {
						got := ourRoundTrip(t, m, o)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s opaque=%v sub=%v %dx%d options %d: decoded %T differs from image/png's %T",
								kind, opaque, sub, sz[0], sz[1], oi, got, want)
						}
					}
				}
			}
		}
	}
}

func TestRealImages(t *testing.T) {
	photo := testimg.Photo(300, 200)
	alpha := testimg.PhotoAlpha(300, 200)
	rgba := image.NewRGBA(alpha.Rect)
	draw.Draw(rgba, rgba.Rect, alpha, image.Point{}, draw.Src)
	gray := image.NewGray(photo.Rect)
	draw.Draw(gray, gray.Rect, photo, image.Point{}, draw.Src)
	for name, m := range map[string]image.Image{
		"photo": photo, "alpha-nrgba": alpha, "alpha-rgba": rgba, "gray": gray,
		"jpeg-decoded": jpegDecoded(t, photo), "flat": flatGraphic(640, 480),
	} {
		want := stdRoundTrip(t, m)
		for _, o := range []*Options{nil, {BandRows: 13}, {Filter: FilterAdaptive}} {
			if got := ourRoundTrip(t, m, o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %+v: decoded image differs from image/png's", name, o)
			}
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, m := range []image.Image{
		image.NewRGBA64(image.Rect(0, 0, 2, 2)),
		image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black}),
		image.NewYCbCr(image.Rect(0, 0, 2, 2), image.YCbCrSubsampleRatio420),
	} {
		if Supported(m) {
			t.Errorf("Supported(%T) = true", m)
		}
		if err := Encode(context.Background(), io.Discard, m, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%T: err = %v, want ErrUnsupported", m, err)
		}
	}
	if err := Encode(context.Background(), io.Discard, image.NewGray(image.Rect(0, 0, 0, 5)), nil); err == nil {
		t.Error("empty image: no error")
	}
	if err := Encode(context.Background(), io.Discard, image.NewGray(image.Rect(0, 0, 2, 2)), &Options{Level: 12}); err == nil {
		t.Error("level 12: no error")
	}
}

func TestAdler32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		a := make([]byte, rng.IntN(300000))
		b := make([]byte, rng.IntN(300000))
		for i := range a {
			a[i] = uint8(rng.IntN(256))
		}
		for i := range b {
			b[i] = uint8(rng.IntN(256))
		}
		got := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), int64(len(b)))
		if want := adler32.Checksum(append(a, b...)); got != want {
			t.Fatalf("combine(%d, %d bytes) = %08x, want %08x", len(a), len(b), got, want)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrorAndCancel(t *testing.T) {
	m := testimg.Photo(200, 300)
	for _, n := range []int{0, 10, 40, 5000, 100000} {
		err := Encode(context.Background(), &failWriter{n: n}, m, &Options{BandRows: 8})
		if err == nil || err.Error() != "disk full" {
			t.Errorf("writer failing after %d bytes: err = %v", n, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Encode(ctx, io.Discard, m, &Options{BandRows: 8}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func jpegDecoded(t testing.TB, m image.Image) *image.RGBA {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	d, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	rgba := image.NewRGBA(d.Bounds())
	draw.Draw(rgba, rgba.Rect, d, d.Bounds().Min, draw.Src)
	return rgba
}

// flatGraphic draws something like a screenshot: flat panels, rules, blocks of "text" (small
// glyph-like bitmaps), an anti-aliased disc and a gradient bar.
func flatGraphic(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	fill := func(r image.Rectangle, c color.RGBA) {
		draw.Draw(m, r, &image.Uniform{c}, image.Point{}, draw.Src)
	}
	fill(m.Rect, color.RGBA{250, 250, 250, 255})
	fill(image.Rect(0, 0, w, h/12), color.RGBA{45, 62, 80, 255})
	fill(image.Rect(0, h/12, w/5, h), color.RGBA{236, 239, 241, 255})
	for i := 0; i < 12; i++ {
		x0, y0 := rng.IntN(w), rng.IntN(h)
		fill(image.Rect(x0, y0, x0+20+rng.IntN(w/3), y0+10+rng.IntN(h/4)),
			color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
	}
	var glyphs [40][7]uint8
	for g := range glyphs {
		for r := range glyphs[g] {
			glyphs[g][r] = uint8(rng.IntN(32))
		}
	}
	for ty := h/12 + 10; ty+9 < h; ty += 14 {
		x := w/5 + 12
		for x+6 < w-10 {
			if rng.IntN(7) == 0 {
				x += 5
				continue
			}
			g := glyphs[rng.IntN(len(glyphs))]
			for r := 0; r < 7; r++ {
				for c := 0; c < 5; c++ {
					if g[r]>>c&1 == 1 {
						m.SetRGBA(x+c, ty+r, color.RGBA{30, 30, 30, 255})
					}
				}
			}
			x += 6
		}
	}
	cx, cy, rad := w*3/4, h/2, float64(min(w, h))/6
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := float64(x-cx), float64(y-cy)
			if d := rad - sqrt(dx*dx+dy*dy); d > -1 {
				a := min(1, d+1)
				o := m.RGBAAt(x, y)
				mix := func(bg uint8, fg float64) uint8 { return uint8(float64(bg)*(1-a) + fg*a + 0.5) }
				m.SetRGBA(x, y, color.RGBA{mix(o.R, 220), mix(o.G, 80), mix(o.B, 60), 255})
			}
		}
	}
	for y := h - h/10; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8(255 * x / w)
			m.SetRGBA(x, y, color.RGBA{v, v / 2, 255 - v, 255})
		}
	}
	return m
}

func sqrt(v float64) float64 {
	if v <= 0 {
		return 0
	}
	z := v
	for range 30 {
		z = (z + v/z) / 2
	}
	return z
}

// realFiles are flat graphics that ship with Debian's documentation packages, when present.
var realFiles = []string{
	"/usr/share/doc/nodejs/contributing/doc_img/compare-boxplot.png",
	"/usr/share/doc/nodejs/contributing/doc_img/youtube-stream-analytics.png",
	"/usr/share/doc/valgrind/html/images/kcachegrind_xtree.png",
}

func loadReal(t testing.TB, path string) image.Image {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	switch m.(type) {
	case *image.RGBA, *image.NRGBA, *image.Gray:
		return m
	}
	n := image.NewNRGBA(m.Bounds())
	draw.Draw(n, n.Rect, m, m.Bounds().Min, draw.Src)
	return n
}

func TestRealFiles(t *testing.T) {
	for _, p := range realFiles {
		m := loadReal(t, p)
		if m == nil {
			continue
		}
		if got, want := ourRoundTrip(t, m, nil), stdRoundTrip(t, m); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded image differs from image/png's", p)
		}
	}
}
