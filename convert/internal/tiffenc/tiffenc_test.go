package tiffenc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

func encode(t testing.TB, m image.Image, o *Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(context.Background(), &buf, m, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(t testing.TB, b []byte) image.Image {
	t.Helper()
	d, err := tiff.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("x/image/tiff cannot decode the output: %v", err)
	}
	return d
}

// wantDecoded is what x/image/tiff must give back for m: the same type and bytes, except that
// opaque RGBA and NRGBA come back as *image.RGBA (three samples are read as RGBA).
func wantDecoded(m image.Image) image.Image {
	b := m.Bounds()
	r := image.Rect(0, 0, b.Dx(), b.Dy())
	switch s := m.(type) {
	case *image.Gray:
		d := image.NewGray(r)
		draw.Draw(d, r, s, b.Min, draw.Src)
		return d
	case *image.NRGBA:
		if !s.Opaque() {
			d := image.NewNRGBA(r)
			draw.Draw(d, r, s, b.Min, draw.Src)
			return d
		}
	}
	d := image.NewRGBA(r)
	draw.Draw(d, r, m, b.Min, draw.Src)
	return d
}

// sameColours compares two images pixel by pixel as 16-bit premultiplied colours.
func sameColours(a, b image.Image) bool {
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Size() != bb.Size() {
		return false
	}
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1, a1 := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := [][2]int{{1, 1}, {3, 2}, {1, 65}, {17, 64}, {33, 129}, {100, 70}}
	opts := []*Options{nil, {RowsPerStrip: 1}, {RowsPerStrip: 7, Workers: 3, Level: 9}, {NoPredictor: true, Level: 1}}
	for _, kind := range []string{"gray", "nrgba", "rgba"} {
		for _, opaque := range []bool{false, true} {
			for _, sub := range []bool{false, true} {
				for _, sz := range sizes {
					m := testimg.Random(rng, kind, sz[0], sz[1], opaque, sub)
					want := wantDecoded(m)
					var xbuf bytes.Buffer
					if err := tiff.Encode(&xbuf, m, &tiff.Options{Compression: tiff.Deflate}); err != nil {
						t.Fatal(err)
					}
					theirs := decode(t, xbuf.Bytes())
					for oi, o := range opts {
						got := decode(t, encode(t, m, o))
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s opaque=%v sub=%v %dx%d options %d: decoded %T differs from the source",
								kind, opaque, sub, sz[0], sz[1], oi, got)
						}
						if !sameColours(got, theirs) {
							t.Fatalf("%s opaque=%v sub=%v %dx%d options %d: colours differ from x/image/tiff's own output",
								kind, opaque, sub, sz[0], sz[1], oi)
						}
					}
				}
			}
		}
	}
}

// TestFlat covers the graphics path: flat panels with and without alpha.
func TestFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kind := range []string{"gray", "nrgba", "rgba"} {
		for _, opaque := range []bool{false, true} {
			m := testimg.Random(rng, kind, 150, 301, opaque, false).(draw.Image)
			for range 20 {
				x, y := rng.IntN(150), rng.IntN(301)
				c := m.At(rng.IntN(150), rng.IntN(301))
				draw.Draw(m, image.Rect(x, y, x+60, y+90), &image.Uniform{c}, image.Point{}, draw.Src)
			}
			draw.Draw(m, image.Rect(0, 0, 150, 200), &image.Uniform{m.At(3, 250)}, image.Point{}, draw.Src)
			l, _ := newLayout(m)
			if !flat(l) {
				t.Fatalf("%s: not seen as flat", kind)
			}
			if got := decode(t, encode(t, m, nil)); !reflect.DeepEqual(got, wantDecoded(m)) {
				t.Errorf("%s opaque=%v: decoded image differs from the source", kind, opaque)
			}
		}
	}
	if l, _ := newLayout(testimg.Photo(100, 100)); flat(l) {
		t.Error("photo seen as flat")
	}
}

