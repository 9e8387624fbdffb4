package image

import (
	"image"
	"math"
)

// libwebp turns RGB into VP8's 4:2:0 planes (its "fast" conversion, the one gen2brain/webp
// asks for) with BT.601 in studio range for each pixel's Y, and for each 2x2 block's U and V
// an average taken in a gamma-compressed linear light (gamma 0.80, 12-bit linear values,
// a 33-entry table back, interpolated). vp8PlanesFromRGBA computes the same, in Go: handed the
// planes, libwebp encodes byte for byte the file it would have made from the RGBA
// (TestVP8PlanesFromRGBA_SameFileAsLibwebp), without the NRGBA copy, the copy into the
// translated wasm's memory and the conversion in the wasm, which runs at about half native speed.

// Fixed-point layout of libwebp's gamma-compressed averaging.
const (
	vp8GammaFix      = 12 // bits of a linear value
	vp8GammaTabFix   = 7  // fractional bits of the table back to gamma
	vp8GammaTabSize  = 1 << (vp8GammaFix - vp8GammaTabFix)
	vp8YUVFix        = 16 // fixed-point bits of the RGB->YUV coefficients
	vp8GammaExponent = 0.80
)

// vp8GammaToLinear and vp8LinearToGamma are libwebp's tables: 8-bit samples to 12-bit linear
// light, and linear light (in steps of 128) back to 8-bit samples.
var vp8GammaToLinear, vp8LinearToGamma = func() (toLinear [256]uint32, toGamma [vp8GammaTabSize + 1]int32) {
	scale := float64(1<<vp8GammaTabFix) / (1<<vp8GammaFix - 1)
	for v := range toLinear {
		toLinear[v] = uint32(math.Pow(float64(v)/255, vp8GammaExponent)*(1<<vp8GammaFix-1) + .5)
	}
	for v := range toGamma {
		toGamma[v] = int32(255*math.Pow(scale*float64(v), 1/vp8GammaExponent) + .5)
	}
	return toLinear, toGamma
}()

// vp8Gamma converts a sum of four linear values (or of two, shifted left once) back to a
// gamma-compressed sample with two extra fractional bits, interpolating the table.
func vp8Gamma(linear uint32) int32 {
	pos := linear >> (vp8GammaTabFix + 2)
	frac := int32(linear & (1<<(vp8GammaTabFix+2) - 1))
	v := vp8LinearToGamma[pos+1]*frac + vp8LinearToGamma[pos]*(1<<(vp8GammaTabFix+2)-frac)
	return (v + 1<<(vp8GammaTabFix-1)) >> vp8GammaTabFix
}

// vp8Luma is BT.601 luma in studio range (16-235), rounded.
func vp8Luma(r, g, b uint8) uint8 {
	return uint8((16839*int32(r) + 33059*int32(g) + 6420*int32(b) + 1<<(vp8YUVFix-1) + 16<<vp8YUVFix) >> vp8YUVFix)
}

// vp8Chroma returns U and V (studio range around 128) for a block's averaged R, G and B,
// which carry two extra fractional bits.
func vp8Chroma(r, g, b int32) (u, v uint8) {
	clip := func(c int32) uint8 {
		c = (c + 1<<(vp8YUVFix+1) + 128<<(vp8YUVFix+2)) >> (vp8YUVFix + 2)
		return uint8(min(max(c, 0), 255))
	}
	return clip(-9719*r - 19081*g + 28800*b), clip(28800*r - 24116*g - 4684*b)
}

// vp8PlanesFromRGBA converts w x h pixels of 8-bit RGBA (pix, rows stride bytes apart) to
// VP8's planes with an opaque alpha plane, as libwebp would. It returns false, having
// converted nothing worth keeping, at the first pixel that is not opaque: libwebp weighs
// translucent pixels' colours by their alpha, which this does not do.
func vp8PlanesFromRGBA(pix []uint8, stride, w, h int) (*image.NYCbCrA, bool) {
	m := image.NewNYCbCrA(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	lin := &vp8GammaToLinear
	for y := 0; y < h; y += 2 {
		row0 := pix[y*stride:][:4*w]
		row1 := row0 // an odd last row is averaged with itself, as libwebp does
		if y+1 < h {
			row1 = pix[(y+1)*stride:][:4*w]
		}
		for i := 0; i < 2 && y+i < h; i++ {
			row := pix[(y+i)*stride:][:4*w]
			dst := m.Y[(y+i)*m.YStride:][:w]
			for x := range dst {
				p := row[4*x : 4*x+4 : 4*x+4]
				if p[3] != 0xff {
					return nil, false
				}
				dst[x] = vp8Luma(p[0], p[1], p[2])
			}
		}
		cb, cr := m.Cb[y/2*m.CStride:], m.Cr[y/2*m.CStride:]
		for cx := range w / 2 {
			a, b := row0[8*cx:8*cx+8:8*cx+8], row1[8*cx:8*cx+8:8*cx+8]
			r := vp8Gamma(lin[a[0]] + lin[a[4]] + lin[b[0]] + lin[b[4]])
			g := vp8Gamma(lin[a[1]] + lin[a[5]] + lin[b[1]] + lin[b[5]])
			bl := vp8Gamma(lin[a[2]] + lin[a[6]] + lin[b[2]] + lin[b[6]])
			cb[cx], cr[cx] = vp8Chroma(r, g, bl)
		}
		if w%2 == 1 { // the last column's blocks are two pixels tall and one wide
			a, b := row0[4*(w-1):], row1[4*(w-1):]
			r := vp8Gamma((lin[a[0]] + lin[b[0]]) << 1)
			g := vp8Gamma((lin[a[1]] + lin[b[1]]) << 1)
			bl := vp8Gamma((lin[a[2]] + lin[b[2]]) << 1)
			cb[w/2], cr[w/2] = vp8Chroma(r, g, bl)
		}
	}
	for i := range m.A {
		m.A[i] = 0xff
	}
	return m, true
}

// rgbaPixels returns the 8-bit RGBA samples of an *image.RGBA or *image.NRGBA from its first
// pixel, and its stride; ok is false for any other type. Opaque pixels read the same in both.
func rgbaPixels(img image.Image) (pix []uint8, stride int, ok bool) {
	switch m := img.(type) {
	case *image.RGBA:
		return m.Pix[m.PixOffset(m.Rect.Min.X, m.Rect.Min.Y):], m.Stride, true
	case *image.NRGBA:
		return m.Pix[m.PixOffset(m.Rect.Min.X, m.Rect.Min.Y):], m.Stride, true
	}
	return nil, 0, false
}
