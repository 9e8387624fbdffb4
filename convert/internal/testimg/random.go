package testimg

import (
	"image"
	"image/draw"
	"math/rand/v2"
)

// Random returns a w x h image of kind "gray", "nrgba" or "rgba" with random pixels, for
// encoder round-trip tests. opaque forces alpha 0xff; otherwise RGBA alpha is 0 or 0xff a
// quarter of the time each (the cases encoders treat specially), colour never above alpha.
// sub returns a sub-image with a non-zero origin and a longer stride.
func Random(rng *rand.Rand, kind string, w, h int, opaque, sub bool) image.Image {
	r := image.Rect(0, 0, w, h)
	if sub {
		r = image.Rect(-3, 5, w+4, h+7)
	}
	var m draw.Image
	switch kind {
	case "gray":
		g := image.NewGray(r)
		for i := range g.Pix {
			g.Pix[i] = uint8(rng.IntN(256))
		}
		m = g
	case "nrgba":
		n := image.NewNRGBA(r)
		for i := range n.Pix {
			n.Pix[i] = uint8(rng.IntN(256))
			if opaque && i%4 == 3 {
				n.Pix[i] = 0xff
			}
		}
		m = n
	default:
		p := image.NewRGBA(r)
		for i := 0; i < len(p.Pix); i += 4 {
			a := uint8(rng.IntN(256))
			switch {
			case opaque:
				a = 0xff
			case rng.IntN(4) == 0:
				a = 0
			case rng.IntN(4) == 0:
				a = 0xff
			}
			for c := 0; c < 3; c++ { // premultiplied: colour never exceeds alpha
				p.Pix[i+c] = uint8(rng.IntN(int(a) + 1))
			}
			p.Pix[i+3] = a
		}
		m = p
	}
	if sub {
		type subImager interface {
			SubImage(image.Rectangle) image.Image
		}
		return m.(subImager).SubImage(image.Rect(1, 6, 1+w, 6+h))
	}
	return m
}

// FromBytes builds a w x h image for fuzz targets from px, repeated: kind 0 is *image.Gray,
// 1 *image.NRGBA, anything else *image.RGBA (colour clamped to alpha). opaque forces alpha
// 0xff. px must not be empty.
func FromBytes(kind byte, w, h int, px []byte, opaque bool) image.Image {
	r := image.Rect(0, 0, w, h)
	switch kind {
	case 0:
		g := image.NewGray(r)
		for i := range g.Pix {
			g.Pix[i] = px[i%len(px)]
		}
		return g
	case 1:
		n := image.NewNRGBA(r)
		for i := range n.Pix {
			n.Pix[i] = px[i%len(px)]
			if opaque && i%4 == 3 {
				n.Pix[i] = 0xff
			}
		}
		return n
	default:
		p := image.NewRGBA(r)
		for i := 0; i < len(p.Pix); i += 4 {
			a := px[(i/4)%len(px)]
			if opaque {
				a = 0xff
			}
			for c := 0; c < 3; c++ {
				p.Pix[i+c] = min(a, px[(i+c+1)%len(px)])
			}
			p.Pix[i+3] = a
		}
		return p
	}
}
