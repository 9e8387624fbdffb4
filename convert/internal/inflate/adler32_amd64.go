//go:build !purego

package inflate

import "golang.org/x/sys/cpu"

// hasAVX2 says whether adler32Update takes adler32AVX2 for whole 32-byte blocks.
var hasAVX2 = cpu.X86.HasAVX2

// adler32AVX2 returns the Adler-32 sums s1, s2 after the bytes of p (its length a multiple
// of 32, at most adlerNMax, s1 and s2 below adlerMod), not reduced: per 32-byte block, the
// bytes' sum by VPSADBW and their sum weighted 32..1 by VPMADDUBSW and VPMADDWD, and 32 times
// the sum before each block. Every sum is below 2^32 within adlerNMax bytes, so the 32-bit
// wrapping arithmetic is exact (TestAdler32_AVX2MatchesGo).
//
//go:noescape
func adler32AVX2(s1, s2 uint32, p []byte) (uint32, uint32)
