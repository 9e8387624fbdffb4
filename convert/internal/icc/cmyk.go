package icc

import (
	"encoding/binary"
	"fmt"
	"image"
	"math"
)

// CMYKProfile is the device-to-PCS table of a CMYK profile (a printer's or a separation's, as
// Photoshop embeds in CMYK JPEGs): its A2B1 (relative colorimetric) tag, else A2B0, of type
// lut8 (mft1), lut16 (mft2) or lutAtoB (mAB), with the PCS Lab or XYZ.
type CMYKProfile struct {
	// Description is the profile's name, when it has one.
	Description string
	lut         *lutAtoB
}

// lutAtoB is a device-to-PCS pipeline: per-channel A curves, a 4-input colour lookup table
// with 3 outputs, then (mAB only) M curves and a matrix, and the B (mft: output) curves; each
// stage works on values in 0..1. pcs says how the result encodes the PCS.
type lutAtoB struct {
	a      [4]Curve
	grid   [4]int
	clut   []float32 // grid[0]*grid[1]*grid[2]*grid[3] entries of 3 outputs, first input slowest
	m      *[3]Curve
	matrix *[12]float64 // 3x3 then the offsets, applied after the M curves
	b      [3]Curve
	pcs    pcsEncoding
}

// pcsEncoding is how a table's 0..1 outputs encode the PCS.
type pcsEncoding int

const (
	pcsLab8    pcsEncoding = iota // lut8: L 0..100, a and b -128..127 over 0..255
	pcsLab16v2                    // lut16: the legacy Lab encoding, 0xFF00 for L 100
	pcsLabV4                      // lutAtoB: L 0..100 over 0..65535
	pcsXYZ                        // all: u1Fixed15, 0x8000 for 1.0
)

// maxCLUTEntries bounds a colour table (grid points to the fourth power): 33^4 is about a million.
const maxCLUTEntries = 1 << 21

// ParseCMYK reads a CMYK profile's device-to-PCS table. It returns ErrFormat for bytes that are
// not an ICC profile and ErrUnsupported for one that is not CMYK or has no table it reads.
func ParseCMYK(b []byte) (*CMYKProfile, error) {
	tags, err := readTags(b, func(space, pcs string) bool { return space == "CMYK" && (pcs == "Lab " || pcs == "XYZ ") })
	if err != nil {
		return nil, err
	}
	t, ok := tags["A2B1"]
	if !ok {
		if t, ok = tags["A2B0"]; !ok {
			return nil, fmt.Errorf("%w (a CMYK profile without an A2B0 or A2B1 table)", ErrUnsupported)
		}
	}
	lut, err := parseLut(t, string(b[20:24]) == "Lab ")
	if err != nil {
		return nil, err
	}
	return &CMYKProfile{Description: description(tags["desc"]), lut: lut}, nil
}

