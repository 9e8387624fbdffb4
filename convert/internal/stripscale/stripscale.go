// Package stripscale resamples an image that arrives a strip of rows at a time, top to
// bottom, with golang.org/x/image/draw's Catmull-Rom kernel, holding only the rows the
// vertical kernel still needs: nothing the size of the source image.
//
// The output is exactly what draw.CatmullRom.Scale(dst, dst.Bounds(), src, sr, draw.Src, nil)
// writes into an *image.NRGBA dst for a whole *image.Gray, *image.RGBA, *image.NRGBA or
// *image.Paletted src (any other image.RGBA64Image through its RGBA64At, as draw does): that
// Scale is separable too, a horizontal pass of every source row into float64 rows of the
// target width, then a vertical pass over those rows. Both passes here are its arithmetic,
// operation for operation (the weights of its newDistrib, the per-type colour conversions of
// its scaleX_* functions, the clamping and rounding of its scaleY_RGBA64Image_Src and
// image.NRGBA's SetRGBA64); the only difference is that the horizontal rows live in a ring
// that is reused once the vertical pass is past them. The weight and conversion code follows
// golang.org/x/image/draw (BSD-style licence, Copyright The Go Authors).
package stripscale

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"golang.org/x/image/draw"
)

// contrib is one source column's or row's weight in a target column or row.
type contrib struct {
	coord  int32
	weight float64
}

// source is the range of contribs of one target column or row and their total weight.
type source struct {
	i, j               int32
	invTotalWeight     float64
	invTotalWeightFFFF float64
}

// distrib is draw's distrib: for each target column or row, its contributions.
type distrib struct {
	sources  []source
	contribs []contrib
}

// newDistrib is draw's newDistrib for kernel q, dw target and sw source columns or rows.
func newDistrib(q *draw.Kernel, dw, sw int32) distrib {
	scale := float64(sw) / float64(dw)
	halfWidth, kernelArgScale := q.Support, 1.0
	if scale > 1 {
		halfWidth *= scale
		kernelArgScale = 1 / scale
	}
	n, sources := int32(0), make([]source, dw)
	for x := range sources {
		center := float64((float64(x)+0.5)*scale) - 0.5
		i := int32(math.Floor(center - halfWidth))
		if i < 0 {
			i = 0
		}
		j := int32(math.Ceil(center + halfWidth))
		if j > sw {
			j = sw
			if j < i {
				j = i
			}
		}
		sources[x] = source{i: i, j: j, invTotalWeight: center}
		n += j - i
	}
	contribs := make([]contrib, 0, n)
	for k, b := range sources {
		totalWeight := 0.0
		l := int32(len(contribs))
		for coord := b.i; coord < b.j; coord++ {
			t := abs((b.invTotalWeight - float64(coord)) * kernelArgScale)
			if t >= q.Support {
				continue
			}
			weight := q.At(t)
			if weight == 0 {
				continue
			}
			totalWeight += weight
			contribs = append(contribs, contrib{coord, weight})
		}
		totalWeight = 1 / totalWeight
		sources[k] = source{
			i:                  l,
			j:                  int32(len(contribs)),
			invTotalWeight:     totalWeight,
			invTotalWeightFFFF: totalWeight / 0xffff,
		}
	}
	return distrib{sources, contribs}
}

func abs(f float64) float64 {
	if f < 0 {
		f = -f
	}
	return f
}

// ftou is draw's ftou: a [0, 1] float to 16 bits, rounded and clamped.
func ftou(f float64) uint16 {
	i := int32(float64(0xffff*f) + 0.5)
	if i > 0xffff {
		return 0xffff
	}
	if i > 0 {
		return uint16(i)
	}
	return 0
}

// Scaler resamples the sr part of a source image, fed to it with Write a strip of full-width
// rows at a time, into an *image.NRGBA. Make one with New.
type Scaler struct {
	dst    *image.NRGBA
	sr     image.Rectangle
	dw, sh int32
	h, v   distrib
	// hiEff[dy] is the last source row (relative to sr) target row dy needs, or any row
	// before it does; needFrom[dy] the first source row dy or any later target row needs.
	hiEff, needFrom []int32
	ring            [][][4]float64 // ringRows rows of dw pixels; source row c is ring[c%len(ring)]
	next            int32          // the next source row (relative to sr.Min.Y) Write expects
	nextDst         int32          // the next target row to emit
	y               int            // the next source row Write expects, in source coordinates
	started         bool           // Write has had rows
	pal             []color.RGBA64 // the palette of the last *image.Paletted strip, converted
	px              [][4]float64   // the current row's pixels in sr, as the horizontal pass weighs them
	gray            []float64      // the same for a gray row
	palOf           color.Palette
}

