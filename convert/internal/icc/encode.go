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
	type tag struct {
		sig  string
		data []byte
	}
	xyz := func(x, y, z float64) []byte {
		b := []byte("XYZ \x00\x00\x00\x00")
		for _, v := range []float64{x, y, z} {
			b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(v*65536))))
		}
		return b
	}
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
	desc := []byte("mluc\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0cenUS")
	text := []byte{}
	for _, c := range []byte(p.Description) {
		text = append(text, 0, c)
	}
	desc = binary.BigEndian.AppendUint32(desc, uint32(len(text)))
	desc = binary.BigEndian.AppendUint32(desc, 28)
	desc = append(desc, text...)
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
	copy(h[12:], "mntr")
	copy(h[16:], "RGB ")
	copy(h[20:], "XYZ ")
	copy(h[36:], "acsp")
	// Rendering intent 0 (perceptual) at 64; the PCS illuminant (D50) at 68.
	for i, v := range []float64{0.9642, 1.0, 0.8249} {
		binary.BigEndian.PutUint32(h[68+4*i:], uint32(int32(math.Round(v*65536))))
	}
	out := append(h, table.Bytes()...)
	return append(out, data.Bytes()...)
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
