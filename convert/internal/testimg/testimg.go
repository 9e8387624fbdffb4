// Package testimg draws deterministic photo-like test images for convert's tests, benchmarks
// and sample generator.
package testimg

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
)

// Photo returns an opaque w x h image of gradients, sinusoids and Gaussian noise (sigma 10),
// which compresses and quantizes roughly like a photograph. The same arguments always give
// the same pixels.
func Photo(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for y := 0; y < h; y++ {
		fy := float64(y) / float64(max(h-1, 1))
		for x := 0; x < w; x++ {
			fx := float64(x) / float64(max(w-1, 1))
			r := 255*fx*0.8 + 30*math.Sin(fy*9+fx*3)
			g := 255*fy*0.7 + 40*math.Sin(fx*13)*math.Cos(fy*7)
			b := 255*(1-fx)*0.6 + 60*math.Sin((fx+fy)*5) + 40
			i := m.PixOffset(x, y)
			m.Pix[i] = clamp(r + rng.NormFloat64()*10)
			m.Pix[i+1] = clamp(g + rng.NormFloat64()*10)
			m.Pix[i+2] = clamp(b + rng.NormFloat64()*10)
			m.Pix[i+3] = 0xff
		}
	}
	return m
}

// PhotoAlpha returns Photo with an alpha ramp from fully transparent at the left edge to
// opaque at the right, so every alpha level appears.
func PhotoAlpha(w, h int) *image.NRGBA {
	m := Photo(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.Pix[m.PixOffset(x, y)+3] = uint8(255 * x / max(w-1, 1))
		}
	}
	return m
}

// Photo16 returns Photo widened to 16 bits per channel with the low byte set, so a converter
// that keeps 16 bits can be told from one that does not.
func Photo16(w, h int) *image.NRGBA64 {
	src := Photo(w, h)
	m := image.NewNRGBA64(src.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := src.NRGBAAt(x, y)
			m.SetNRGBA64(x, y, color.NRGBA64{R: uint16(c.R)<<8 | 0x55, G: uint16(c.G)<<8 | 0xaa, B: uint16(c.B) << 8, A: 0xffff})
		}
	}
	return m
}

func clamp(v float64) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v + 0.5)
}