// parseLut reads a lut8, lut16 or lutAtoB tag with 4 inputs and 3 outputs.
func parseLut(t []byte, lab bool) (*lutAtoB, error) {
	if len(t) < 12 {
		return nil, ErrFormat
	}
	typ := string(t[:4])
	if typ != "mft1" && typ != "mft2" && typ != "mAB " {
		return nil, fmt.Errorf("%w (device-to-PCS table of type %q)", ErrUnsupported, typ)
	}
	if t[8] != 4 || t[9] != 3 {
		return nil, fmt.Errorf("%w (a table of %d inputs and %d outputs, not CMYK to 3)", ErrUnsupported, t[8], t[9])
	}
	if typ == "mAB " {
		return parseMAB(t, lab)
	}
	l := &lutAtoB{}
	g := int(t[10])
	if g < 2 {
		return nil, ErrFormat
	}
	l.grid = [4]int{g, g, g, g}
	entries := g * g * g * g
	if entries > maxCLUTEntries {
		return nil, ErrFormat
	}
	// The 3x3 matrix at 12 applies only to XYZ input: skipped for CMYK.
	off := 48
	inN, outN, width := 256, 256, 1
	if typ == "mft2" {
		if len(t) < 52 {
			return nil, ErrFormat
		}
		inN, outN, width = int(binary.BigEndian.Uint16(t[48:])), int(binary.BigEndian.Uint16(t[50:])), 2
		off = 52
		if inN < 2 || inN > 4096 || outN < 2 || outN > 4096 {
			return nil, ErrFormat
		}
	}
	need := int64(off) + int64(width)*(4*int64(inN)+3*int64(entries)+3*int64(outN))
	if need > int64(len(t)) {
		return nil, ErrFormat
	}
	sample := func(i int) uint16 {
		if width == 1 {
			return uint16(t[i]) * 257
		}
		return binary.BigEndian.Uint16(t[i:])
	}
	table := func(n int) Curve {
		c := Curve{Table: make([]uint16, n)}
		for i := range c.Table {
			c.Table[i] = sample(off)
			off += width
		}
		return c
	}
	for i := range 4 {
		l.a[i] = table(inN)
	}
	l.clut = make([]float32, 3*entries)
	scale := float32(1) / 65535
	for i := range l.clut {
		l.clut[i] = float32(sample(off)) * scale
		off += width
	}
	for i := range 3 {
		l.b[i] = table(outN)
	}
	switch {
	case !lab:
		l.pcs = pcsXYZ
	case typ == "mft1":
		l.pcs = pcsLab8
	default:
		l.pcs = pcsLab16v2
	}
	return l, nil
}

// parseMAB reads a lutAtoBType: offsets of the B curves, the matrix, the M curves, the CLUT and
// the A curves (each may be 0, absent; the B curves are required).
func parseMAB(t []byte, lab bool) (*lutAtoB, error) {
	if len(t) < 32 {
		return nil, ErrFormat
	}
	l := &lutAtoB{pcs: pcsXYZ}
	if lab {
		l.pcs = pcsLabV4
	}
	offB, offMat, offM, offCLUT, offA := binary.BigEndian.Uint32(t[12:]), binary.BigEndian.Uint32(t[16:]), binary.BigEndian.Uint32(t[20:]), binary.BigEndian.Uint32(t[24:]), binary.BigEndian.Uint32(t[28:])
	curves := func(off uint32, n int) ([]Curve, error) {
		out := make([]Curve, n)
		at := int64(off)
		for i := range n {
			if at+12 > int64(len(t)) {
				return nil, ErrFormat
			}
			c, size, err := curveAt(t[at:])
			if err != nil {
				return nil, err
			}
			out[i] = c
			at += (size + 3) &^ 3
		}
		return out, nil
	}
	if offB == 0 || offCLUT == 0 {
		return nil, fmt.Errorf("%w (a lutAtoB table without B curves or a colour table)", ErrUnsupported)
	}
	bc, err := curves(offB, 3)
	if err != nil {
		return nil, err
	}
	copy(l.b[:], bc)
	if offA != 0 {
		ac, err := curves(offA, 4)
		if err != nil {
			return nil, err
		}
		copy(l.a[:], ac)
	} // else the zero Curve, the identity
	if offM != 0 {
		mc, err := curves(offM, 3)
		if err != nil {
			return nil, err
		}
		l.m = &[3]Curve{mc[0], mc[1], mc[2]}
		if offMat != 0 {
			if int64(offMat)+48 > int64(len(t)) {
				return nil, ErrFormat
			}
			var mat [12]float64
			for i := range mat {
				mat[i] = s15(t[int64(offMat)+4*int64(i):])
			}
			l.matrix = &mat
		}
	}
	c := int64(offCLUT)
	if c+20 > int64(len(t)) {
		return nil, ErrFormat
	}
	entries := 1
	for i := range 4 {
		l.grid[i] = int(t[c+int64(i)])
		if l.grid[i] < 2 {
			return nil, ErrFormat
		}
		entries *= l.grid[i]
	}
	if entries > maxCLUTEntries {
		return nil, ErrFormat
	}
	width := int64(t[c+16])
	if width != 1 && width != 2 {
		return nil, ErrFormat
	}
	if c+20+width*3*int64(entries) > int64(len(t)) {
		return nil, ErrFormat
	}
	l.clut = make([]float32, 3*entries)
	for i := range l.clut {
		at := c + 20 + width*int64(i)
		if width == 1 {
			l.clut[i] = float32(t[at]) / 255
		} else {
			l.clut[i] = float32(binary.BigEndian.Uint16(t[at:])) / 65535
		}
	}
	return l, nil
}

