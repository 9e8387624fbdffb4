package image

import (
	"context"
	"image"

	"github.com/convsvc/convsvc/convert"
)

// d4 is one of the eight ways to turn and mirror a rectangle of pixels (EXIF's orientations,
// rotate, flip). Output pixel (x, y) reads source pixel (sx, sy): (u, v) is (y, x) when swap,
// else (x, y); sx is w-1-u when fx, else u; sy is h-1-v when fy, else v, for a w x h source.
type d4 struct{ swap, fx, fy bool }

// orientations maps EXIF orientation 1..8 to what turns the stored pixels upright.
var orientations = [9]d4{
	1: {},
	2: {fx: true},
	3: {fx: true, fy: true},
	4: {fy: true},
	5: {swap: true},
	6: {swap: true, fy: true},
	7: {swap: true, fx: true, fy: true},
	8: {swap: true, fx: true},
}

// rotations maps a clockwise rotate option to its d4.
var rotations = map[int]d4{0: {}, 90: {swap: true, fy: true}, 180: {fx: true, fy: true}, 270: {swap: true, fx: true}}

// flips maps a flip option to its d4.
var flips = map[string]d4{"": {}, convert.FlipHorizontal: {fx: true}, convert.FlipVertical: {fy: true}}

func (t d4) identity() bool { return t == d4{} }

// size is the output size of t applied to a w x h source.
func (t d4) size(w, h int) (int, int) {
	if t.swap {
		return h, w
	}
	return w, h
}

// src maps output pixel (x, y) to its source pixel, for a w x h source.
func (t d4) src(x, y, w, h int) (int, int) {
	u, v := x, y
	if t.swap {
		u, v = y, x
	}
	if t.fx {
		u = w - 1 - u
	}
	if t.fy {
		v = h - 1 - v
	}
	return u, v
}

// srcRect maps a rectangle of the output to the source rectangle it reads, for a w x h source.
func (t d4) srcRect(r image.Rectangle, w, h int) image.Rectangle {
	x0, y0 := t.src(r.Min.X, r.Min.Y, w, h)
	x1, y1 := t.src(r.Max.X-1, r.Max.Y-1, w, h)
	return image.Rect(min(x0, x1), min(y0, y1), max(x0, x1)+1, max(y0, y1)+1)
}

// then returns the d4 that applies t, then u.
func (t d4) then(u d4) d4 {
	// Find the element whose mapping is t's after u's on a 2x3 source (every d4 differs there).
	const w, h = 2, 3
	for _, c := range orientations[1:] {
		ok := true
		cw, ch := u.size(t.size(w, h))
		for y := 0; y < ch && ok; y++ {
			for x := 0; x < cw && ok; x++ {
				tw, th := t.size(w, h)
				mx, my := u.src(x, y, tw, th)
				sx, sy := t.src(mx, my, w, h)
				cx, cy := c.src(x, y, w, h)
				ok = sx == cx && sy == cy
			}
		}
		if ok {
			return c
		}
	}
	panic("d4: no composition")
}

// geometry is what a job does to the shape of an image: the source box (stored pixels) that
// is resampled to rw x rh, then turned by t into the dw x dh output. Resampling before turning
// lets every path (strips, shrink-on-load) work in the stored orientation and turn only the
// output.
type geometry struct {
	t      d4
	box    image.Rectangle
	rw, rh int
	dw, dh int
}

// resizes reports whether the box is resampled (not a plain copy of a sw x sh source).
func (g geometry) resizes(sw, sh int) bool {
	return g.rw != g.box.Dx() || g.rh != g.box.Dy() || g.box != image.Rect(0, 0, sw, sh)
}

// plain reports whether the output is the source, resized at most, without a turn or crop.
func (g geometry) plain(sw, sh int) bool {
	return g.t.identity() && g.box == image.Rect(0, 0, sw, sh)
}

