package tiffstrip

import (
	"bytes"
	"math/rand"
	"testing"
)

// TestPredictRGB_MatchesGo holds predictRGB (SSSE3 on amd64 where the CPU has it) to
// predictRGBGo byte for byte, for every row length up to 80 pixels and longer random rows,
// with dst as long as the row needs and longer.
func TestPredictRGB_MatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		px := n
		if n >= 80 {
			px = 80 + r.Intn(5000)
		}
		row := make([]byte, 3*px+r.Intn(3))
		r.Read(row)
		for _, extra := range []int{0, 5} {
			got := make([]byte, 4*px+extra)
			want := make([]byte, 4*px+extra)
			predictRGB(got, row)
			predictRGBGo(want, row)
			if !bytes.Equal(got, want) {
				t.Fatalf("%d pixels (row %d bytes, dst %d): predictRGB differs from predictRGBGo", px, len(row), len(got))
			}
		}
	}
}

// BenchmarkPredictRGB times a 4000-pixel row, the 12 MP TIFF's width.
func BenchmarkPredictRGB(b *testing.B) {
	row := make([]byte, 3*4000)
	rand.New(rand.NewSource(1)).Read(row)
	dst := make([]byte, 4*4000)
	b.SetBytes(int64(len(row)))
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			predictRGB(dst, row)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			predictRGBGo(dst, row)
		}
	})
}
