package pngstream

import "encoding/binary"

// PNG filter types.
const (
	ftNone    = 0
	ftSub     = 1
	ftUp      = 2
	ftAverage = 3
	ftPaeth   = 4
)

// The unfilter functions undo one row's filter and write the final pixels in one pass: dst
// is the image row, cur the filtered row as inflated, prev the image row above (or zeros).
// Reading the row above from the image itself (image/png unfilters in place into a row
// buffer, then converts and copies) and specialising per layout are written by hand for
// measured speed: with the same inflater (compress/zlib) the whole decode of a 12 MP RGB
// photo took 0.82-1.02x image/png's time, median 0.88 (BenchmarkDecode's pngstream-stdzlib,
// TestMeasure); inflate is three quarters of the rest.
// Callers guarantee len(cur) == width*srcBpp and len(dst) == len(prev) == width*dstBpp.

// unfilter1 handles one byte per pixel, same layout in and out (gray, palette indices).
func unfilter1(ft byte, dst, cur, prev []byte) {
	prev = prev[:len(dst)]
	cur = cur[:len(dst)]
	switch ft {
	case ftNone:
		copy(dst, cur)
	case ftSub:
		var a byte
		for i, v := range cur {
			a += v
			dst[i] = a
		}
	case ftUp:
		for i, v := range cur {
			dst[i] = v + prev[i]
		}
	case ftAverage:
		a := 0
		for i, v := range cur {
			a = int(v+byte((a+int(prev[i]))>>1)) & 0xff
			dst[i] = byte(a)
		}
	case ftPaeth:
		a, c := 0, 0
		for i, v := range cur {
			b := int(prev[i])
			a = int(v+byte(paeth(a, b, c))) & 0xff
			dst[i] = byte(a)
			c = b
		}
	}
}

// unfilter4 handles four bytes per pixel, same layout in and out (RGBA to NRGBA).
func unfilter4(ft byte, dst, cur, prev []byte) {
	n := len(dst) &^ 3
	prev = prev[:n]
	cur = cur[:n]
	switch ft {
	case ftNone:
		copy(dst, cur)
	case ftSub:
		var a0, a1, a2, a3 byte
		for i := 0; i+3 < n; i += 4 {
			c := cur[i : i+4 : i+4]
			o := dst[i : i+4 : i+4]
			a0 += c[0]
			a1 += c[1]
			a2 += c[2]
			a3 += c[3]
			o[0], o[1], o[2], o[3] = a0, a1, a2, a3
		}
	case ftUp:
		upBytes(dst[:n], cur, prev)
	case ftAverage:
		var a0, a1, a2, a3 int
		for i := 0; i+3 < n; i += 4 {
			c := cur[i : i+4 : i+4]
			p := prev[i : i+4 : i+4]
			o := dst[i : i+4 : i+4]
			a0 = int(c[0]+byte((a0+int(p[0]))>>1)) & 0xff
			a1 = int(c[1]+byte((a1+int(p[1]))>>1)) & 0xff
			a2 = int(c[2]+byte((a2+int(p[2]))>>1)) & 0xff
			a3 = int(c[3]+byte((a3+int(p[3]))>>1)) & 0xff
			o[0], o[1], o[2], o[3] = byte(a0), byte(a1), byte(a2), byte(a3)
		}
	case ftPaeth:
		var a0, a1, a2, a3, c0, c1, c2, c3 int
		for i := 0; i+3 < n; i += 4 {
			c := cur[i : i+4 : i+4]
			p := prev[i : i+4 : i+4]
			o := dst[i : i+4 : i+4]
			b0, b1, b2, b3 := int(p[0]), int(p[1]), int(p[2]), int(p[3])
			a0 = int(c[0]+byte(paeth(a0, b0, c0))) & 0xff
			a1 = int(c[1]+byte(paeth(a1, b1, c1))) & 0xff
			a2 = int(c[2]+byte(paeth(a2, b2, c2))) & 0xff
			a3 = int(c[3]+byte(paeth(a3, b3, c3))) & 0xff
			o[0], o[1], o[2], o[3] = byte(a0), byte(a1), byte(a2), byte(a3)
			c0, c1, c2, c3 = b0, b1, b2, b3
		}
	}
}

