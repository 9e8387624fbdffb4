package jpegenc

import (
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// fuzzImage builds an image of one of the types image/jpeg treats differently (and a few it
// reads through At) from data, w x h at (ox, oy); kind picks the type and, for YCbCr, the
// subsampling.
func fuzzImage(data []byte, kind uint8, ox, oy int8, w, h uint8) image.Image {
	r := image.Rect(int(ox), int(oy), int(ox)+int(w%70), int(oy)+int(h%70))
	fill := func(p []byte) {
		if len(data) == 0 {
			return
		}
		for i := range p {
			p[i] = data[i%len(data)] ^ byte(i/len(data)*31)
		}
	}
	switch kind % 12 {
	case 0:
		m := image.NewRGBA(r)
		fill(m.Pix)
		return m
	case 1:
		m := image.NewNRGBA(r)
		fill(m.Pix)
		return m
	case 2:
		m := image.NewNRGBA(r)
		fill(m.Pix)
		for i := 3; i < len(m.Pix); i += 4 {
			m.Pix[i] = 0xff
		}
		return m
	case 3:
		m := image.NewGray(r)
		fill(m.Pix)
		return m
	case 4:
		var pal color.Palette
		for i := 0; i+2 < len(data) && len(pal) < 256; i += 3 {
			pal = append(pal, color.RGBA{data[i], data[i+1], data[i+2], 0xff})
		}
		if len(pal) == 0 {
			pal = color.Palette{color.Black}
		}
		m := image.NewPaletted(r, pal)
		fill(m.Pix)
		for i := range m.Pix {
			m.Pix[i] %= byte(min(len(pal), 255))
		}
		return m
	case 5:
		m := image.NewRGBA64(r)
		fill(m.Pix)
		return m
	case 6:
		m := image.NewNRGBA64(r)
		fill(m.Pix)
		return m
	case 7:
		m := image.NewCMYK(r)
		fill(m.Pix)
		return m
	case 8:
		m := image.NewGray16(r)
		fill(m.Pix)
		return m
	default:
		ratios := []image.YCbCrSubsampleRatio{
			image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
			image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
		}
		m := image.NewYCbCr(r, ratios[int(kind/12)%len(ratios)])
		fill(m.Y)
		fill(m.Cb)
		fill(m.Cr)
		return m
	}
}

// FuzzEncode checks that Encode writes exactly jpeg.Encode's bytes for any image, sub-image
// and quality (and refuses, instead of panicking, what image/jpeg panics on).
func FuzzEncode(f *testing.F) {
	f.Add([]byte("\x00\x80\xff\x10"), uint8(0), int8(0), int8(0), uint8(17), uint8(9), int8(-1), int8(0), 75)
	f.Add([]byte("photo-ish bytes 0123456789"), uint8(1), int8(-3), int8(5), uint8(33), uint8(16), int8(2), int8(3), 100)
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f}, uint8(2), int8(1), int8(1), uint8(1), uint8(1), int8(0), int8(0), 1)
	f.Add([]byte("gray"), uint8(3), int8(0), int8(0), uint8(65), uint8(3), int8(0), int8(0), 50)
	f.Add([]byte("palette of a few colours"), uint8(4), int8(7), int8(-7), uint8(30), uint8(31), int8(1), int8(1), 85)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(5), int8(0), int8(0), uint8(8), uint8(8), int8(0), int8(0), 0)
	f.Add([]byte{200, 100, 50}, uint8(9), int8(-1), int8(-1), uint8(23), uint8(19), int8(0), int8(0), 90)
	f.Add([]byte{200, 100, 50}, uint8(21), int8(1), int8(0), uint8(24), uint8(15), int8(3), int8(0), 101)
	f.Add([]byte{}, uint8(33), int8(0), int8(3), uint8(40), uint8(40), int8(0), int8(0), -5)
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, ox, oy int8, w, h uint8, sx, sy int8, quality int) {
		m := fuzzImage(data, kind, ox, oy, w, h)
		_, ycc := m.(*image.YCbCr)
		// image.YCbCr's SubImage itself panics on some negative origins: not jpegenc's business.
		if (sx != 0 || sy != 0) && !(ycc && (ox < 0 || oy < 0)) {
			b := m.Bounds()
			r := image.Rect(b.Min.X+int(sx)%8, b.Min.Y+int(sy)%8, b.Max.X, b.Max.Y).Intersect(b)
			m = m.(interface {
				SubImage(image.Rectangle) image.Image
			}).SubImage(r)
		}
		var o *jpeg.Options
		if quality != 0 {
			o = &jpeg.Options{Quality: quality}
		}
		same(t, fmt.Sprintf("%T %v q%d", m, m.Bounds(), quality), m, o)
	})
}
