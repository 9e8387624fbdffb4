package convert

import (
	"context"
	"image"
	"image/color"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/soniakeys/quant/median"
)

// maxPaletteSample bounds how many pixels the median-cut quantizer sees. Its memory is about
// ten bytes a pixel and its time grows with the count, while a palette of 256 colors is as good
// from a quarter million well-spread pixels as from a hundred million.
const maxPaletteSample = 1 << 18

// alphaThreshold: pixels less opaque than this become the transparent GIF index, the rest opaque.
const alphaThreshold = 128

// toPaletted reduces an image to at most 256 colors for GIF. An image with few enough colors keeps
// them exactly; otherwise the palette is chosen by median cut and the image dithered with
// Floyd-Steinberg. GIF has one-bit transparency, so alpha is thresholded at half.
func toPaletted(ctx context.Context, img image.Image) (*image.Paletted, error) {
	switch m := img.(type) {
	case *image.Paletted:
		if len(m.Palette) <= 256 && len(m.Palette) > 0 {
			return m, nil
		}
	case *image.Gray:
		pal := make(color.Palette, 256)
		for i := range pal {
			pal[i] = color.Gray{Y: uint8(i)}
		}
		return &image.Paletted{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect, Palette: pal}, nil
	}
	src := toNRGBA(to8bit(img))
	if pm := exactPaletted(src); pm != nil {
		return pm, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pal, transparent := medianPalette(src)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ditherFS(ctx, src, pal, transparent)
}

// packColor is the key for one GIF color: transparent pixels all share key 0, and opaque
// pixels carry alpha 255, so no opaque key is 0.
func packColor(r, g, b, a uint8) uint32 {
	if a < alphaThreshold {
		return 0
	}
	return uint32(r)<<24 | uint32(g)<<16 | uint32(b)<<8 | 0xff
}

// exactPaletted returns m as a paletted image without loss of color when it has at most 256
// distinct colors (after thresholding alpha), else nil. A photo gives up after a few hundred pixels.
func exactPaletted(m *image.NRGBA) *image.Paletted {
	b := m.Bounds()
	index := make(map[uint32]uint8, 256)
	var keys []uint32
	for y := 0; y < b.Dy(); y++ {
		row := m.Pix[y*m.Stride:]
		for i := 0; i < 4*b.Dx(); i += 4 {
			k := packColor(row[i], row[i+1], row[i+2], row[i+3])
			if _, ok := index[k]; !ok {
				if len(keys) == 256 {
					return nil
				}
				index[k] = uint8(len(keys))
				keys = append(keys, k)
			}
		}
	}
	pal := make(color.Palette, len(keys))
	for i, k := range keys {
		if k == 0 {
			pal[i] = color.NRGBA{}
		} else {
			pal[i] = color.NRGBA{R: uint8(k >> 24), G: uint8(k >> 16), B: uint8(k >> 8), A: 0xff}
		}
	}
	pm := image.NewPaletted(b, pal)
	for y := 0; y < b.Dy(); y++ {
		row := m.Pix[y*m.Stride:]
		out := pm.Pix[y*pm.Stride:]
		for x := 0; x < b.Dx(); x++ {
			i := 4 * x
			out[x] = index[packColor(row[i], row[i+1], row[i+2], row[i+3])]
		}
	}
	return pm
}

// medianPalette chooses up to 256 colors by median cut over a spread sample of the opaque
// pixels; when the image has transparent pixels the last entry is transparent.
func medianPalette(m *image.NRGBA) (pal color.Palette, transparent bool) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	total := w * h
	step := max(1, total/maxPaletteSample)
	// A jittered stride spreads samples without locking onto the image's columns.
	rng := rand.New(rand.NewPCG(1, 2))
	sample := make([]uint8, 0, 4*min(total, maxPaletteSample+1))
	for p := 0; p < total; {
		x, y := p%w, p/w
		i := y*m.Stride + 4*x
		if m.Pix[i+3] < alphaThreshold {
			transparent = true
		} else {
			sample = append(sample, m.Pix[i], m.Pix[i+1], m.Pix[i+2], 0xff)
		}
		if step == 1 {
			p++
		} else {
			p += 1 + rng.IntN(2*step-1)
		}
	}
	if !transparent && step > 1 {
		// The sample may have skipped every transparent pixel; look for one properly.
		transparent = !m.Opaque() && hasTransparent(m)
	}
	n := 256
	if transparent {
		n = 255
	}
	if len(sample) > 0 {
		simg := &image.NRGBA{Pix: sample, Stride: len(sample), Rect: image.Rect(0, 0, len(sample)/4, 1)}
		for _, c := range median.Quantizer(n).Quantize(make(color.Palette, 0, n), simg) {
			r, g, b, _ := c.RGBA()
			pal = append(pal, color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0xff})
		}
	}
	if len(pal) == 0 {
		pal = append(pal, color.NRGBA{A: 0xff})
	}
	if transparent {
		pal = append(pal, color.NRGBA{})
	}
	return pal, transparent
}

