//go:build !purego

package inflate

import "golang.org/x/sys/cpu"

// hasHuffmanFast says whether huffman hands its loop to huffmanFast (BMI2's SHLX, SHRX and
// BZHI).
var hasHuffmanFast = cpu.X86.HasBMI2

// huffmanFast runs huffman's loop in assembly from the state bb, nb, pos, w while w is
// below outLimit and eight input bytes are buffered, and returns the state before the
// symbol it leaves to huffman: the block's end, an invalid code, a distance before the
// output's start, or the loop's conditions failing. It decodes the symbols huffman would,
// with huffman's refill, tables and arithmetic, in an order that shortens the chain of
// dependent loads: it looks up each symbol's entry as soon as the previous one is taken,
// before the refill that follows (at most 48 bits are taken between refills, so the entry's
// 11 index bits are in bb already: a refill ORs into bb the bytes it holds above nb), and
// takes up to three entries of literals per refill where huffman takes two.
//
// Where the refills fall does not change what the decoder does: bits above nb in bb are
// always the stream's next bits or zeros, a refill leaves bb's bits below 64 as the stream's,
// and when the buffered input runs out (pos == end, the only time a symbol can lack bits
// and the only time src is read) nb and bb are a function of the bits taken. So huffman
// resumes at the returned state as it would at its own; it also redoes a refill just done
// (ORing the same bytes in again, pos and nb unchanged). TestHuffmanFast_MatchesGo and the
// package's comparisons with compress/zlib (output, errors, and every read of the source)
// hold it to that. lit and dist are the first entries of z.lit and z.dist; every index
// into them is one huffman's table build makes valid.
//
//go:noescape
func huffmanFast(in *[unitSize]byte, out *[outSize]byte, lit, dist *uint32, bb uint64, nb uint, pos, end, w int) (uint64, uint, int, int)