func TestLayout(t *testing.T) {
	for _, c := range []struct {
		m          image.Image
		spp, extra int
	}{
		{testimg.Photo(5, 5), 3, 0},
		{testimg.PhotoAlpha(5, 5), 4, 2},
		{image.NewRGBA(image.Rect(0, 0, 5, 5)), 4, 1}, // transparent black
		{image.NewGray(image.Rect(0, 0, 5, 5)), 1, 0},
	} {
		b := encode(t, c.m, nil)
		cfg, err := tiff.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		l, _ := newLayout(c.m)
		if l.spp != c.spp || l.extra != c.extra {
			t.Errorf("%T: %d samples, extra %d; want %d, %d (%v)", c.m, l.spp, l.extra, c.spp, c.extra, cfg.ColorModel)
		}
	}
}

func TestUnsupportedAndErrors(t *testing.T) {
	for _, m := range []image.Image{
		image.NewRGBA64(image.Rect(0, 0, 2, 2)),
		image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black}),
	} {
		if Supported(m) {
			t.Errorf("Supported(%T)", m)
		}
		if err := Encode(context.Background(), io.Discard, m, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%T: err = %v", m, err)
		}
	}
	if err := Encode(context.Background(), io.Discard, image.NewGray(image.Rect(0, 0, 3, 0)), nil); err == nil {
		t.Error("empty image: no error")
	}
	if err := Encode(context.Background(), io.Discard, image.NewGray(image.Rect(0, 0, 3, 3)), &Options{Level: 10}); err == nil {
		t.Error("level 10: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Encode(ctx, io.Discard, testimg.Photo(50, 300), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	for _, n := range []int{0, 8, 1000, 30000} {
		if err := Encode(context.Background(), &failWriter{n: n}, testimg.Photo(50, 300), &Options{RowsPerStrip: 16}); err == nil || err.Error() != "disk full" {
			t.Errorf("writer failing after %d bytes: err = %v", n, err)
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

// TestOtherReaders has vips and ImageMagick, when installed, read the output and write a PNG
// whose pixels must equal the source's.
func TestOtherReaders(t *testing.T) {
	dir := t.TempDir()
	photo := testimg.Photo(301, 203)
	alpha := testimg.PhotoAlpha(301, 203)
	gray := image.NewGray(photo.Rect)
	draw.Draw(gray, gray.Rect, photo, image.Point{}, draw.Src)
	ran := false
	for name, m := range map[string]image.Image{"rgb": photo, "nrgba": alpha, "gray": gray} {
		in := filepath.Join(dir, name+".tif")
		if err := os.WriteFile(in, encode(t, m, &Options{RowsPerStrip: 16}), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tool := range [][]string{
			{"vips", "copy", in, filepath.Join(dir, name+"-vips.png")},
			{"convert-im6.q16", in, filepath.Join(dir, name+"-im.png")},
			{"tiffinfo", "-D", in},
		} {
			if _, err := exec.LookPath(tool[0]); err != nil {
				continue
			}
			ran = true
			out, err := exec.Command(tool[0], tool[1:]...).CombinedOutput()
			if err != nil || bytes.Contains(out, []byte("Warning")) || bytes.Contains(out, []byte("rror")) {
				t.Errorf("%s on %s: %v\n%s", tool[0], name, err, out)
				continue
			}
			if tool[0] == "tiffinfo" {
				continue
			}
			f, err := os.Open(tool[len(tool)-1])
			if err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s's PNG: %v", tool[0], err)
			}
			if !sameNRGBA(got, m) {
				t.Errorf("%s read %s with different pixels", tool[0], name)
			}
		}
	}
	if !ran {
		t.Skip("none of vips, convert-im6.q16, tiffinfo is installed")
	}
}

// sameNRGBA compares non-premultiplied 8-bit colours (what a PNG writer stores).
func sameNRGBA(a, b image.Image) bool {
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Size() != bb.Size() {
		return false
	}
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			c1 := color.NRGBAModel.Convert(a.At(ab.Min.X+x, ab.Min.Y+y)).(color.NRGBA)
			c2 := color.NRGBAModel.Convert(b.At(bb.Min.X+x, bb.Min.Y+y)).(color.NRGBA)
			if c1.A == 0 && c2.A == 0 {
				continue
			}
			if c1 != c2 {
				return false
			}
		}
	}
	return true
}