func hasTransparent(m *image.NRGBA) bool {
	b := m.Bounds()
	for y := 0; y < b.Dy(); y++ {
		row := m.Pix[y*m.Stride:]
		for i := 3; i < 4*b.Dx(); i += 4 {
			if row[i] < alphaThreshold {
				return true
			}
		}
	}
	return false
}

// nearestFinder finds the palette entry nearest to a color (squared RGB distance), exactly:
// entries are sorted by green, and the search walks outward from the target's green until the
// green distance alone exceeds the best match. A small direct-mapped cache catches flat areas.
type nearestFinder struct {
	r, g, b []int32
	idx     []uint8
	cache   [4096]struct {
		key uint32 // packed color + 1, so 0 means empty
		idx uint8
	}
}

func newNearestFinder(pal color.Palette, skip int) *nearestFinder {
	type entry struct {
		r, g, b int32
		i       uint8
	}
	var es []entry
	for i, c := range pal {
		if i == skip {
			continue
		}
		r, g, b, _ := c.RGBA()
		es = append(es, entry{int32(r >> 8), int32(g >> 8), int32(b >> 8), uint8(i)})
	}
	slices.SortFunc(es, func(a, b entry) int { return int(a.g - b.g) })
	f := &nearestFinder{}
	for _, e := range es {
		f.r = append(f.r, e.r)
		f.g = append(f.g, e.g)
		f.b = append(f.b, e.b)
		f.idx = append(f.idx, e.i)
	}
	return f
}

// nearest returns the palette index nearest to (r, g, b), each in 0..255.
func (f *nearestFinder) nearest(r, g, b int32) uint8 {
	key := uint32(r)<<16 | uint32(g)<<8 | uint32(b)
	slot := &f.cache[(key*2654435761)>>20]
	if slot.key == key+1 {
		return slot.idx
	}
	n := len(f.g)
	hi := sort.Search(n, func(i int) bool { return f.g[i] >= g })
	lo := hi - 1
	best, bi := int32(1<<30), 0
	for lo >= 0 || hi < n {
		if hi < n {
			dg := f.g[hi] - g
			if dg*dg >= best {
				hi = n
			} else {
				dr, db := f.r[hi]-r, f.b[hi]-b
				if d := dr*dr + dg*dg + db*db; d < best {
					best, bi = d, hi
				}
				hi++
			}
		}
		if lo >= 0 {
			dg := g - f.g[lo]
			if dg*dg >= best {
				lo = -1
			} else {
				dr, db := f.r[lo]-r, f.b[lo]-b
				if d := dr*dr + dg*dg + db*db; d < best {
					best, bi = d, lo
				}
				lo--
			}
		}
	}
	slot.key, slot.idx = key+1, f.idx[bi]
	return f.idx[bi]
}

// ditherFS maps m onto pal with Floyd-Steinberg error diffusion. When transparent is true the
// last palette entry is transparent and receives every pixel below alphaThreshold.
func ditherFS(ctx context.Context, m *image.NRGBA, pal color.Palette, transparent bool) (*image.Paletted, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	pm := image.NewPaletted(b, pal)
	transIdx := -1
	if transparent {
		transIdx = len(pal) - 1
	}
	f := newNearestFinder(pal, transIdx)
	pr, pg, pb := make([]int32, len(pal)), make([]int32, len(pal)), make([]int32, len(pal))
	for i, c := range pal {
		r, g, b, _ := c.RGBA()
		pr[i], pg[i], pb[i] = int32(r>>8), int32(g>>8), int32(b>>8)
	}
	// Errors are kept times 16, for columns -1..w, so the edges need no special case.
	cur := make([]int32, 3*(w+2))
	next := make([]int32, 3*(w+2))
	for y := 0; y < h; y++ {
		if y%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		row := m.Pix[y*m.Stride:]
		out := pm.Pix[y*pm.Stride:]
		clear(next)
		for x := 0; x < w; x++ {
			i := 4 * x
			if row[i+3] < alphaThreshold {
				out[x] = uint8(transIdx)
				continue
			}
			e := 3 * (x + 1)
			r := clamp8(int32(row[i]) + (cur[e]+8)>>4)
			g := clamp8(int32(row[i+1]) + (cur[e+1]+8)>>4)
			bl := clamp8(int32(row[i+2]) + (cur[e+2]+8)>>4)
			pi := f.nearest(r, g, bl)
			out[x] = pi
			er, eg, eb := r-pr[pi], g-pg[pi], bl-pb[pi]
			cur[e+3] += er * 7
			cur[e+4] += eg * 7
			cur[e+5] += eb * 7
			next[e-3] += er * 3
			next[e-2] += eg * 3
			next[e-1] += eb * 3
			next[e] += er * 5
			next[e+1] += eg * 5
			next[e+2] += eb * 5
			next[e+3] += er
			next[e+4] += eg
			next[e+5] += eb
		}
		cur, next = next, cur
	}
	return pm, nil
}

func clamp8(v int32) int32 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return v
}
