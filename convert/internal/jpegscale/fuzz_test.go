package jpegscale

import (
	"bytes"
	"image"
	"image/jpeg"
	"reflect"
	"testing"
)

// FuzzDecodeScaled: at scale 1 the decoder reads exactly what image/jpeg reads (the same
// image, the same error); at 1/2, 1/4 and 1/8 it fails exactly when image/jpeg fails, returns
// the scaled size and the same image type, and stays within rounding of the box-filtered full
// decode wherever no sample was clipped. It never panics. The seed corpus is in
// testdata/fuzz/FuzzDecodeScaled plus image/jpeg's sample files in testdata.
func FuzzDecodeScaled(f *testing.F) {
	for _, data := range samples(f) {
		f.Add(data, uint8(0))
		f.Add(data, uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, scale uint8) {
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width*cfg.Height > 1<<20 {
			return // what would not be decoded at all: the caller checks the header first
		}
		want, werr := jpeg.Decode(bytes.NewReader(data))
		s := 1 << (scale % 4)
		got, gerr := DecodeScaled(bytes.NewReader(data), s)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("1/%d: error %v, image/jpeg %v", s, gerr, werr)
		}
		if werr != nil {
			return
		}
		if s == 1 {
			if !reflect.DeepEqual(got, want) {
				t.Fatal("image differs from image/jpeg's")
			}
			return
		}
		w, h := ScaledSize(cfg.Width, cfg.Height, s)
		if got.Bounds() != image.Rect(0, 0, w, h) || reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Fatalf("1/%d: %T %v, want %T %dx%d", s, got, got.Bounds(), want, w, h)
		}
		if _, ok := want.(*image.RGBA); ok {
			return // RGB files' chroma layout is not known here; TestDecodeScaled_BoxOfFullDecode covers it
		}
		limit := 2
		if _, ok := want.(*image.CMYK); ok {
			limit = 6
		}
		if maxd, _ := boxStats(t, want, got, s, 1); maxd > limit {
			t.Fatalf("1/%d: a box mean differs by %d from the full decode's (limit %d)", s, maxd, limit)
		}
	})
}
