package pngstream

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"reflect"
	"testing"
)

// decodeStrips decodes data with NewStripDecoder, ReadRows (strips of h rows, all through
// one reused buffer) and Finish, and returns the rows joined into one image of the type the
// strips have, or the first error.
func decodeStrips(data []byte, h int) (image.Image, bool, error) {
	d, ok, err := NewStripDecoder(bytes.NewReader(data))
	if err != nil || !ok {
		return nil, ok, err
	}
	b := d.Bounds()
	bpp := d.BytesPerPixel()
	buf := make([]byte, bpp*b.Dx()*h)
	all := make([]byte, 0, bpp*b.Dx()*b.Dy())
	var last image.Image
	for y := 0; y < b.Dy(); y += h {
		clear(buf)
		m := d.StripImage(buf, image.Rect(0, y, b.Dx(), min(y+h, b.Dy())))
		if err := d.ReadRows(m); err != nil {
			return nil, true, err
		}
		all = append(all, buf[:bpp*b.Dx()*m.Bounds().Dy()]...)
		last = m
	}
	if err := d.Finish(); err != nil {
		return nil, true, err
	}
	switch m := last.(type) {
	case *image.Gray:
		return &image.Gray{Pix: all, Stride: m.Stride, Rect: b}, true, nil
	case *image.RGBA:
		return &image.RGBA{Pix: all, Stride: m.Stride, Rect: b}, true, nil
	case *image.NRGBA:
		return &image.NRGBA{Pix: all, Stride: m.Stride, Rect: b}, true, nil
	case *image.Paletted:
		return &image.Paletted{Pix: all, Stride: m.Stride, Rect: b, Palette: m.Palette}, true, nil
	}
	return nil, true, fmt.Errorf("strip of type %T", last)
}

// stripsAgree reports how the strip-at-a-time decode of data differs from Decode's result
// (img, err, ok), or "": the same acceptance, the same error message, and the same colour at
// every pixel (the strips carry all 256 palette entries, Image only those in use).
func stripsAgree(data []byte, img image.Image, ok bool, err error) string {
	for _, h := range []int{1, 1 << 20} {
		got, sok, serr := decodeStrips(data, h)
		switch {
		case sok != ok && serr == nil && err == nil:
			return fmt.Sprintf("strips of %d: ok = %v, Decode's %v", h, sok, ok)
		case (serr == nil) != (err == nil) || (serr != nil && serr.Error() != err.Error()):
			return fmt.Sprintf("strips of %d: error %v, Decode's %v", h, serr, err)
		case serr != nil || !ok:
			continue
		}
		if reflect.TypeOf(got) != reflect.TypeOf(img) || got.Bounds() != img.Bounds() {
			return fmt.Sprintf("strips of %d: %T %v, Decode's %T %v", h, got, got.Bounds(), img, img.Bounds())
		}
		// Both are laid out tightly from the origin: the same indices or samples, byte for
		// byte, and for palettes the same colours for every index Image's palette has.
		if !bytes.Equal(pixOf(got), pixOf(img)) {
			return fmt.Sprintf("strips of %d: pixels differ", h)
		}
		if p, ok := img.(*image.Paletted); ok {
			if gp := got.(*image.Paletted).Palette; !reflect.DeepEqual(gp[:len(p.Palette)], p.Palette) {
				return fmt.Sprintf("strips of %d: palette %v, Decode's %v", h, gp, p.Palette)
			}
		}
	}
	return ""
}

// TestReadRows_Misuse: rows out of order, a decoder of the other kind, Finish too early.
func TestReadRows_Misuse(t *testing.T) {
	for name, img := range testImages(7, 9, 3) {
		data := encodePNG(t, img)
		d, ok, err := NewStripDecoder(bytes.NewReader(data))
		if err != nil || !ok {
			t.Fatalf("%s: NewStripDecoder: %v, %v", name, ok, err)
		}
		buf := make([]byte, 4*7*9)
		if err := d.ReadRows(d.StripImage(buf, image.Rect(0, 2, 7, 4))); err == nil {
			t.Errorf("%s: ReadRows from row 2 first: no error", name)
		}
		if err := d.ReadRows(d.StripImage(buf, image.Rect(0, 0, 7, 4))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := d.Finish(); err == nil {
			t.Errorf("%s: Finish after 4 of 9 rows: no error", name)
		}
		if err := d.Decode(nil); err == nil {
			t.Errorf("%s: Decode on a strip decoder: no error", name)
		}
		if err := d.ReadRows(d.StripImage(buf, image.Rect(0, 4, 7, 9))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := d.Finish(); err != nil {
			t.Errorf("%s: Finish: %v", name, err)
		}
		whole, _, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := whole.ReadRows(whole.StripImage(buf, image.Rect(0, 0, 7, 1))); err == nil {
			t.Errorf("%s: ReadRows on a NewDecoder decoder: no error", name)
		}
	}
}

// encodePNG writes img with image/png.
func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pixOf returns the pixel bytes of the image types this package returns.
func pixOf(m image.Image) []byte {
	switch m := m.(type) {
	case *image.Gray:
		return m.Pix
	case *image.RGBA:
		return m.Pix
	case *image.NRGBA:
		return m.Pix
	case *image.Paletted:
		return m.Pix
	}
	return nil
}
