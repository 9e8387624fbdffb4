// Package icc reads the matrix/TRC RGB ICC profiles (version 2 and 4) that phones and cameras
// embed (Display P3, Adobe RGB, ProPhoto, sRGB) and converts 8-bit pixels from them to sRGB,
// as a colour-management module does with relative colorimetric intent: each channel through
// its tone curve to linear light, the colorant matrix to the PCS (XYZ, D50), the inverse of
// sRGB's D50-adapted matrix to linear sRGB, clipped, then sRGB's tone curve. CMYK profiles
// are read by ParseCMYK: their device-to-PCS lookup table, evaluated to XYZ and then to sRGB
// the same way. Other profiles built on lookup tables (RGB printer profiles) are refused with
// ErrUnsupported.
package icc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MaxSize bounds the profiles read: real matrix/TRC profiles are a few kilobytes, those with
// tables up to a few hundred.
const MaxSize = 4 << 20

// maxTags bounds the tag table.
const maxTags = 200

// ErrUnsupported reports a profile this package cannot convert from (not RGB, or no
// matrix/TRC tags).
var ErrUnsupported = errors.New("icc: not a matrix/TRC RGB profile")

// ErrFormat reports bytes that are not an ICC profile.
var ErrFormat = errors.New("icc: not a valid ICC profile")

// Curve is a tone curve (TRC): Gamma when Table and Param are empty, else a sampled table
// (0..65535 over 0..1) or an ICC parametric curve (Type 0 to 4 with its parameters g, a, b,
// c, d, e, f).
type Curve struct {
	Gamma float64
	Table []uint16
	Type  int
	Param []float64
}

// Eval maps an encoded value in 0..1 to linear light.
func (c Curve) Eval(x float64) float64 {
	switch {
	case c.Param != nil:
		p := c.Param
		g := p[0]
		switch c.Type {
		case 0:
			return math.Pow(x, g)
		case 1:
			if x >= -p[2]/p[1] {
				return math.Pow(p[1]*x+p[2], g)
			}
			return 0
		case 2:
			if x >= -p[2]/p[1] {
				return math.Pow(p[1]*x+p[2], g) + p[3]
			}
			return p[3]
		case 3:
			if x >= p[4] {
				return math.Pow(p[1]*x+p[2], g)
			}
			return p[3] * x
		case 4:
			if x >= p[4] {
				return math.Pow(p[1]*x+p[2], g) + p[5]
			}
			return p[3]*x + p[6]
		}
		return x
	case c.Table != nil:
		n := len(c.Table)
		if n == 1 {
			return x
		}
		pos := x * float64(n-1)
		i := int(pos)
		if i >= n-1 {
			return float64(c.Table[n-1]) / 65535
		}
		f := pos - float64(i)
		return (float64(c.Table[i])*(1-f) + float64(c.Table[i+1])*f) / 65535
	case c.Gamma != 0:
		return math.Pow(x, c.Gamma)
	}
	return x
}

// Profile is an RGB matrix/TRC profile: Matrix takes linear RGB to XYZ (D50), its columns
// being the red, green and blue colorants.
type Profile struct {
	Matrix [3][3]float64
	TRC    [3]Curve
	// Description is the profile's name ("Display P3"), when it has one.
	Description string
}

// Parse reads an ICC profile. It returns ErrFormat for bytes that are not one and
// ErrUnsupported for a profile without an RGB matrix/TRC.
func Parse(b []byte) (*Profile, error) {
	tags, err := readTags(b, func(space, pcs string) bool { return space == "RGB " && pcs == "XYZ " })
	if err != nil {
		return nil, err
	}
	p := &Profile{}
	for i, sig := range []string{"rXYZ", "gXYZ", "bXYZ"} {
		t, ok := tags[sig]
		if !ok || len(t) < 20 || string(t[:4]) != "XYZ " {
			return nil, ErrUnsupported
		}
		for j := range 3 {
			p.Matrix[j][i] = s15(t[8+4*j:])
		}
	}
	for i, sig := range []string{"rTRC", "gTRC", "bTRC"} {
		t, ok := tags[sig]
		if !ok {
			return nil, ErrUnsupported
		}
		c, err := parseCurve(t)
		if err != nil {
			return nil, err
		}
		p.TRC[i] = c
	}
	p.Description = description(tags["desc"])
	return p, nil
}

// readTags checks a profile's header, its colour space and PCS (with accept), and returns its
// tags by signature: ErrFormat for bytes that are not a profile, ErrUnsupported for a space
// accept refuses.
func readTags(b []byte, accept func(space, pcs string) bool) (map[string][]byte, error) {
	if len(b) < 132 || len(b) > MaxSize || string(b[36:40]) != "acsp" {
		return nil, ErrFormat
	}
	if size := binary.BigEndian.Uint32(b); int64(size) > int64(len(b)) || size < 132 {
		return nil, ErrFormat
	}
	if !accept(string(b[16:20]), string(b[20:24])) {
		return nil, fmt.Errorf("%w (colour space %q, connection space %q)", ErrUnsupported, b[16:20], b[20:24])
	}
	n := binary.BigEndian.Uint32(b[128:])
	if n > maxTags || 132+12*int64(n) > int64(len(b)) {
		return nil, ErrFormat
	}
	tags := map[string][]byte{}
	for i := range int(n) {
		e := b[132+12*i:]
		off, size := int64(binary.BigEndian.Uint32(e[4:])), int64(binary.BigEndian.Uint32(e[8:]))
		if off+size > int64(len(b)) || size < 8 {
			return nil, ErrFormat
		}
		tags[string(e[:4])] = b[off : off+size]
	}
	return tags, nil
}