// unfilterRGB handles three bytes per pixel in and four out (RGB to RGBA, alpha 255).
func unfilterRGB(ft byte, dst, cur, prev []byte) {
	w := len(dst) / 4
	dst = dst[:4*w]
	prev = prev[:4*w]
	cur = cur[:3*w]
	switch ft {
	case ftNone:
		for i, j := 0, 0; i+3 < len(dst) && j+2 < len(cur); i, j = i+4, j+3 {
			c := cur[j : j+3 : j+3]
			o := dst[i : i+4 : i+4]
			o[0], o[1], o[2], o[3] = c[0], c[1], c[2], 0xff
		}
	case ftSub:
		var a0, a1, a2 byte
		for i, j := 0, 0; i+3 < len(dst) && j+2 < len(cur); i, j = i+4, j+3 {
			c := cur[j : j+3 : j+3]
			o := dst[i : i+4 : i+4]
			a0 += c[0]
			a1 += c[1]
			a2 += c[2]
			o[0], o[1], o[2], o[3] = a0, a1, a2, 0xff
		}
	case ftUp:
		for i, j := 0, 0; i+3 < len(dst) && j+2 < len(cur); i, j = i+4, j+3 {
			c := cur[j : j+3 : j+3]
			p := prev[i : i+4 : i+4]
			o := dst[i : i+4 : i+4]
			o[0], o[1], o[2], o[3] = c[0]+p[0], c[1]+p[1], c[2]+p[2], 0xff
		}
	case ftAverage:
		averageRGB(dst, cur, prev)
	case ftPaeth:
		var a0, a1, a2, c0, c1, c2 int
		for i, j := 0, 0; i+3 < len(dst) && j+2 < len(cur); i, j = i+4, j+3 {
			c := cur[j : j+3 : j+3]
			p := prev[i : i+4 : i+4]
			o := dst[i : i+4 : i+4]
			b0, b1, b2 := int(p[0]), int(p[1]), int(p[2])
			a0 = int(c[0]+byte(paeth(a0, b0, c0))) & 0xff
			a1 = int(c[1]+byte(paeth(a1, b1, c1))) & 0xff
			a2 = int(c[2]+byte(paeth(a2, b2, c2))) & 0xff
			o[0], o[1], o[2], o[3] = byte(a0), byte(a1), byte(a2), 0xff
			c0, c1, c2 = b0, b1, b2
		}
	}
}

// averageRGB undoes the Average filter of an RGB row into RGBA (alpha 255), eight pixels a
// step through fixed-size arrays: constant offsets and no bounds checks leave half the
// instructions of the pixel-at-a-time loop this replaced (BenchmarkUnfilter rgb/filter3
// 41.9 -> 28.8 ms for 12 MP). The same for RGBA measured no faster, and eight pixels with
// an inner loop or an inlined per-pixel function were slower: they spill the sums.
func averageRGB(dst, cur, prev []byte) {
	n := min(len(cur)/3, len(dst)/4, len(prev)/4)
	var a0, a1, a2 uint
	x := 0
	for ; x+8 <= n; x += 8 {
		c := (*[24]byte)(cur[3*x:])
		p := (*[32]byte)(prev[4*x:])
		o := (*[32]byte)(dst[4*x:])
		a0 = uint(c[0] + byte((a0+uint(p[0]))>>1))
		a1 = uint(c[1] + byte((a1+uint(p[1]))>>1))
		a2 = uint(c[2] + byte((a2+uint(p[2]))>>1))
		o[0], o[1], o[2], o[3] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[3] + byte((a0+uint(p[4]))>>1))
		a1 = uint(c[4] + byte((a1+uint(p[5]))>>1))
		a2 = uint(c[5] + byte((a2+uint(p[6]))>>1))
		o[4], o[5], o[6], o[7] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[6] + byte((a0+uint(p[8]))>>1))
		a1 = uint(c[7] + byte((a1+uint(p[9]))>>1))
		a2 = uint(c[8] + byte((a2+uint(p[10]))>>1))
		o[8], o[9], o[10], o[11] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[9] + byte((a0+uint(p[12]))>>1))
		a1 = uint(c[10] + byte((a1+uint(p[13]))>>1))
		a2 = uint(c[11] + byte((a2+uint(p[14]))>>1))
		o[12], o[13], o[14], o[15] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[12] + byte((a0+uint(p[16]))>>1))
		a1 = uint(c[13] + byte((a1+uint(p[17]))>>1))
		a2 = uint(c[14] + byte((a2+uint(p[18]))>>1))
		o[16], o[17], o[18], o[19] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[15] + byte((a0+uint(p[20]))>>1))
		a1 = uint(c[16] + byte((a1+uint(p[21]))>>1))
		a2 = uint(c[17] + byte((a2+uint(p[22]))>>1))
		o[20], o[21], o[22], o[23] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[18] + byte((a0+uint(p[24]))>>1))
		a1 = uint(c[19] + byte((a1+uint(p[25]))>>1))
		a2 = uint(c[20] + byte((a2+uint(p[26]))>>1))
		o[24], o[25], o[26], o[27] = byte(a0), byte(a1), byte(a2), 0xff
		a0 = uint(c[21] + byte((a0+uint(p[28]))>>1))
		a1 = uint(c[22] + byte((a1+uint(p[29]))>>1))
		a2 = uint(c[23] + byte((a2+uint(p[30]))>>1))
		o[28], o[29], o[30], o[31] = byte(a0), byte(a1), byte(a2), 0xff
	}
	for ; x < n; x++ {
		c := (*[3]byte)(cur[3*x:])
		p := (*[4]byte)(prev[4*x:])
		o := (*[4]byte)(dst[4*x:])
		a0 = uint(c[0] + byte((a0+uint(p[0]))>>1))
		a1 = uint(c[1] + byte((a1+uint(p[1]))>>1))
		a2 = uint(c[2] + byte((a2+uint(p[2]))>>1))
		o[0], o[1], o[2], o[3] = byte(a0), byte(a1), byte(a2), 0xff
	}
}

