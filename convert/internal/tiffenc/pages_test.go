package tiffenc

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"testing"
)

// TestPageWriter writes pages of different sizes and pixel types and reads each back with
// x/image/tiff, through a copy of the file whose header points at that page's IFD (offsets
// in a TIFF are absolute, so each page reads as if it were the only one).
func TestPageWriter(t *testing.T) {
	rgba := image.NewRGBA(image.Rect(0, 0, 130, 70))
	for i := range rgba.Pix {
		rgba.Pix[i] = byte(i*7) | 3
	}
	for i := 3; i < len(rgba.Pix); i += 4 {
		rgba.Pix[i] = 0xff
	}
	gray := image.NewGray(image.Rect(0, 0, 33, 300))
	for i := range gray.Pix {
		gray.Pix[i] = byte(i / 33)
	}
	nrgba := image.NewNRGBA(image.Rect(0, 0, 5, 1))
	for x := range 5 {
		nrgba.SetNRGBA(x, 0, color.NRGBA{R: byte(50 * x), G: 9, B: 200, A: byte(40 * x)})
	}
	pages := []image.Image{rgba, gray, nrgba}
	var buf bytes.Buffer
	pw := NewPageWriter(&buf)
	for i, m := range pages {
		if err := pw.WritePage(context.Background(), m, nil, i == len(pages)-1); err != nil {
			t.Fatal(err)
		}
	}
	file := buf.Bytes()
	le := binary.LittleEndian
	off := le.Uint32(file[4:])
	for i, want := range pages {
		if off == 0 {
			t.Fatalf("the IFD chain ends after %d pages", i)
		}
		if off%2 != 0 {
			t.Fatalf("IFD %d at odd offset %d", i, off)
		}
		one := bytes.Clone(file)
		le.PutUint32(one[4:], off)
		got := decode(t, one)
		if got.Bounds() != want.Bounds() {
			t.Fatalf("page %d is %v, want %v", i, got.Bounds(), want.Bounds())
		}
		b := want.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if g, w := color.NRGBAModel.Convert(got.At(x, y)), color.NRGBAModel.Convert(want.At(x, y)); g != w {
					t.Fatalf("page %d pixel (%d,%d) = %v, want %v", i, x, y, g, w)
				}
			}
		}
		n := le.Uint16(file[off:])
		off = le.Uint32(file[int(off)+2+12*int(n):])
	}
	if off != 0 {
		t.Fatalf("the last IFD points to %d, want 0", off)
	}
}
