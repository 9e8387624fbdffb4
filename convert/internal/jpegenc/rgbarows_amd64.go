//go:build !purego

package jpegenc

// hasRGBARowsFast says rgbaRowsFast is the SSE2 version (every amd64 has SSE2).
const hasRGBARowsFast = true

// rgbaRowsFast is rgbaRowsGo for opaque pixels in SSE2, four pixels a register: per pixel
// r-g and b-g as a pair of 16-bit words, PMADDWD by image/jpeg's coefficients (the chroma's
// halved, 32768 being out of a word's range), the same rounding shifts, the chroma clamp at
// 255, then each 2x2 block's chroma summed and rounded. y holds the luminance rows j and j+1
// of the MCU's left block (y[0:16]) and of its right one (y[64:80]); cb and cr the chroma row.
// TestRGBARowsExhaustive checks every colour through it.
//
//go:noescape
func rgbaRowsFast(p0, p1 *[64]byte, y *[blockSize + 16]int32, cb, cr *[8]int32)