// unfilterGA handles gray+alpha, two bytes per pixel in and four out (Y, Y, Y, A as
// image/png's NRGBA). The row above is read back from the NRGBA row (its R and A).
func unfilterGA(ft byte, dst, cur, prev []byte) {
	w := len(dst) / 4
	dst = dst[:4*w]
	prev = prev[:4*w]
	cur = cur[:2*w]
	var a0, a1, c0, c1 int
	for i, j := 0, 0; i+3 < len(dst) && j+1 < len(cur); i, j = i+4, j+2 {
		c := cur[j : j+2 : j+2]
		p := prev[i : i+4 : i+4]
		o := dst[i : i+4 : i+4]
		b0, b1 := int(p[0]), int(p[3])
		switch ft {
		case ftNone:
			a0, a1 = int(c[0]), int(c[1])
		case ftSub:
			a0, a1 = int(c[0]+byte(a0)), int(c[1]+byte(a1))
		case ftUp:
			a0, a1 = int(c[0]+byte(b0)), int(c[1]+byte(b1))
		case ftAverage:
			a0 = int(c[0] + byte((a0+b0)>>1))
			a1 = int(c[1] + byte((a1+b1)>>1))
		case ftPaeth:
			a0 = int(c[0] + byte(paeth(a0, b0, c0)))
			a1 = int(c[1] + byte(paeth(a1, b1, c1)))
		}
		y := byte(a0)
		o[0], o[1], o[2], o[3] = y, y, y, byte(a1)
		c0, c1 = b0, b1
	}
}

// upBytes adds prev to cur bytewise into dst, eight bytes at a time without carries
// between bytes (SWAR): Up is the most common filter of Go's and zlib-based encoders.
func upBytes(dst, cur, prev []byte) {
	n := len(dst)
	cur = cur[:n]
	prev = prev[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(cur[i:])
		y := binary.LittleEndian.Uint64(prev[i:])
		const lo7 = 0x7f7f7f7f7f7f7f7f
		s := ((x & lo7) + (y & lo7)) ^ ((x ^ y) &^ lo7)
		binary.LittleEndian.PutUint64(dst[i:], s)
	}
	for ; i < n; i++ {
		dst[i] = cur[i] + prev[i]
	}
}

// paeth returns the Paeth predictor of a (left), b (above) and c (above left), written so
// the compiler uses conditional moves (the choice is unpredictable on photographic rows) and
// can inline it. The Paeth loops are bound by this chain's latency from one pixel to the
// next, not by the call: inlining measured the same (0.95-1.05x).
func paeth(a, b, c int) int {
	da, db := b-c, a-c
	pa, pb, pc := max(da, -da), max(db, -db), max(da+db, -da-db)
	if pb <= pc {
		c = b
	}
	if pa <= min(pb, pc) {
		c = a
	}
	return c
}

// maxByte returns the largest byte of b (palette index range checks).
func maxByte(b []byte) byte {
	var m byte
	for _, v := range b {
		m = max(m, v)
	}
	return m
}
