package jpegenc

import (
	"image/jpeg"
	"math/rand/v2"
	"testing"

	"github.com/convsvc/convsvc/internal/cputime"
)

// TestFDCTQuantize_MatchesGo holds fdctQuantize (AVX2 on amd64 where the CPU has it) to
// fdctQuantizeGo, coefficient for coefficient and mask for mask, over random blocks, blocks
// of 0 and 255 only (the FDCT's extremes), flat and near-flat blocks, at every quality with
// both tables (-short: ten qualities).
func TestFDCTQuantize_MatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 version here: fdctQuantize is fdctQuantizeGo")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	var e encoder
	qualities, blocks := make([]int, 100), 300
	for i := range qualities {
		qualities[i] = i + 1
	}
	if testing.Short() {
		qualities, blocks = []int{1, 2, 10, 50, 75, 85, 90, 95, 99, 100}, 120
	}
	for _, quality := range qualities {
		e.setQuality(&jpeg.Options{Quality: quality})
		for n := range blocks {
			b := testBlock(rng, n)
			b2 := b
			var got, want [blockSize]int32
			gotNZ := fdctQuantize(&b, &e.qt[n&1], &got)
			wantNZ := fdctQuantizeGo(&b2, &e.qt[n&1], &want)
			if got != want || gotNZ != wantNZ {
				t.Fatalf("quality %d block %d: got %v (mask %#x), want %v (mask %#x)", quality, n, got, gotNZ, want, wantNZ)
			}
		}
	}
}

// testBlock is block n of the FDCT tests, by n%6: random samples, samples of 0 and 255 only
// (the FDCT's extremes), near-flat around 128, flat, a checkerboard of 0 and 255, stripes.
func testBlock(rng *rand.Rand, n int) block {
	var b block
	for i := range b {
		switch n % 6 {
		case 0:
			b[i] = rng.Int32N(256)
		case 1:
			b[i] = int32(rng.IntN(2) * 255)
		case 2:
			b[i] = 128 + rng.Int32N(9) - 4
		case 3:
			b[i] = int32(n/6) % 256
		case 4:
			b[i] = int32((i/8+i%8)&1) * 255
		default:
			b[i] = 255 * int32((n>>uint(i%8))&1)
		}
	}
	return b
}

// BenchmarkFDCTQuantize times one block's FDCT and quantisation at quality 85: fdctQuantize
// (AVX2 on amd64) against fdctQuantizeGo.
func BenchmarkFDCTQuantize(b *testing.B) {
	var e encoder
	e.setQuality(&jpeg.Options{Quality: 85})
	rng := rand.New(rand.NewPCG(1, 2))
	var src [16]block
	for i := range src {
		for j := range src[i] {
			src[i][j] = rng.Int32N(256)
		}
	}
	var zz [blockSize]int32
	for _, f := range []struct {
		name string
		fn   func(*block, *quantTable, *[blockSize]int32) uint64
	}{{"fast", fdctQuantize}, {"go", fdctQuantizeGo}} {
		b.Run(f.name, func(b *testing.B) {
			i := 0
			cpu0 := cputime.Self()
			for b.Loop() {
				blk := src[i&15]
				f.fn(&blk, &e.qt[0], &zz)
				i++
			}
			b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
