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

// TestSynthWindow_MatchesGo holds synthWindow (SSE on amd64) to synthWindowGo bit for bit at
// every ring offset, on random V histories including zeros, negative zeros and large values.
func TestSynthWindow_MatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var vv [1024]float32
	for iter := 0; iter < 20; iter++ {
		for i := range vv {
			switch r.Intn(8) {
			case 0:
				vv[i] = 0
			case 1:
				vv[i] = float32(math.Copysign(0, -1))
			case 2:
				vv[i] = float32(r.NormFloat64() * 1e6)
			default:
				vv[i] = float32(r.NormFloat64())
			}
		}
		for off := 0; off < 1024; off += 32 {
			var got, want [32]float32
			got[3] = 7 // overwritten, not added to
			synthWindow(&got, &vv, off)
			synthWindowGo(&want, &vv, off)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("off %d: pcm[%d] = %v (%#x), want %v (%#x)", off, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}

// BenchmarkSynthWindow times the synthesis window of 32 samples (synthWindow) against its Go
// form.
func BenchmarkSynthWindow(b *testing.B) {
	var vv [1024]float32
	for i := range vv {
		vv[i] = float32(i%13) - 6
	}
	var pcm [32]float32
	b.Run("asm", func(b *testing.B) {
		off := 0
		for b.Loop() {
			synthWindow(&pcm, &vv, off)
			off = (off - 64) & 1023
		}
	})
	b.Run("go", func(b *testing.B) {
		off := 0
		for b.Loop() {
			synthWindowGo(&pcm, &vv, off)
			off = (off - 64) & 1023
		}
	})
}

// The tables are made at first use; these tests call the package's functions directly.
func init() { prepare() }
