package image

import (
	"image"
	"image/color"
	"image/draw"
)

// To8Bit returns img as one of *image.Gray, *image.Paletted, *image.RGBA (opaque) or
// *image.NRGBA, the layouts every 8-bit encoder handles natively and quickly.
// 16-bit images are reduced to 8 bits; callers that can keep 16 bits check first.
func To8Bit(img image.Image) image.Image {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray, *image.Paletted, *image.RGBA, *image.NRGBA:
		return img
	case *image.YCbCr, *image.CMYK:
		// image/draw has fast paths for both into *image.RGBA.
		dst := image.NewRGBA(b)
		draw.Draw(dst, b, m, b.Min, draw.Src)
		return dst
	case *image.NYCbCrA:
		// Convert the opaque YCbCr part on draw's fast path, then lay the alpha plane over it:
		// an opaque RGBA pixel has the same bytes as the NRGBA one.
		rgba := image.NewRGBA(b)
		draw.Draw(rgba, b, &m.YCbCr, b.Min, draw.Src)
		dst := &image.NRGBA{Pix: rgba.Pix, Stride: rgba.Stride, Rect: rgba.Rect}
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := dst.Pix[(y-b.Min.Y)*dst.Stride:]
			ai := m.AOffset(b.Min.X, y)
			for x := 0; x < b.Dx(); x++ {
				row[4*x+3] = m.A[ai+x]
			}
		}
		return dst
	case *image.Gray16:
		dst := image.NewGray(b)
		for y := 0; y < b.Dy(); y++ {
			src := m.Pix[y*m.Stride:]
			row := dst.Pix[y*dst.Stride:]
			for x := 0; x < b.Dx(); x++ {
				row[x] = src[2*x]
			}
		}
		return dst
	case *image.NRGBA64:
		dst := image.NewNRGBA(b)
		high8(dst.Pix, dst.Stride, m.Pix, m.Stride, b)
		return dst
	case *image.RGBA64:
		if m.Opaque() {
			dst := image.NewRGBA(b)
			high8(dst.Pix, dst.Stride, m.Pix, m.Stride, b)
			return dst
		}
	}
	// Anything else (and premultiplied 16-bit with alpha) goes through the color model.
	dst := image.NewNRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := dst.Pix[(y-b.Min.Y)*dst.Stride:]
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			i := 4 * (x - b.Min.X)
			row[i], row[i+1], row[i+2], row[i+3] = c.R, c.G, c.B, c.A
		}
	}
	return dst
}

// high8 copies the high byte of every 16-bit big-endian sample of a 4-channel image.
func high8(dst []byte, dstStride int, src []byte, srcStride int, b image.Rectangle) {
	for y := 0; y < b.Dy(); y++ {
		s := src[y*srcStride:]
		d := dst[y*dstStride:]
		for i := 0; i < 4*b.Dx(); i++ {
			d[i] = s[2*i]
		}
	}
}

// paletteNRGBA returns the palette as non-premultiplied 8-bit colors.
func paletteNRGBA(p color.Palette) []color.NRGBA {
	out := make([]color.NRGBA, len(p))
	for i, c := range p {
		out[i] = color.NRGBAModel.Convert(c).(color.NRGBA)
	}
	return out
}

// paletteOpaque reports whether every palette entry is opaque.
func paletteOpaque(p color.Palette) bool {
	for _, c := range p {
		if _, _, _, a := c.RGBA(); a != 0xffff {
			return false
		}
	}
	return true
}

// palettedToNRGBA expands a paletted image; indexes past the palette's end become transparent black.
func palettedToNRGBA(m *image.Paletted) *image.NRGBA {
	b := m.Bounds()
	pal := paletteNRGBA(m.Palette)
	dst := image.NewNRGBA(b)
	for y := 0; y < b.Dy(); y++ {
		src := m.Pix[y*m.Stride:]
		row := dst.Pix[y*dst.Stride:]
		for x := 0; x < b.Dx(); x++ {
			if int(src[x]) < len(pal) {
				c := pal[src[x]]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
			}
		}
	}
	return dst
}

// flattenWhite composites an 8-bit image (as returned by to8bit) over white, as JPEG has no alpha.
// Opaque images are returned without copying where the layout allows.
func flattenWhite(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.Gray:
		return m
	case *image.RGBA:
		if m.Opaque() {
			return m
		}
		b := m.Bounds()
		dst := image.NewRGBA(b)
		for y := 0; y < b.Dy(); y++ {
			src := m.Pix[y*m.Stride:]
			row := dst.Pix[y*dst.Stride:]
			for i := 0; i < 4*b.Dx(); i += 4 {
				// Premultiplied: result = c + white*(1-a).
				inv := 255 - src[i+3]
				row[i], row[i+1], row[i+2], row[i+3] = src[i]+inv, src[i+1]+inv, src[i+2]+inv, 255
			}
		}
		return dst
	case *image.NRGBA:
		if m.Opaque() {
			// Opaque NRGBA pixels have the same bytes as RGBA ones; share them for the encoder's fast path.
			return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
		}
		b := m.Bounds()
		dst := image.NewRGBA(b)
		for y := 0; y < b.Dy(); y++ {
			src := m.Pix[y*m.Stride:]
			row := dst.Pix[y*dst.Stride:]
			for i := 0; i < 4*b.Dx(); i += 4 {
				a := uint32(src[i+3])
				inv := 255 * (255 - a)
				row[i] = uint8((uint32(src[i])*a + inv + 127) / 255)
				row[i+1] = uint8((uint32(src[i+1])*a + inv + 127) / 255)
				row[i+2] = uint8((uint32(src[i+2])*a + inv + 127) / 255)
				row[i+3] = 255
			}
		}
		return dst
	case *image.Paletted:
		return flattenWhite(palettedToNRGBA(m))
	}
	return flattenWhite(To8Bit(img))
}

// toNRGBA returns an 8-bit image (as returned by to8bit, but not Gray or Paletted) as non-premultiplied.
func toNRGBA(img image.Image) *image.NRGBA {
	switch m := img.(type) {
	case *image.NRGBA:
		return m
	case *image.RGBA:
		if m.Opaque() {
			return &image.NRGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
		}
	case *image.Paletted:
		return palettedToNRGBA(m)
	}
	b := img.Bounds()
	dst := image.NewNRGBA(b)
	draw.Draw(dst, b, img, b.Min, draw.Src)
	return dst
}