// curveAt reads a curv or para element and its size in bytes (unpadded).
func curveAt(t []byte) (Curve, int64, error) {
	c, err := parseCurve(t)
	if err != nil {
		return Curve{}, 0, err
	}
	switch string(t[:4]) {
	case "curv":
		return c, 12 + 2*int64(binary.BigEndian.Uint32(t[8:])), nil
	default: // para
		return c, 12 + 4*int64(paramCount[binary.BigEndian.Uint16(t[8:])]), nil
	}
}

// eval runs the pipeline on one colour in 0..1 and returns the PCS as XYZ (D50).
func (l *lutAtoB) eval(in [4]float64) [3]float64 {
	var x [4]float64
	for i := range 4 {
		x[i] = clamp01(l.a[i].Eval(clamp01(in[i])))
	}
	return l.afterA(x)
}

// afterA runs the pipeline from the colour table on (the A curves' outputs) to XYZ (D50).
func (l *lutAtoB) afterA(x [4]float64) [3]float64 {
	v := l.interp(x)
	if l.m != nil {
		for i := range 3 {
			v[i] = clamp01(l.m[i].Eval(clamp01(v[i])))
		}
		if l.matrix != nil {
			m := l.matrix
			v = [3]float64{
				m[0]*v[0] + m[1]*v[1] + m[2]*v[2] + m[9],
				m[3]*v[0] + m[4]*v[1] + m[5]*v[2] + m[10],
				m[6]*v[0] + m[7]*v[1] + m[8]*v[2] + m[11],
			}
		}
	}
	for i := range 3 {
		v[i] = clamp01(l.b[i].Eval(clamp01(v[i])))
	}
	return l.pcs.toXYZ(v)
}

// interp interpolates the colour table as Little CMS does for four inputs: linearly along the
// first, tetrahedrally over the other three.
func (l *lutAtoB) interp(x [4]float64) [3]float64 {
	g := l.grid
	var pos [4]float64
	var idx [4]int
	for i := range 4 {
		p := x[i] * float64(g[i]-1)
		k := min(int(p), g[i]-2)
		idx[i], pos[i] = k, p-float64(k)
	}
	stride := [4]int{3 * g[1] * g[2] * g[3], 3 * g[2] * g[3], 3 * g[3], 3}
	slice := func(base int) [3]float64 {
		// Walk from the cell's low corner along the axes in order of decreasing fraction.
		f := [3]float64{pos[1], pos[2], pos[3]}
		s := [3]int{stride[1], stride[2], stride[3]}
		o := [3]int{0, 1, 2}
		if f[o[0]] < f[o[1]] {
			o[0], o[1] = o[1], o[0]
		}
		if f[o[1]] < f[o[2]] {
			o[1], o[2] = o[2], o[1]
		}
		if f[o[0]] < f[o[1]] {
			o[0], o[1] = o[1], o[0]
		}
		c0 := base
		c1 := c0 + s[o[0]]
		c2 := c1 + s[o[1]]
		c3 := c2 + s[o[2]]
		var out [3]float64
		for ch := range 3 {
			v0, v1, v2, v3 := float64(l.clut[c0+ch]), float64(l.clut[c1+ch]), float64(l.clut[c2+ch]), float64(l.clut[c3+ch])
			out[ch] = v0 + (v1-v0)*f[o[0]] + (v2-v1)*f[o[1]] + (v3-v2)*f[o[2]]
		}
		return out
	}
	base := idx[0]*stride[0] + idx[1]*stride[1] + idx[2]*stride[2] + idx[3]*stride[3]
	lo := slice(base)
	if pos[0] == 0 {
		return lo
	}
	hi := slice(base + stride[0])
	for ch := range 3 {
		lo[ch] += (hi[ch] - lo[ch]) * pos[0]
	}
	return lo
}

