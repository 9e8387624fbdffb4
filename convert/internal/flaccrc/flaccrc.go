// Package flaccrc computes FLAC's two checksums: the frame header's CRC-8 (polynomial 0x07)
// and the whole frame's CRC-16 (polynomial 0x8005), both with a zero initial value. The
// encoder (flacenc) writes them and the decoder (flacdec) checks them.
package flaccrc

import "sync"

// The tables are made on first use (sync.OnceValue), not at package initialisation, so a
// process that never reads or writes FLAC pays nothing for them.

// crcTables are the byte-at-a-time CRC-8 table and the CRC-16 tables for slicing by 8:
// crc16[k][b] is the CRC-16 of byte b followed by k zero bytes (crc16[0], byte at a time).
type crcTables struct {
	crc8  [256]uint8
	crc16 [8][256]uint16
}

var tables = sync.OnceValue(func() *crcTables {
	t := new(crcTables)
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
		t.crc8[i], t.crc16[0][i] = c8, c16
	}
	for k := 1; k < 8; k++ {
		for b := range 256 {
			v := t.crc16[k-1][b]
			t.crc16[k][b] = v<<8 ^ t.crc16[0][byte(v>>8)]
		}
	}
	return t
})

// CRC8 is the CRC-8 of a frame header.
func CRC8(p []byte) uint8 {
	var c uint8
	t := &tables().crc8
	for _, b := range p {
		c = t[c^b]
	}
	return c
}

// CRC16 is the CRC-16 of a frame, eight bytes a step.
func CRC16(p []byte) uint16 {
	var c uint16
	t := &tables().crc16
	for len(p) >= 8 {
		c ^= uint16(p[0])<<8 | uint16(p[1])
		c = t[7][c>>8] ^ t[6][byte(c)] ^ t[5][p[2]] ^ t[4][p[3]] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]
		p = p[8:]
	}
	for _, b := range p {
		c = c<<8 ^ t[0][byte(c>>8)^b]
	}
	return c
}
