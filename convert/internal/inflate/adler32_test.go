package inflate

import (
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

// TestAdler32_AVX2MatchesGo checks adler32Update (adler32AVX2 for the 32-byte blocks where
// the CPU has AVX2) against hash/adler32 for every length up to 300 at every alignment of
// the first byte, and for random lengths up to three reduction blocks, random bytes and runs
// of 0xff.
func TestAdler32_AVX2MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 3*adlerNMax+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
		if i%1000 < 300 {
			buf[i] = 0xff
		}
	}
	check := func(p []byte) {
		t.Helper()
		if got, want := adler32Update(1, p), adler32.Checksum(p); got != want {
			t.Fatalf("%d bytes at %p: %08x, want %08x", len(p), p, got, want)
		}
	}
	for off := range 32 {
		for n := range 300 {
			check(buf[off : off+n])
		}
	}
	for range 200 {
		off := rng.IntN(64)
		check(buf[off : off+rng.IntN(len(buf)-64)])
	}
}