// New returns a Scaler that writes the sr part of the source, whose rows Write will get from
// sr.Min.Y down (rows above and below sr are skipped), scaled into all of dst, as
// draw.CatmullRom.Scale(dst, dst.Bounds(), src, sr, draw.Src, nil) would. sr and dst must
// not be empty.
func New(dst *image.NRGBA, sr image.Rectangle) (*Scaler, error) {
	db := dst.Bounds()
	if db.Empty() || sr.Empty() {
		return nil, fmt.Errorf("stripscale: empty rectangle (target %v, source %v)", db, sr)
	}
	if int64(db.Dx()) > math.MaxInt32 || int64(db.Dy()) > math.MaxInt32 || int64(sr.Dx()) > math.MaxInt32 || int64(sr.Dy()) > math.MaxInt32 {
		return nil, fmt.Errorf("stripscale: rectangle too large (target %v, source %v)", db, sr)
	}
	dw, dh, sw, sh := int32(db.Dx()), int32(db.Dy()), int32(sr.Dx()), int32(sr.Dy())
	z := &Scaler{dst: dst, sr: sr, dw: dw, sh: sh, y: sr.Min.Y,
		h: newDistrib(draw.CatmullRom, dw, sw), v: newDistrib(draw.CatmullRom, dh, sh)}
	z.hiEff = make([]int32, dh)
	z.needFrom = make([]int32, dh)
	hi := int32(0)
	for dy, s := range z.v.sources {
		for _, c := range z.v.contribs[s.i:s.j] {
			hi = max(hi, c.coord)
		}
		z.hiEff[dy] = hi
	}
	lo := sh
	for dy := dh - 1; dy >= 0; dy-- {
		s := z.v.sources[dy]
		for _, c := range z.v.contribs[s.i:s.j] {
			lo = min(lo, c.coord)
		}
		z.needFrom[dy] = lo
	}
	// The ring must hold, when source row c arrives, every row from the first one a target
	// row not yet emitted needs up to c.
	rows, next := int32(1), int32(0)
	for c := int32(0); c < sh; c++ {
		for next < dh && z.hiEff[next] < c {
			next++
		}
		if next < dh {
			rows = max(rows, c-min(z.needFrom[next], c)+1)
		}
	}
	z.ring = make([][][4]float64, rows)
	for i := range z.ring {
		z.ring[i] = make([][4]float64, dw)
	}
	return z, nil
}

// RingRows is how many horizontally resampled rows (of the target width, 32 bytes a pixel)
// a Scaler for a dw x dh target from sr holds.
func RingRows(dw, dh int, sr image.Rectangle) int {
	z, err := New(&image.NRGBA{Rect: image.Rect(0, 0, dw, dh)}, sr)
	if err != nil {
		return 0
	}
	return len(z.ring)
}

// Done reports whether every target row has been written.
func (z *Scaler) Done() bool { return z.nextDst == int32(len(z.v.sources)) }

// Write takes the next rows of the source: m's bounds must start at the row after the last
// one written (the first call's at or above sr.Min.Y: a decoder's first strip starts at 0)
// and span sr's columns; rows outside sr are skipped. Target rows are written to dst as soon as the rows they need have arrived.
func (z *Scaler) Write(m image.Image) error {
	b := m.Bounds()
	if b.Empty() {
		return nil
	}
	if (z.started && b.Min.Y != z.y) || (!z.started && b.Min.Y > z.sr.Min.Y) || b.Min.X > z.sr.Min.X || b.Max.X < z.sr.Max.X {
		return fmt.Errorf("stripscale: Write of rows %v, want rows from %d spanning columns %d to %d", b, z.y, z.sr.Min.X, z.sr.Max.X)
	}
	z.started, z.y = true, b.Max.Y
	y0, y1 := max(b.Min.Y, z.sr.Min.Y), min(b.Max.Y, z.sr.Max.Y)
	for y := y0; y < y1; y++ {
		c := int32(y - z.sr.Min.Y)
		if c != z.next {
			return fmt.Errorf("stripscale: source row %d out of order, want %d", y, int(z.next)+z.sr.Min.Y)
		}
		z.horizontal(z.ring[int(c)%len(z.ring)], m, y)
		z.next++
		for z.nextDst < int32(len(z.hiEff)) && z.hiEff[z.nextDst] <= c {
			z.vertical(z.nextDst)
			z.nextDst++
		}
	}
	return nil
}

