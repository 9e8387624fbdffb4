package imdct

import (
	"math"
	"math/rand"
	"testing"
)

// winRef is go-mp3's IMDCT (the N x N/2 matrix from the definition), in float64.
func winRef(in []float32, blockType int) []float64 {
	out := make([]float64, 36)
	iwd := imdctWinData[blockType]
	if blockType == 2 {
		const N = 12
		for i := 0; i < 3; i++ {
			for p := 0; p < N; p++ {
				sum := 0.0
				for m := 0; m < N/2; m++ {
					sum += float64(in[i+3*m]) * math.Cos(math.Pi/(2*N)*(2*float64(p)+1+N/2)*(2*float64(m)+1))
				}
				out[6*i+p+6] += sum * float64(iwd[p])
			}
		}
		return out
	}
	const N = 36
	for p := 0; p < N; p++ {
		sum := 0.0
		for m := 0; m < N/2; m++ {
			sum += float64(in[m]) * math.Cos(math.Pi/(2*N)*(2*float64(p)+1+N/2)*(2*float64(m)+1))
		}
		out[p] = sum * float64(iwd[p])
	}
	return out
}

// TestWin compares the DCT-IV based IMDCT with the definition for every block type.
func TestWin(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 200; iter++ {
		var in [18]float32
		for i := range in {
			in[i] = float32(r.NormFloat64())
		}
		for bt := 0; bt < 4; bt++ {
			want := winRef(in[:], bt)
			var out [36]float32
			for i := range out {
				out[i] = 99 // Win must overwrite every value
			}
			Win(&in, bt, &out)
			for p := range want {
				if d := math.Abs(float64(out[p]) - want[p]); d > 1e-4 {
					t.Fatalf("block type %d: out[%d] = %v, want %v", bt, p, out[p], want[p])
				}
			}
		}
	}
}

// The tables are made at first use; these tests call the package's functions directly.
func init() { Prepare() }
