package stripscale

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/draw"
)

// noisy fills an image of the given type with random pixels over smooth gradients, with
// translucent and fully transparent pixels where the type has alpha.
func noisy(kind string, w, h int, seed uint64) image.Image {
	rng := rand.New(rand.NewPCG(seed, 21))
	r := image.Rect(0, 0, w, h)
	px := func(x, y int) (uint8, uint8, uint8, uint8) {
		a := uint8(255)
		switch rng.IntN(5) {
		case 0:
			a = 0
		case 1:
			a = uint8(rng.IntN(256))
		}
		return uint8(x*255/w) ^ uint8(rng.IntN(32)), uint8(y*255/h) ^ uint8(rng.IntN(64)), uint8(rng.IntN(256)), a
	}
	switch kind {
	case "gray":
		m := image.NewGray(r)
		for i := range m.Pix {
			m.Pix[i] = uint8(i%w*255/w) ^ uint8(rng.IntN(48))
		}
		return m
	case "rgba": // opaque, as PNG truecolor and PPM decode
		m := image.NewRGBA(r)
		for y := range h {
			for x := range w {
				cr, cg, cb, _ := px(x, y)
				m.SetRGBA(x, y, color.RGBA{cr, cg, cb, 255})
			}
		}
		return m
	case "rgba-premul": // associated alpha (TIFF)
		m := image.NewRGBA(r)
		for y := range h {
			for x := range w {
				cr, cg, cb, a := px(x, y)
				m.Set(x, y, color.NRGBA{cr, cg, cb, a})
			}
		}
		return m
	case "nrgba":
		m := image.NewNRGBA(r)
		for y := range h {
			for x := range w {
				cr, cg, cb, a := px(x, y)
				m.SetNRGBA(x, y, color.NRGBA{cr, cg, cb, a})
			}
		}
		return m
	case "paletted":
		pal := make(color.Palette, 0, 256)
		for i := range 200 {
			if i%3 == 0 {
				pal = append(pal, color.NRGBA{uint8(i), uint8(255 - i), uint8(i * 7), uint8(i)})
			} else {
				pal = append(pal, color.RGBA{uint8(i), uint8(i * 3), uint8(255 - i), 255})
			}
		}
		for len(pal) < 256 {
			pal = append(pal, color.RGBA{0, 0, 0, 255})
		}
		m := image.NewPaletted(r, pal)
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.IntN(256))
		}
		return m
	case "paletted-short": // fewer than 256 entries: the RGBA64At path
		pal := color.Palette{color.RGBA{255, 0, 0, 255}, color.NRGBA{0, 255, 0, 128}, color.RGBA{0, 0, 0, 0}, color.Gray{200}}
		m := image.NewPaletted(r, pal)
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.IntN(len(pal)))
		}
		return m
	case "gray16": // any other type: RGBA64At
		m := image.NewGray16(r)
		for y := range h {
			for x := range w {
				m.SetGray16(x, y, color.Gray16{uint16(rng.IntN(65536))})
			}
		}
		return m
	}
	panic(kind)
}

// rows returns the rows y0 to y1 of m as an image of its own (a decoder's strip: its own
// pixels, bounds at the rows' place).
func rows(m image.Image, y0, y1 int) image.Image {
	r := image.Rect(m.Bounds().Min.X, y0, m.Bounds().Max.X, y1)
	switch m := m.(type) {
	case *image.Gray:
		s := image.NewGray(r)
		draw.Draw(s, r, m, r.Min, draw.Src)
		return s
	case *image.RGBA:
		s := image.NewRGBA(r)
		copy(s.Pix, m.Pix[m.PixOffset(r.Min.X, y0):])
		return s
	case *image.NRGBA:
		s := image.NewNRGBA(r)
		copy(s.Pix, m.Pix[m.PixOffset(r.Min.X, y0):])
		return s
	case *image.Paletted:
		s := image.NewPaletted(r, m.Palette)
		copy(s.Pix, m.Pix[m.PixOffset(r.Min.X, y0):])
		return s
	case *image.Gray16:
		s := image.NewGray16(r)
		copy(s.Pix, m.Pix[m.PixOffset(r.Min.X, y0):])
		return s
	}
	panic(fmt.Sprintf("%T", m))
}

