package frame

import (
	"math"
	"math/rand"
	"testing"
)

// TestDCT32 compares the fast DCT-II with its definition on random input.
func TestDCT32(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 100; iter++ {
		var x [32]float32
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		want := make([]float64, 32)
		for k := range want {
			for n, v := range x {
				want[k] += float64(v) * math.Cos(float64((2*n+1)*k)*math.Pi/64)
			}
		}
		dct32(&x)
		for k := range want {
			if d := math.Abs(float64(x[k]) - want[k]); d > 1e-4 {
				t.Fatalf("X[%d] = %v, want %v", k, x[k], want[k])
			}
		}
	}
}

// BenchmarkDCT32 times the 32-point DCT-II of the subband synthesis.
func BenchmarkDCT32(b *testing.B) {
	var x [32]float32
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for b.Loop() {
		y := x
		dct32(&y)
	}
}
