package pngstream

import (
	"bytes"
	"image/png"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestMeasure times the contenders of BenchmarkDecode and BenchmarkInflate back to back in
// one process, rotating their order every round, and reports medians and the median of the
// per-round ratios: on a shared machine that is steadier than separate benchmark runs.
//
//	PNGSTREAM_MEASURE=9 go test ./convert/internal/pngstream -run TestMeasure -v
func TestMeasure(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("PNGSTREAM_MEASURE"))
	if rounds <= 0 {
		t.Skip("set PNGSTREAM_MEASURE=<rounds> to measure")
	}
	for _, f := range benchFiles() {
		z, rowLen := idatStream(t, f.data)
		stream := func(zf func(io.Reader) (io.ReadCloser, error)) func() {
			return func() {
				defer func(old func(io.Reader) (io.ReadCloser, error)) { newZlib = old }(newZlib)
				newZlib = zf
				d, ok, err := NewDecoder(bytes.NewReader(f.data))
				if err != nil || !ok {
					t.Fatal(ok, err)
				}
				if err := d.Decode(func(int) {}); err != nil {
					t.Fatal(err)
				}
			}
		}
		inflate := func(zf func(io.Reader) (io.ReadCloser, error)) func() {
			return func() {
				zr, err := zf(onlyReader{bytes.NewReader(z)})
				if err != nil {
					t.Fatal(err)
				}
				row := make([]byte, rowLen)
				for {
					if _, err := io.ReadFull(zr, row); err == io.EOF {
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		names := []string{"decode image/png", "decode pngstream", "decode pngstream+klauspost", "decode pngstream+compress/zlib", "inflate compress/zlib", "inflate klauspost", "inflate convsvc"}
		fns := []func(){
			func() {
				if _, err := png.Decode(bytes.NewReader(f.data)); err != nil {
					t.Fatal(err)
				}
			},
			stream(ourNewZlib), stream(kpNewZlib), stream(stdNewZlib), inflate(stdNewZlib), inflate(kpNewZlib), inflate(ourNewZlib),
		}
		times := make([][]float64, len(fns))
		for r := range rounds {
			for k := range fns {
				i := (k + r) % len(fns)
				start := time.Now()
				fns[i]()
				times[i] = append(times[i], time.Since(start).Seconds())
			}
		}
		median := func(v []float64) float64 {
			v = slices.Clone(v)
			slices.Sort(v)
			return v[len(v)/2]
		}
		ratio := func(a, b int) float64 {
			var rs []float64
			for r := range rounds {
				rs = append(rs, times[a][r]/times[b][r])
			}
			return median(rs)
		}
		t.Logf("%s (%d bytes, %d rounds):", f.name, len(f.data), rounds)
		for i, n := range names {
			t.Logf("  %-32s median %.3f s  min %.3f s", n, median(times[i]), slices.Min(times[i]))
		}
		t.Logf("  pngstream / image/png                 %.3f (median of per-round ratios)", ratio(1, 0))
		t.Logf("  pngstream+klauspost / image/png       %.3f", ratio(2, 0))
		t.Logf("  pngstream+compress/zlib / image/png   %.3f", ratio(3, 0))
		t.Logf("  inflate klauspost / compress/zlib     %.3f", ratio(5, 4))
		t.Logf("  inflate convsvc / klauspost           %.3f", ratio(6, 5))
	}
}