func clamp01(v float64) float64 {
	switch {
	case !(v > 0):
		return 0
	case v > 1:
		return 1
	}
	return v
}

// d50 is the PCS white point.
var d50 = [3]float64{0.9642, 1, 0.8249}

// toXYZ decodes a table's output as XYZ (D50).
func (e pcsEncoding) toXYZ(v [3]float64) [3]float64 {
	var L, a, b float64
	switch e {
	case pcsXYZ:
		s := 65535.0 / 32768
		return [3]float64{v[0] * s, v[1] * s, v[2] * s}
	case pcsLab16v2:
		s := 65535.0 / 65280
		L, a, b = v[0]*s*100, v[1]*s*255-128, v[2]*s*255-128
	default: // pcsLab8, pcsLabV4
		L, a, b = v[0]*100, v[1]*255-128, v[2]*255-128
	}
	return LabToXYZ(L, a, b)
}

// LabToXYZ converts CIE Lab to XYZ, both relative to D50.
func LabToXYZ(L, a, b float64) [3]float64 {
	fy := (L + 16) / 116
	fx, fz := fy+a/500, fy-b/200
	finv := func(t float64) float64 {
		if t > 6.0/29 {
			return t * t * t
		}
		return 3 * (6.0 / 29) * (6.0 / 29) * (t - 4.0/29)
	}
	return [3]float64{d50[0] * finv(fx), d50[1] * finv(fy), d50[2] * finv(fz)}
}

// CMYKTransform converts 8-bit CMYK pixels (0 = no ink, as image.CMYK holds them) through a
// CMYK profile to sRGB, with relative colorimetric intent and no black-point compensation,
// as Little CMS does by default (vips icc_transform, ImageMagick -profile).
type CMYKTransform struct {
	lut *lutAtoB
	// in is each channel's A curve, tabulated for the 256 8-bit values.
	in [4][256]float64
	// out is sRGB's tone curve over linear light.
	out [outLUTSize + 1]uint8
}

// ToSRGB returns the transform from p to sRGB.
func (p *CMYKProfile) ToSRGB() *CMYKTransform {
	t := &CMYKTransform{lut: p.lut}
	for c := range 4 {
		for v := range 256 {
			t.in[c][v] = clamp01(p.lut.a[c].Eval(float64(v) / 255))
		}
	}
	for i := range t.out {
		t.out[i] = uint8(math.Round(SRGBEncode(float64(i)/outLUTSize) * 255))
	}
	return t
}

// Pixel converts one CMYK pixel to sRGB.
func (t *CMYKTransform) Pixel(c, m, y, k uint8) (uint8, uint8, uint8) {
	xyz := t.lut.afterA([4]float64{t.in[0][c], t.in[1][m], t.in[2][y], t.in[3][k]})
	enc := func(row [3]float64) uint8 {
		s := row[0]*xyz[0] + row[1]*xyz[1] + row[2]*xyz[2]
		switch {
		case !(s > 0):
			return 0
		case s >= 1:
			return 255
		}
		return t.out[int(s*outLUTSize+0.5)]
	}
	return enc(xyzToSRGB[0]), enc(xyzToSRGB[1]), enc(xyzToSRGB[2])
}

// ConvertCMYK converts img's pixels to sRGB in place and returns them as an opaque RGBA image
// over the same bytes (a CMYK pixel and an RGBA pixel are both four bytes). Colours repeat in
// photos' flat areas, so the last conversion is remembered.
func (t *CMYKTransform) ConvertCMYK(img *image.CMYK) *image.RGBA {
	b := img.Bounds()
	var last [4]uint8
	var lr, lg, lb uint8
	have := false
	for y := range b.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+4*b.Dx()]
		for i := 0; i+3 < len(row); i += 4 {
			px := [4]uint8{row[i], row[i+1], row[i+2], row[i+3]}
			if !have || px != last {
				lr, lg, lb = t.Pixel(px[0], px[1], px[2], px[3])
				last, have = px, true
			}
			row[i], row[i+1], row[i+2], row[i+3] = lr, lg, lb, 255
		}
	}
	return &image.RGBA{Pix: img.Pix, Stride: img.Stride, Rect: img.Rect}
}
