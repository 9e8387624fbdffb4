//go:build !purego

package jpegenc

import (
	"sync"

	"github.com/convsvc/convsvc/convert/internal/jpegdct"
	"golang.org/x/sys/cpu"
)

// hasAVX2 says whether fdctQuantize takes fdctQuantizeAVX2.
var hasAVX2 = cpu.X86.HasAVX2

// fdctQuantize is fdctQuantizeGo, in AVX2 where the CPU has it: the same integers
// (TestFDCTQuantize_MatchesGo), twice as fast in BenchmarkFDCTQuantize (CPU 280 -> 140 ns a
// block, each copied just before) and 50 -> 9 ms in the 12 MP TIFF -> JPEG's profile.
func fdctQuantize(b *block, qt *quantTable, zz *[blockSize]int32) uint64 {
	if hasAVX2 {
		return fdctQuantizeAVX2(b, qt, zz)
	}
	return fdctQuantizeGo(b, qt, zz)
}

// fdctQuantizeAVX2 is fdctQuantizeGo with eight lanes (fdctq_amd64.s, written by
// gen_fdctq.go): the column pass a row per register, a transpose, the row pass a column per
// register, quantize's multiply by the reciprocal in 64-bit lanes against qt's transposed
// tables, the coefficients to b column by column (b is scratch after the FDCT, as in Go),
// then to zz in zig-zag order, and the mask of the non-zero ones through nzZig.
//
//go:noescape
func fdctQuantizeAVX2(b *block, qt *quantTable, zz *[blockSize]int32) (nz uint64)

// nzZig[k][m] is the zig-zag mask (bit i for zz[i]) of the coefficients in column k of the
// rows set in m (bit r for row r). fdctQuantizeAVX2 ORs eight of them.
var nzZig [8][256]uint64

// nzZigOnce builds nzZig at the first encode: 16 KiB that processes which never encode a
// JPEG need not hold.
var nzZigOnce sync.Once

// prepareSIMD fills qt's transposed tables for fdctQuantizeAVX2 (and nzZig once).
func (qt *quantTable) prepareSIMD() {
	if !hasAVX2 {
		return
	}
	nzZigOnce.Do(func() {
		var zig [blockSize]int
		for z, n := range jpegdct.Unzig {
			zig[n] = z
		}
		for k := range 8 {
			for m := range 256 {
				var v uint64
				for r := range 8 {
					if m>>r&1 != 0 {
						v |= 1 << zig[8*r+k]
					}
				}
				nzZig[k][m] = v
			}
		}
	})
	for z, n := range jpegdct.Unzig {
		r, k := int(n)/8, int(n)%8
		qt.halfT[8*k+r], qt.recipT[8*k+r] = qt.half[z], qt.recip[z]
	}
}
