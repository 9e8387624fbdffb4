package jpegstrip

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"sync"
	"testing"
)

// EncodeStripsRelease hands back every strip once the encoder is done with it: strips drawn
// from a small pool of buffers that are scribbled over on release still give the whole
// image's JPEG, byte for byte, and every strip asked for is released once, with strips of
// StripHeight rows.
func TestEncodeStripsRelease_ReusedBuffers(t *testing.T) {
	for _, tc := range []struct {
		kind string
		w, h int
	}{{"rgba", 1000, 700}, {"gray", 1500, 333}, {"rgba", 40, 30}} {
		src := photo(tc.kind, tc.w, tc.h, 5)
		gray := tc.kind == "gray"
		b := src.Bounds()
		sh := StripHeight(b, gray)
		if tc.w == 40 {
			if sh != b.Dy() {
				t.Fatalf("StripHeight of a one-strip image = %d, want its height %d", sh, b.Dy())
			}
		} else if sh == 0 || sh%16 != 0 && !gray || sh%8 != 0 {
			t.Fatalf("StripHeight(%v) = %d", b, sh)
		}
		var mu sync.Mutex
		var pool []image.Image
		held := map[image.Image]bool{}
		asked, released, maxHeld := 0, 0, 0
		strip := func(_ context.Context, r image.Rectangle) (image.Image, error) {
			if sh != 0 && r.Dy() != sh && r.Max.Y != b.Max.Y {
				t.Errorf("strip %v, want %d rows", r, sh)
			}
			mu.Lock()
			defer mu.Unlock()
			asked++
			var m image.Image
			if n := len(pool); n > 0 && pool[n-1].Bounds().Dy() >= r.Dy() {
				m, pool = pool[n-1], pool[:n-1]
			}
			var out image.Image
			switch s := src.(type) {
			case *image.Gray:
				g, _ := m.(*image.Gray)
				if g == nil {
					g = image.NewGray(image.Rect(0, 0, b.Dx(), max(sh, b.Dy())))
				}
				v := &image.Gray{Pix: g.Pix, Stride: g.Stride, Rect: r}
				for y := r.Min.Y; y < r.Max.Y; y++ {
					copy(v.Pix[(y-r.Min.Y)*v.Stride:], s.Pix[y*s.Stride:(y+1)*s.Stride])
				}
				out = v
			case *image.RGBA:
				g, _ := m.(*image.RGBA)
				if g == nil {
					g = image.NewRGBA(image.Rect(0, 0, b.Dx(), max(sh, b.Dy())))
				}
				v := &image.RGBA{Pix: g.Pix, Stride: g.Stride, Rect: r}
				for y := r.Min.Y; y < r.Max.Y; y++ {
					copy(v.Pix[(y-r.Min.Y)*v.Stride:], s.Pix[y*s.Stride:(y+1)*s.Stride])
				}
				out = v
			}
			held[out] = true
			maxHeld = max(maxHeld, len(held))
			return out, nil
		}
		release := func(m image.Image) {
			mu.Lock()
			defer mu.Unlock()
			if !held[m] {
				t.Errorf("released %v, not held", m.Bounds())
			}
			delete(held, m)
			released++
			// Scribble over the strip: an encoder still reading it would write other bytes.
			var pix []byte
			switch m := m.(type) {
			case *image.Gray:
				pix = m.Pix
				pool = append(pool, &image.Gray{Pix: m.Pix, Stride: m.Stride, Rect: image.Rect(0, 0, b.Dx(), len(m.Pix)/m.Stride)})
			case *image.RGBA:
				pix = m.Pix
				pool = append(pool, &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: image.Rect(0, 0, b.Dx(), len(m.Pix)/m.Stride)})
			}
			for i := range pix {
				pix[i] = byte(i * 7)
			}
		}
		var got, want bytes.Buffer
		o := &jpeg.Options{Quality: 80}
		if err := EncodeStripsRelease(context.Background(), &got, b, gray, o, 2, strip, release); err != nil {
			t.Fatal(err)
		}
		if err := Encode(context.Background(), &want, src, o, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s %dx%d: the output from reused strips differs from Encode's", tc.kind, tc.w, tc.h)
		}
		if asked == 0 || released != asked || len(held) != 0 {
			t.Errorf("%s %dx%d: %d strips asked for, %d released, %d still held", tc.kind, tc.w, tc.h, asked, released, len(held))
		}
		if maxHeld > 2 {
			t.Errorf("%s %dx%d: %d strips held at once by 2 workers", tc.kind, tc.w, tc.h, maxHeld)
		}
	}
}
