//go:build !purego

package inflate

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHuffmanFast_MatchesGo decodes streams with huffmanFast and with huffman's Go loop
// alone and wants the same output, the same error and the same reads of the source: every
// block type at four levels, and each stream cut short and with single bits flipped (bad
// codes, distances before the output's start, blocks ending early), read in several sizes.
func TestHuffmanFast_MatchesGo(t *testing.T) {
	if !hasHuffmanFast {
		t.Skip("no BMI2: huffman runs its Go loop only")
	}
	defer func() { hasHuffmanFast = true }()
	rng := rand.New(rand.NewPCG(9, 10))
	decode := func(fast bool, stream []byte, maxRead, step int) string {
		hasHuffmanFast = fast
		out, err, tr := decodeAll(ourOpen, chunky{bytes.NewReader(stream), maxRead}, step)
		return fmt.Sprintf("%x %v %v", adler32Update(1, out), err, tr.calls)
	}
	payloads := samples()
	// Matches at every distance under 8 (copied byte by byte) and just above.
	var periods []byte
	for p := 1; p <= 12; p++ {
		for i := range 3000 {
			periods = append(periods, byte(i%p+rng.IntN(2)*(i%97/96)))
		}
	}
	payloads["periods"] = periods
	size, levels, bad := 60_000, []int{zlib.BestSpeed, 6, zlib.BestCompression, zlib.HuffmanOnly}, 6
	if testing.Short() {
		// Under -race -short: a fifth of the work.
		size, levels, bad = 20_000, []int{zlib.BestSpeed, zlib.BestCompression}, 3
	}
	for name, data := range payloads {
		data = data[:min(len(data), size)]
		for _, level := range levels {
			stream := zlibAt(t, data, level)
			variants := [][]byte{stream}
			for range bad {
				if len(stream) < 3 {
					break
				}
				bad := slices.Clone(stream)
				i := 2 + rng.IntN(len(bad)-2)
				bad[i] ^= 1 << rng.IntN(8)
				variants = append(variants, bad, stream[:2+rng.IntN(len(stream)-2)])
			}
			for k, v := range variants {
				maxRead, step := []int{4096, 777, 1}[k%3], []int{1 + 3*1000, 65536, 100}[k%3]
				if maxRead == 1 && len(v) > 5_000 {
					maxRead = 97
				}
				if got, want := decode(true, v, maxRead, step), decode(false, v, maxRead, step); got != want {
					t.Fatalf("%s level %d variant %d: huffmanFast gives\n%.300s\nthe Go loop\n%.300s", name, level, k, got, want)
				}
			}
		}
	}
}

// BenchmarkHuffmanFast inflates photoIDAT as BenchmarkReader_Photo1MP does, with
// huffmanFast ("fast") and with huffman's Go loop alone ("go").
//
//	go test ./convert/internal/inflate -run XXX -bench HuffmanFast -cpu 1 -count 4
func BenchmarkHuffmanFast(b *testing.B) {
	if !hasHuffmanFast {
		b.Skip("no BMI2")
	}
	defer func() { hasHuffmanFast = true }()
	for _, fast := range []bool{true, false} {
		name := map[bool]string{true: "fast", false: "go"}[fast]
		b.Run(name, func(b *testing.B) {
			hasHuffmanFast = fast
			BenchmarkReader_Photo1MP(b)
		})
	}
}
