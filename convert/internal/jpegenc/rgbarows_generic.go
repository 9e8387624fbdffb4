//go:build !amd64 || purego

package jpegenc

// hasRGBARowsFast says there is no assembly version of rgbaRows here.
const hasRGBARowsFast = false

func rgbaRowsFast(p0, p1 *[64]byte, y *[blockSize + 16]int32, cb, cr *[8]int32) {
	panic("unreachable")
}