// horizontal resamples source row y of m into row, as draw's scaleX_* for m's type do: the
// row's pixels in sr are converted once to the float64 values those functions weigh (each
// is exact, so the sums are theirs), then every target column sums its contributions.
func (z *Scaler) horizontal(row [][4]float64, m image.Image, y int) {
	minX, n := z.sr.Min.X, z.sr.Dx()
	if g, ok := m.(*image.Gray); ok {
		i := (y-g.Rect.Min.Y)*g.Stride + minX - g.Rect.Min.X
		pix := g.Pix[i : i+n]
		if z.gray == nil {
			z.gray = make([]float64, n)
		}
		f := z.gray[:n]
		for x, v := range pix {
			f[x] = float64(uint32(v) * 0x101)
		}
		for t, s := range z.h.sources {
			var pr float64
			for _, c := range z.h.contribs[s.i:s.j] {
				pr += float64(f[c.coord] * c.weight)
			}
			pr *= s.invTotalWeightFFFF
			row[t] = [4]float64{pr, pr, pr, 1}
		}
		return
	}
	if z.px == nil {
		z.px = make([][4]float64, n)
	}
	f := z.px[:n]
	switch m := m.(type) {
	case *image.NRGBA:
		i := (y-m.Rect.Min.Y)*m.Stride + (minX-m.Rect.Min.X)*4
		pix := m.Pix[i : i+4*n]
		for x := range f {
			p := pix[4*x : 4*x+4 : 4*x+4]
			pau := uint32(p[3]) * 0x101
			f[x] = [4]float64{float64(uint32(p[0]) * pau / 0xff), float64(uint32(p[1]) * pau / 0xff), float64(uint32(p[2]) * pau / 0xff), float64(pau)}
		}
	case *image.RGBA:
		i := (y-m.Rect.Min.Y)*m.Stride + (minX-m.Rect.Min.X)*4
		pix := m.Pix[i : i+4*n]
		for x := range f {
			p := pix[4*x : 4*x+4 : 4*x+4]
			f[x] = [4]float64{float64(uint32(p[0]) * 0x101), float64(uint32(p[1]) * 0x101), float64(uint32(p[2]) * 0x101), float64(uint32(p[3]) * 0x101)}
		}
	case *image.Paletted:
		// What Paletted.RGBA64At returns for each index, converted once per palette.
		if !samePalette(m.Palette, z.palOf) {
			z.pal = z.pal[:0]
			for _, c := range m.Palette {
				r, g, b, a := c.RGBA()
				z.pal = append(z.pal, color.RGBA64{uint16(r), uint16(g), uint16(b), uint16(a)})
			}
			z.palOf = m.Palette
		}
		if len(z.pal) < 256 {
			z.rgba64Row(f, m, y)
			break
		}
		i := (y-m.Rect.Min.Y)*m.Stride + minX - m.Rect.Min.X
		pix := m.Pix[i : i+n]
		for x, v := range pix {
			pu := z.pal[v]
			f[x] = [4]float64{float64(pu.R), float64(pu.G), float64(pu.B), float64(pu.A)}
		}
	default:
		z.rgba64Row(f, m, y)
	}
	for t, s := range z.h.sources {
		var pr, pg, pb, pa float64
		for _, c := range z.h.contribs[s.i:s.j] {
			p := &f[c.coord]
			pr += float64(p[0] * c.weight)
			pg += float64(p[1] * c.weight)
			pb += float64(p[2] * c.weight)
			pa += float64(p[3] * c.weight)
		}
		row[t] = [4]float64{pr * s.invTotalWeightFFFF, pg * s.invTotalWeightFFFF, pb * s.invTotalWeightFFFF, pa * s.invTotalWeightFFFF}
	}
}

// rgba64Row converts the sr part of row y of m as draw's scaleX_RGBA64Image reads it
// (scaleX_Image for an image without RGBA64At).
func (z *Scaler) rgba64Row(f [][4]float64, m image.Image, y int) {
	m64, _ := m.(image.RGBA64Image)
	for x := range f {
		var pu color.RGBA64
		if m64 != nil {
			pu = m64.RGBA64At(z.sr.Min.X+x, y)
		} else {
			r, g, b, a := m.At(z.sr.Min.X+x, y).RGBA()
			pu = color.RGBA64{uint16(r), uint16(g), uint16(b), uint16(a)}
		}
		f[x] = [4]float64{float64(pu.R), float64(pu.G), float64(pu.B), float64(pu.A)}
	}
}

// vertical writes target row dy from the ring, as draw's scaleY_RGBA64Image_Src does into an
// *image.NRGBA (whose SetRGBA64 un-premultiplies).
func (z *Scaler) vertical(dy int32) {
	s := z.v.sources[dy]
	cs := z.v.contribs[s.i:s.j]
	n := len(z.ring)
	d := z.dst
	i := d.PixOffset(d.Rect.Min.X, d.Rect.Min.Y+int(dy))
	pix := d.Pix[i : i+int(z.dw)*4]
	for dx := range int(z.dw) {
		var pr, pg, pb, pa float64
		for _, c := range cs {
			p := &z.ring[int(c.coord)%n][dx]
			pr += float64(p[0] * c.weight)
			pg += float64(p[1] * c.weight)
			pb += float64(p[2] * c.weight)
			pa += float64(p[3] * c.weight)
		}
		if pr > pa {
			pr = pa
		}
		if pg > pa {
			pg = pa
		}
		if pb > pa {
			pb = pa
		}
		r := uint32(ftou(pr * s.invTotalWeight))
		g := uint32(ftou(pg * s.invTotalWeight))
		b := uint32(ftou(pb * s.invTotalWeight))
		a := uint32(ftou(pa * s.invTotalWeight))
		if a != 0 && a != 0xffff {
			r = (r * 0xffff) / a
			g = (g * 0xffff) / a
			b = (b * 0xffff) / a
		}
		q := pix[dx*4 : dx*4+4 : dx*4+4]
		q[0] = uint8(r >> 8)
		q[1] = uint8(g >> 8)
		q[2] = uint8(b >> 8)
		q[3] = uint8(a >> 8)
	}
}

// samePalette says a and b are the same slice (a strip decoder hands every strip the same one).
func samePalette(a, b color.Palette) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}