// stream scales m's sr into a dw x dh NRGBA, writing it to a Scaler stripH rows at a time.
func stream(t *testing.T, m image.Image, sr image.Rectangle, dw, dh, stripH int) *image.NRGBA {
	t.Helper()
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	z, err := New(dst, sr)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += stripH {
		if z.Done() && y < sr.Max.Y {
			t.Fatalf("Done before source row %d of %v", y, sr)
		}
		if err := z.Write(rows(m, y, min(y+stripH, b.Max.Y))); err != nil {
			t.Fatal(err)
		}
	}
	if !z.Done() {
		t.Fatal("not Done after the last row")
	}
	return dst
}

// The streamed output is draw.CatmullRom.Scale's, byte for byte, for every pixel type, sizes
// that do not divide, crops (fit=cover), one axis enlarged (fit=fill), and any strip height.
// Under -race -short each case takes one pixel type, every type in turn.
func TestScaler_SameAsDraw(t *testing.T) {
	type tc struct {
		sw, sh int
		sr     image.Rectangle // empty: the whole image
		dw, dh int
	}
	cases := []tc{
		{640, 480, image.Rectangle{}, 160, 120},
		{641, 479, image.Rectangle{}, 97, 71},
		{333, 777, image.Rectangle{}, 100, 233},
		{500, 300, image.Rect(100, 0, 400, 300), 80, 80}, // cover, wide source
		{300, 500, image.Rect(0, 101, 300, 399), 64, 64}, // cover, tall source
		{400, 90, image.Rectangle{}, 50, 120},            // fill: vertical enlarged
		{90, 400, image.Rectangle{}, 120, 50},            // fill: horizontal enlarged
		{257, 259, image.Rectangle{}, 256, 258},          // barely smaller
		{1000, 7, image.Rectangle{}, 13, 1},              // one row out
		{3, 1000, image.Rect(1, 10, 3, 990), 1, 1},       // one pixel out
		{260, 130, image.Rect(1, 3, 259, 128), 129, 62},  // odd crop
		{450, 300, image.Rectangle{}, 400, 266},          // small downscale
		{1000, 600, image.Rectangle{}, 50, 30},           // 20x: wide kernel
	}
	kinds := []string{"gray", "rgba", "rgba-premul", "nrgba", "paletted", "paletted-short", "gray16"}
	for i, c := range cases {
		for k, kind := range kinds {
			if testing.Short() && raceEnabled && k != i%len(kinds) {
				// -race -short: one pixel type per case, in turn (the scaler has no goroutines or
				// shared state, and the 91 pairs took about 30 s under -race); the plain step
				// checks every type in every case.
				continue
			}
			sr := c.sr
			if sr.Empty() {
				sr = image.Rect(0, 0, c.sw, c.sh)
			}
			m := noisy(kind, c.sw, c.sh, uint64(i))
			want := image.NewNRGBA(image.Rect(0, 0, c.dw, c.dh))
			draw.CatmullRom.Scale(want, want.Bounds(), m, sr, draw.Src, nil)
			for _, sh := range []int{1, 7, 64, c.sh} {
				name := fmt.Sprintf("%s/%dx%d%v->%dx%d/strip%d", kind, c.sw, c.sh, sr, c.dw, c.dh, sh)
				got := stream(t, m, sr, c.dw, c.dh, sh)
				if !bytes.Equal(got.Pix, want.Pix) {
					t.Errorf("%s: %d of %d bytes differ from draw.CatmullRom.Scale", name, diff(got.Pix, want.Pix), len(want.Pix))
				}
			}
		}
	}
}

