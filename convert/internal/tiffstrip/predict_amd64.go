//go:build !purego

package tiffstrip

import "golang.org/x/sys/cpu"

// hasSSSE3 says whether predictRGBFast can use predictRGBSSSE3 (PSHUFB).
var hasSSSE3 = cpu.X86.HasSSSE3

// predictRGBFast undoes the predictor of the first k pixels of row into dst with SSSE3,
// four pixels at a time (the running sums of a whole register of pixels by two shifted
// byte-wise adds, the previous pixel broadcast into the next register), and returns k: a
// multiple of 4, 0 without SSSE3 or for a short row. The bytes are predictRGBGo's
// (TestPredictRGB_MatchesGo).
func predictRGBFast(dst, row []byte) int {
	if !hasSSSE3 || len(row) < 16 {
		return 0
	}
	// Each step loads 16 bytes of row and uses 12: the last load must stay inside row.
	k := min(len(dst)/4, (len(row)-4)/3) &^ 3
	if k == 0 {
		return 0
	}
	predictRGBSSSE3(&dst[0], &row[0], k)
	return k
}

// predictRGBSSSE3 writes k (a multiple of 4, above 0) opaque RGBA pixels to dst from the
// predictor differences at row, which must have 3k+4 readable bytes.
//
//go:noescape
func predictRGBSSSE3(dst, row *byte, k int)
