// Package flaccrc computes FLAC's two checksums: the frame header's CRC-8 (polynomial 0x07)
// and the whole frame's CRC-16 (polynomial 0x8005), both with a zero initial value. The
// encoder (flacenc) writes them and the decoder (flacdec) checks them.
package flaccrc

var crc8Table, crc16Table = func() (t8 [256]uint8, t16 [256]uint16) {
	for i := range 256 {
		c8 := uint8(i)
		c16 := uint16(i) << 8
		for range 8 {
			if c8&0x80 != 0 {
				c8 = c8<<1 ^ 0x07
			} else {
				c8 <<= 1
			}
			if c16&0x8000 != 0 {
				c16 = c16<<1 ^ 0x8005
			} else {
				c16 <<= 1
			}
		}
		t8[i], t16[i] = c8, c16
	}
	return
}()

// CRC8 is the CRC-8 of a frame header.
func CRC8(p []byte) uint8 {
	var c uint8
	for _, b := range p {
		c = crc8Table[c^b]
	}
	return c
}

// crc16Slices[k][b] is the CRC-16 of byte b followed by k zero bytes, for slicing by 8.
var crc16Slices = func() (t [8][256]uint16) {
	t[0] = crc16Table
	for k := 1; k < 8; k++ {
		for b := range 256 {
			v := t[k-1][b]
			t[k][b] = v<<8 ^ crc16Table[byte(v>>8)]
		}
	}
	return
}()

// CRC16 is the CRC-16 of a frame, eight bytes a step.
func CRC16(p []byte) uint16 {
	var c uint16
	t := &crc16Slices
	for len(p) >= 8 {
		c ^= uint16(p[0])<<8 | uint16(p[1])
		c = t[7][c>>8] ^ t[6][byte(c)] ^ t[5][p[2]] ^ t[4][p[3]] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]
		p = p[8:]
	}
	for _, b := range p {
		c = c<<8 ^ crc16Table[byte(c>>8)^b]
	}
	return c
}