func s15(b []byte) float64 { return float64(int32(binary.BigEndian.Uint32(b))) / 65536 }

// paramCount is how many parameters each parametric curve type has.
var paramCount = []int{1, 3, 4, 5, 7}

func parseCurve(t []byte) (Curve, error) {
	switch string(t[:4]) {
	case "curv":
		if len(t) < 12 {
			return Curve{}, ErrFormat
		}
		n := int64(binary.BigEndian.Uint32(t[8:]))
		switch {
		case n == 0:
			return Curve{Gamma: 1}, nil
		case n == 1:
			if len(t) < 14 {
				return Curve{}, ErrFormat
			}
			return Curve{Gamma: float64(binary.BigEndian.Uint16(t[12:])) / 256}, nil
		case 12+2*n > int64(len(t)):
			return Curve{}, ErrFormat
		}
		tab := make([]uint16, n)
		for i := range tab {
			tab[i] = binary.BigEndian.Uint16(t[12+2*i:])
		}
		return Curve{Table: tab}, nil
	case "para":
		if len(t) < 12 {
			return Curve{}, ErrFormat
		}
		typ := int(binary.BigEndian.Uint16(t[8:]))
		if typ >= len(paramCount) || len(t) < 12+4*paramCount[typ] {
			return Curve{}, ErrFormat
		}
		ps := make([]float64, 7)
		for i := range paramCount[typ] {
			ps[i] = s15(t[12+4*i:])
		}
		if typ > 0 && ps[1] == 0 {
			return Curve{}, ErrFormat
		}
		return Curve{Type: typ, Param: ps}, nil
	}
	return Curve{}, ErrUnsupported
}

// description reads a 'desc' (v2) or 'mluc' (v4, first record) tag's text, ASCII only.
func description(t []byte) string {
	if len(t) < 12 {
		return ""
	}
	var s []byte
	switch string(t[:4]) {
	case "desc":
		n := int(binary.BigEndian.Uint32(t[8:]))
		if n > 0 && 12+n <= len(t) {
			s = t[12 : 12+n]
		}
	case "mluc":
		if len(t) >= 28 && binary.BigEndian.Uint32(t[8:]) > 0 {
			l, off := int(binary.BigEndian.Uint32(t[20:])), int(binary.BigEndian.Uint32(t[24:]))
			if off+l <= len(t) && off >= 0 {
				for i := off + 1; i < off+l; i += 2 {
					s = append(s, t[i])
				}
			}
		}
	}
	out := make([]byte, 0, len(s))
	for _, c := range s {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		}
	}
	return string(out)
}

// xyzToSRGB takes XYZ (D50) to linear sRGB: the inverse of sRGB's Bradford-adapted D50 matrix.
var xyzToSRGB = [3][3]float64{
	{3.1338561, -1.6168667, -0.4906146},
	{-0.9787684, 1.9161415, 0.0334540},
	{0.0719453, -0.2289914, 1.4052427},
}

// SRGBEncode is sRGB's tone curve, linear light to encoded, both 0..1.
func SRGBEncode(v float64) float64 {
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

// SRGBDecode is sRGB's tone curve inverted.
func SRGBDecode(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// outLUTSize is the resolution of the linear-to-sRGB table.
const outLUTSize = 8192

// Transform converts 8-bit pixels from a profile to sRGB.
type Transform struct {
	lin [3][256]float32
	m   [3][3]float32
	out [outLUTSize + 1]uint8
}

// ToSRGB returns the transform from p to sRGB, or nil when p is sRGB already (its matrix and
// curves within half a level of sRGB's), so that the common tagged-sRGB file costs nothing.
func (p *Profile) ToSRGB() *Transform {
	var m [3][3]float64
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				m[i][j] += xyzToSRGB[i][k] * p.Matrix[k][j]
			}
		}
	}
	t := &Transform{}
	same := true
	for i := range 3 {
		for j := range 3 {
			t.m[i][j] = float32(m[i][j])
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(m[i][j]-want) > 0.003 {
				same = false
			}
		}
	}
	for c := range 3 {
		for v := range 256 {
			x := float64(v) / 255
			l := p.TRC[c].Eval(x)
			t.lin[c][v] = float32(l)
			if math.Abs(SRGBEncode(max(0, min(1, l)))-x)*255 > 0.5 {
				same = false
			}
		}
	}
	if same {
		return nil
	}
	for i := range t.out {
		t.out[i] = uint8(math.Round(SRGBEncode(float64(i)/outLUTSize) * 255))
	}
	return t
}

// Pixel converts one pixel.
func (t *Transform) Pixel(r, g, b uint8) (uint8, uint8, uint8) {
	lr, lg, lb := t.lin[0][r], t.lin[1][g], t.lin[2][b]
	return t.enc(t.m[0][0]*lr + t.m[0][1]*lg + t.m[0][2]*lb),
		t.enc(t.m[1][0]*lr + t.m[1][1]*lg + t.m[1][2]*lb),
		t.enc(t.m[2][0]*lr + t.m[2][1]*lg + t.m[2][2]*lb)
}

func (t *Transform) enc(v float32) uint8 {
	switch {
	case !(v > 0): // NaN from a hostile curve too
		return 0
	case v >= 1:
		return 255
	}
	return t.out[int(v*outLUTSize+0.5)]
}

// Apply converts 4-byte pixels (RGBA or NRGBA: the fourth byte is left alone) in place. It is
// for opaque RGBA and for NRGBA, whose colour bytes are not premultiplied.
func (t *Transform) Apply(pix []byte) {
	for i := 0; i+3 < len(pix); i += 4 {
		pix[i], pix[i+1], pix[i+2] = t.Pixel(pix[i], pix[i+1], pix[i+2])
	}
}
