package jpegstrip

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"testing"
)

// FuzzEncode: any small image of any kind, quality and strip height, spliced, decodes to the
// same pixels as image/jpeg's encoding of the whole image.
func FuzzEncode(f *testing.F) {
	f.Add([]byte("photo-like bytes"), uint8(17), uint8(33), uint8(0), uint8(85), uint8(1))
	f.Add([]byte{0, 255, 0, 255, 128}, uint8(1), uint8(1), uint8(1), uint8(1), uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0}, uint8(63), uint8(79), uint8(2), uint8(100), uint8(2))
	f.Fuzz(func(t *testing.T, pix []byte, w, h, kind, quality, mcuRows uint8) {
		r := image.Rect(0, 0, 1+int(w)%64, 1+int(h)%80)
		var img image.Image
		fill := func(dst []byte) {
			for i := range dst {
				if len(pix) > 0 {
					dst[i] = pix[i%len(pix)] + byte(i/len(pix))
				}
			}
		}
		switch kind % 4 {
		case 0:
			m := image.NewRGBA(r)
			fill(m.Pix)
			img = m
		case 1:
			m := image.NewGray(r)
			fill(m.Pix)
			img = m
		case 2:
			m := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
			fill(m.Y)
			fill(m.Cb)
			fill(m.Cr)
			img = m
		default:
			m := image.NewNRGBA(r)
			fill(m.Pix)
			img = m
		}
		opts := &jpeg.Options{Quality: int(quality)%100 + 1}
		var got, want bytes.Buffer
		if err := encode(context.Background(), &got, img, opts, 2, int(mcuRows)%4); err != nil {
			t.Fatal(err)
		}
		if err := jpeg.Encode(&want, img, opts); err != nil {
			t.Fatal(err)
		}
		decodedEqual(t, got.Bytes(), want.Bytes())
	})
}