// planGeometry works out a job's geometry for a sw x sh source stored with EXIF orientation
// orient (1 when it is not applied): upright, then crop (in upright pixels), then rotate and
// flip, then resize per width, height and fit. A crop outside the upright image is an *Error.
func planGeometry(sw, sh, orient int, o convert.Options) (geometry, error) {
	if orient < 1 || orient > 8 {
		orient = 1
	}
	ot := orientations[orient]
	ow, oh := ot.size(sw, sh)
	crop := image.Rect(0, 0, ow, oh)
	if c := o.Crop; c != nil {
		r := image.Rect(c.Left, c.Top, c.Left+c.Width, c.Top+c.Height)
		if !r.In(crop) {
			return geometry{}, convert.Errorf(nil, "the crop %dx%d at %d,%d reaches outside the %dx%d image (after orientation); options.crop must lie within it",
				c.Width, c.Height, c.Left, c.Top, ow, oh)
		}
		crop = r
	}
	user := rotations[o.Rotate].then(flips[o.Flip])
	cw, ch := user.size(crop.Dx(), crop.Dy())
	dw, dh, fbox := ResizeBox(cw, ch, o)
	ob := user.srcRect(fbox, crop.Dx(), crop.Dy()).Add(crop.Min)
	g := geometry{t: ot.then(user), box: ot.srcRect(ob, sw, sh), dw: dw, dh: dh}
	g.rw, g.rh = dw, dh
	if g.t.swap {
		g.rw, g.rh = dh, dw
	}
	return g, nil
}

// applyD4 returns img turned by t (img itself for the identity), as *image.Gray, *image.RGBA
// or *image.NRGBA.
func applyD4(img image.Image, t d4) image.Image {
	if t.identity() {
		return img
	}
	img = To8Bit(img)
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	ow, oh := t.size(w, h)
	var pix []byte
	var stride, bpp int
	var out image.Image
	var opix []byte
	var ostride int
	switch m := img.(type) {
	case *image.Gray:
		pix, stride, bpp = m.Pix, m.Stride, 1
		o := image.NewGray(image.Rect(0, 0, ow, oh))
		out, opix, ostride = o, o.Pix, o.Stride
	case *image.RGBA:
		pix, stride, bpp = m.Pix, m.Stride, 4
		o := image.NewRGBA(image.Rect(0, 0, ow, oh))
		out, opix, ostride = o, o.Pix, o.Stride
	default:
		n := toNRGBA(img)
		pix, stride, bpp = n.Pix, n.Stride, 4
		o := image.NewNRGBA(image.Rect(0, 0, ow, oh))
		out, opix, ostride = o, o.Pix, o.Stride
	}
	for y := 0; y < oh; y++ {
		row := opix[y*ostride:]
		for x := 0; x < ow; x++ {
			sx, sy := t.src(x, y, w, h)
			copy(row[x*bpp:x*bpp+bpp], pix[sy*stride+sx*bpp:])
		}
	}
	return out
}

// cropCopy returns the box part of img (relative to its origin) as an image of origin 0,0.
func cropCopy(img image.Image, box image.Rectangle) image.Image {
	b := img.Bounds()
	if box == image.Rect(0, 0, b.Dx(), b.Dy()) {
		return img
	}
	img = To8Bit(img)
	var src image.Image
	if s, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		src = s.SubImage(box.Add(b.Min))
	}
	switch m := src.(type) {
	case *image.Gray:
		return &image.Gray{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect.Sub(m.Rect.Min)}
	case *image.RGBA:
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect.Sub(m.Rect.Min)}
	case *image.NRGBA:
		return &image.NRGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect.Sub(m.Rect.Min)}
	case *image.Paletted:
		return &image.Paletted{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect.Sub(m.Rect.Min), Palette: m.Palette}
	}
	n := toNRGBA(img)
	return cropCopy(n, box)
}

// resizeGeom resamples the geometry's box of img (relative to its origin) to rw x rh, or
// crops it when the sizes match.
func resizeGeom(ctx context.Context, img image.Image, g geometry, lim convert.Limits) (image.Image, error) {
	if g.rw == g.box.Dx() && g.rh == g.box.Dy() {
		return cropCopy(img, g.box), nil
	}
	return scaleTo(ctx, img, g.rw, g.rh, g.box, lim)
}

// flattenOnto composites img over the colour (r, g, b), returning an opaque *image.RGBA
// (or *image.Gray unchanged).
func flattenOnto(img image.Image, r, g, b uint8) image.Image {
	img = To8Bit(img)
	if gr, ok := img.(*image.Gray); ok {
		return gr
	}
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return img
	}
	n := toNRGBA(img)
	bounds := n.Bounds()
	dst := image.NewRGBA(bounds)
	bg := [3]uint32{uint32(r), uint32(g), uint32(b)}
	for y := 0; y < bounds.Dy(); y++ {
		src := n.Pix[y*n.Stride:]
		row := dst.Pix[y*dst.Stride:]
		for i := 0; i < 4*bounds.Dx(); i += 4 {
			a := uint32(src[i+3])
			for c := range 3 {
				row[i+c] = uint8((uint32(src[i+c])*a + bg[c]*(255-a) + 127) / 255)
			}
			row[i+3] = 255
		}
	}
	return dst
}
