package icc

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Encode writes p as a version 4 display profile of matrix/TRC form (parametric curves of
// type 3 or 0, or 'curv' tables), with a D50 white point and the description p.Description:
// the form Parse reads, and that other colour-management modules read too. Tests use it to
// build tagged inputs (Display P3) without a profile file on the machine.
func Encode(p *Profile) []byte {
	xyz := xyzTag
	curve := func(c Curve) []byte {
		var b []byte
		switch {
		case c.Param != nil:
			b = []byte("para\x00\x00\x00\x00")
			b = binary.BigEndian.AppendUint16(b, uint16(c.Type))
			b = append(b, 0, 0)
			for _, v := range c.Param[:paramCount[c.Type]] {
				b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(v*65536))))
			}
		case c.Table != nil:
			b = []byte("curv\x00\x00\x00\x00")
			b = binary.BigEndian.AppendUint32(b, uint32(len(c.Table)))
			for _, v := range c.Table {
				b = binary.BigEndian.AppendUint16(b, v)
			}
		default:
			b = []byte("curv\x00\x00\x00\x00\x00\x00\x00\x01")
			b = binary.BigEndian.AppendUint16(b, uint16(math.Round(c.Gamma*256)))
		}
		return b
	}
	desc := mlucTag(p.Description)
	tags := []tag{
		{"desc", desc},
		{"cprt", []byte("mluc\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0cenUS\x00\x00\x00\x02\x00\x00\x00\x1c\x00-")},
		{"wtpt", xyz(0.9642, 1.0, 0.8249)},
		{"rXYZ", xyz(p.Matrix[0][0], p.Matrix[1][0], p.Matrix[2][0])},
		{"gXYZ", xyz(p.Matrix[0][1], p.Matrix[1][1], p.Matrix[2][1])},
		{"bXYZ", xyz(p.Matrix[0][2], p.Matrix[1][2], p.Matrix[2][2])},
		{"rTRC", curve(p.TRC[0])},
		{"gTRC", curve(p.TRC[1])},
		{"bTRC", curve(p.TRC[2])},
	}
	return assemble("mntr", "RGB ", "XYZ ", tags)
}

// tag is one tag of a profile being written.
type tag struct {
	sig  string
	data []byte
}

// assemble writes a version 4.3 profile of the class, colour space and PCS with the tags.
func assemble(class, space, pcs string, tags []tag) []byte {
	off := 128 + 4 + 12*len(tags)
	var table, data bytes.Buffer
	binary.Write(&table, binary.BigEndian, uint32(len(tags)))
	for _, t := range tags {
		for (off+data.Len())%4 != 0 {
			data.WriteByte(0)
		}
		table.WriteString(t.sig)
		binary.Write(&table, binary.BigEndian, uint32(off+data.Len()))
		binary.Write(&table, binary.BigEndian, uint32(len(t.data)))
		data.Write(t.data)
	}
	for data.Len()%4 != 0 {
		data.WriteByte(0)
	}
	h := make([]byte, 128)
	total := 128 + table.Len() + data.Len()
	binary.BigEndian.PutUint32(h, uint32(total))
	copy(h[4:], "none")
	h[8], h[9] = 4, 0x30 // version 4.3
	copy(h[12:], class)
	copy(h[16:], space)
	copy(h[20:], pcs)
	copy(h[36:], "acsp")
	// Rendering intent 0 (perceptual) at 64; the PCS illuminant (D50) at 68.
	for i, v := range []float64{0.9642, 1.0, 0.8249} {
		binary.BigEndian.PutUint32(h[68+4*i:], uint32(int32(math.Round(v*65536))))
	}
	out := append(h, table.Bytes()...)
	return append(out, data.Bytes()...)
}

// xyzTag is an XYZType tag of one value.
func xyzTag(x, y, z float64) []byte {
	b := []byte("XYZ \x00\x00\x00\x00")
	for _, v := range []float64{x, y, z} {
		b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(v*65536))))
	}
	return b
}

// mlucTag is a multiLocalizedUnicodeType tag of one English ASCII text.
func mlucTag(s string) []byte {
	b := []byte("mluc\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0cenUS")
	text := []byte{}
	for _, c := range []byte(s) {
		text = append(text, 0, c)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(text)))
	b = binary.BigEndian.AppendUint32(b, 28)
	return append(b, text...)
}

