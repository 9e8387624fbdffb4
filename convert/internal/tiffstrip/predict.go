package tiffstrip

import "encoding/binary"

// predictRGB undoes the horizontal predictor of a row of RGB samples and writes it to dst as
// opaque RGBA, in one pass: the three running sums stay in registers, where undoing the
// predictor in place (a chain of dependent byte additions through memory) and then expanding
// took two passes and 30% of a 12 MP deflate TIFF -> JPEG's CPU once the strips were inflated
// with convert/internal/inflate (BenchmarkDeflateStrips).
func predictRGB(dst, row []byte) {
	if k := predictRGBFast(dst, row); k > 0 {
		predictRGBFrom(dst[4*k:], row[3*k:], dst[4*k-4], dst[4*k-3], dst[4*k-2])
		return
	}
	predictRGBGo(dst, row)
}

// predictRGBGo is predictRGB in Go, for any length.
func predictRGBGo(dst, row []byte) { predictRGBFrom(dst, row, 0, 0, 0) }

// predictRGBFrom is predictRGB continuing from the running sums r, g, b.
func predictRGBFrom(dst, row []byte, r, g, b uint8) {
	for len(row) >= 3 && len(dst) >= 4 {
		r += row[0]
		g += row[1]
		b += row[2]
		binary.LittleEndian.PutUint32(dst, uint32(r)|uint32(g)<<8|uint32(b)<<16|0xff<<24)
		row, dst = row[3:], dst[4:]
	}
}