func diff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// The ring holds the rows the vertical kernel spans, not the image: a 20x vertical shrink
// keeps about 4*20 rows of the target width, whatever the source's height.
func TestScaler_RingIsBounded(t *testing.T) {
	for _, c := range []struct {
		sh, dh, max int
	}{{20000, 1000, 4*20 + 2}, {3000, 1000, 4*3 + 2}, {1000, 1000, 5}, {500, 1000, 5}} {
		got := RingRows(100, c.dh, image.Rect(0, 0, 400, c.sh))
		if got < 1 || got > c.max {
			t.Errorf("%d -> %d rows: ring of %d rows, want 1 to %d", c.sh, c.dh, got, c.max)
		}
	}
}

// Rows out of order, gaps and strips narrower than the source part are refused.
func TestScaler_WriteErrors(t *testing.T) {
	m := noisy("gray", 100, 100, 1)
	sr := image.Rect(10, 10, 90, 90)
	newZ := func() *Scaler {
		z, err := New(image.NewNRGBA(image.Rect(0, 0, 20, 20)), sr)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	if err := newZ().Write(rows(m, 11, 20)); err == nil {
		t.Error("first strip below sr.Min.Y accepted")
	}
	z := newZ()
	if err := z.Write(rows(m, 0, 20)); err != nil {
		t.Fatal(err)
	}
	if err := z.Write(rows(m, 21, 30)); err == nil {
		t.Error("a gap accepted")
	}
	narrow := image.NewGray(image.Rect(20, 20, 100, 30))
	if err := z.Write(narrow); err == nil {
		t.Error("a strip missing sr's columns accepted")
	}
	if _, err := New(image.NewNRGBA(image.Rect(0, 0, 0, 5)), sr); err == nil {
		t.Error("an empty target accepted")
	}
}

// BenchmarkScaler streams a 4000x3000 RGBA to 800x600 in 64-row strips; compare
// BenchmarkDrawScale, the whole-image Scale.
func BenchmarkScaler(b *testing.B) {
	m := noisy("rgba", 4000, 3000, 1)
	strips := []image.Image{}
	for y := 0; y < 3000; y += 64 {
		strips = append(strips, rows(m, y, min(y+64, 3000)))
	}
	dst := image.NewNRGBA(image.Rect(0, 0, 800, 600))
	b.ReportAllocs()
	for b.Loop() {
		z, _ := New(dst, m.Bounds())
		for _, s := range strips {
			if err := z.Write(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDrawScale is x/image/draw's whole-image CatmullRom.Scale of BenchmarkScaler's image.
func BenchmarkDrawScale(b *testing.B) {
	m := noisy("rgba", 4000, 3000, 1)
	dst := image.NewNRGBA(image.Rect(0, 0, 800, 600))
	b.ReportAllocs()
	for b.Loop() {
		draw.CatmullRom.Scale(dst, dst.Bounds(), m, m.Bounds(), draw.Src, nil)
	}
}

// FuzzScaler checks random sizes, crops and strip heights against draw.CatmullRom.Scale.
func FuzzScaler(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(40), uint8(30), uint8(10), uint8(7), uint8(0), uint8(0), uint8(0), uint8(0), uint8(5))
	f.Add(uint64(2), uint8(3), uint8(9), uint8(60), uint8(20), uint8(2), uint8(1), uint8(5), uint8(2), uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, kind, sw, sh, dw, dh, x0, y0, x1, y1, stripH uint8) {
		kinds := []string{"gray", "rgba", "rgba-premul", "nrgba", "paletted", "paletted-short", "gray16"}
		w, h := int(sw)%64+1, int(sh)%64+1
		sr := image.Rect(int(x0)%w, int(y0)%h, w-int(x1)%w, h-int(y1)%h).Canon()
		if sr.Empty() {
			sr = image.Rect(0, 0, w, h)
		}
		tw, th := int(dw)%64+1, int(dh)%64+1
		m := noisy(kinds[int(kind)%len(kinds)], w, h, seed)
		want := image.NewNRGBA(image.Rect(0, 0, tw, th))
		draw.CatmullRom.Scale(want, want.Bounds(), m, sr, draw.Src, nil)
		got := stream(t, m, sr, tw, th, int(stripH)%70+1)
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Fatalf("%dx%d %v -> %dx%d: %d bytes differ", w, h, sr, tw, th, diff(got.Pix, want.Pix))
		}
	})
}