// EncodeCMYK writes a version 4 output profile for CMYK with a Lab PCS whose A2B0 tag is a
// lut16 (mft2) table (A2B1 the same) and the media white point white (XYZ): input curves of 256 entries (in[i], nil for the identity), a colour
// table of grid points per input sampled from lab (device values 0..1, 0 = no ink), and
// identity output curves. Tests use it to make CMYK JPEGs with a profile whose numbers are
// this project's own.
func EncodeCMYK(desc string, white [3]float64, grid int, in [4]func(float64) float64, lab func(c, m, y, k float64) (L, a, b float64)) []byte {
	t := []byte("mft2\x00\x00\x00\x00")
	t = append(t, 4, 3, byte(grid), 0)
	for i := range 9 { // the identity matrix, unused for CMYK input
		v := uint32(0)
		if i%4 == 0 {
			v = 1 << 16
		}
		t = binary.BigEndian.AppendUint32(t, v)
	}
	t = binary.BigEndian.AppendUint16(t, 256)
	t = binary.BigEndian.AppendUint16(t, 2)
	enc16 := func(v float64) uint16 { return uint16(math.Round(max(0, min(1, v)) * 65535)) }
	for i := range 4 {
		for v := range 256 {
			x := float64(v) / 255
			if in[i] != nil {
				x = in[i](x)
			}
			t = binary.BigEndian.AppendUint16(t, enc16(x))
		}
	}
	// The legacy 16-bit Lab encoding of lut16: 0xFF00 is L 100 and a, b 127.
	s := 65280.0 / 65535
	for i := range grid * grid * grid * grid {
		q := [4]int{i / (grid * grid * grid), i / (grid * grid) % grid, i / grid % grid, i % grid}
		L, a, b := lab(float64(q[0])/float64(grid-1), float64(q[1])/float64(grid-1), float64(q[2])/float64(grid-1), float64(q[3])/float64(grid-1))
		t = binary.BigEndian.AppendUint16(t, enc16(L/100*s))
		t = binary.BigEndian.AppendUint16(t, enc16((a+128)/255*s))
		t = binary.BigEndian.AppendUint16(t, enc16((b+128)/255*s))
	}
	for range 3 {
		t = binary.BigEndian.AppendUint16(t, 0)
		t = binary.BigEndian.AppendUint16(t, 65535)
	}
	return assemble("prtr", "CMYK", "Lab ", []tag{
		{"desc", mlucTag(desc)},
		{"cprt", mlucTag("-")},
		{"wtpt", xyzTag(white[0], white[1], white[2])},
		{"A2B0", t},
		{"A2B1", t}, // Little CMS honours relative colorimetric only with its own table
	})
}

// DisplayP3 is the Display P3 profile's content: P3 primaries at D65, adapted to D50 by
// Bradford (as Apple's profile has them), and sRGB's tone curve.
func DisplayP3() *Profile {
	srgb := Curve{Type: 3, Param: []float64{2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045, 0, 0}}
	return &Profile{
		Description: "Display P3",
		Matrix: [3][3]float64{
			{0.515102, 0.291965, 0.157153},
			{0.241182, 0.692236, 0.066582},
			{-0.001049, 0.041882, 0.784378},
		},
		TRC: [3]Curve{srgb, srgb, srgb},
	}
}

// SampleCMYK is a CMYK profile of this project's own for tests: a model of four inks on a
// slightly warm paper (each ink absorbing mostly its own third of the spectrum, black all of
// it, with dot gain), tabulated on a 9-point grid, with a dot-gain input curve on black. Its
// tables are media-relative, as ICC profiles' are: the paper is the PCS white (L 100), and the
// media white point tag holds the paper's own colour.
func SampleCMYK() []byte {
	srgbToXYZ := invert3(xyzToSRGB)
	lab := func(c, m, y, k float64) (float64, float64, float64) {
		gain := func(v float64) float64 { return 1 - math.Pow(1-v, 1.4) }
		c, m, y, k = gain(c), gain(m), gain(y), gain(k)
		r := (1 - 0.85*c) * (1 - 0.08*m) * (1 - 0.02*y) * (1 - 0.9*k)
		g := (1 - 0.25*c) * (1 - 0.85*m) * (1 - 0.05*y) * (1 - 0.9*k)
		b := (1 - 0.10*c) * (1 - 0.20*m) * (1 - 0.85*y) * (1 - 0.9*k)
		var xyz [3]float64
		for i := range 3 {
			xyz[i] = srgbToXYZ[i][0]*r + srgbToXYZ[i][1]*g + srgbToXYZ[i][2]*b
		}
		return XYZToLab(xyz)
	}
	k := func(v float64) float64 { return math.Pow(v, 0.9) }
	var paper [3]float64
	for i := range 3 {
		paper[i] = srgbToXYZ[i][0]*0.88 + srgbToXYZ[i][1]*0.87 + srgbToXYZ[i][2]*0.84
	}
	return EncodeCMYK("convsvc sample CMYK", paper, 9, [4]func(float64) float64{nil, nil, nil, k}, lab)
}

// XYZToLab converts XYZ to CIE Lab, both relative to D50.
func XYZToLab(xyz [3]float64) (L, a, b float64) {
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return t*24389/27/116 + 16.0/116
	}
	fx, fy, fz := f(xyz[0]/d50[0]), f(xyz[1]/d50[1]), f(xyz[2]/d50[2])
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// invert3 inverts a 3x3 matrix.
func invert3(m [3][3]float64) [3][3]float64 {
	det := m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	var r [3][3]float64
	r[0][0] = (m[1][1]*m[2][2] - m[1][2]*m[2][1]) / det
	r[0][1] = (m[0][2]*m[2][1] - m[0][1]*m[2][2]) / det
	r[0][2] = (m[0][1]*m[1][2] - m[0][2]*m[1][1]) / det
	r[1][0] = (m[1][2]*m[2][0] - m[1][0]*m[2][2]) / det
	r[1][1] = (m[0][0]*m[2][2] - m[0][2]*m[2][0]) / det
	r[1][2] = (m[0][2]*m[1][0] - m[0][0]*m[1][2]) / det
	r[2][0] = (m[1][0]*m[2][1] - m[1][1]*m[2][0]) / det
	r[2][1] = (m[0][1]*m[2][0] - m[0][0]*m[2][1]) / det
	r[2][2] = (m[0][0]*m[1][1] - m[0][1]*m[1][0]) / det
	return r
}
