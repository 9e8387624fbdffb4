package pngenc

import (
	"context"
	"fmt"
	"image"
	_ "image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// countWriter counts bytes.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// benchImages are the images the measurements run on: a JPEG-decoded photo (bench/genimg's
// JPEG when PNGENC_PHOTO names one, else a 1000x1000 testimg.Photo through JPEG q85), the
// synthetic flat graphic, and real flat graphics when present.
func benchImages(t testing.TB) []struct {
	name string
	m    image.Image
} {
	var out []struct {
		name string
		m    image.Image
	}
	add := func(name string, m image.Image) {
		out = append(out, struct {
			name string
			m    image.Image
		}{name, m})
	}
	if p := os.Getenv("PNGENC_PHOTO"); p != "" {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := image.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(*image.YCbCr); ok {
			d = toRGBA(d)
		}
		add("photo "+p, d)
	} else {
		add("photo 1000x1000 (jpeg q85)", jpegDecoded(t, testimg.Photo(1000, 1000)))
	}
	add("flat synthetic 1920x1080", flatGraphic(1920, 1080))
	for _, p := range realFiles {
		if m := loadReal(t, p); m != nil {
			add(p, m)
		}
	}
	return out
}

func toRGBA(m image.Image) *image.RGBA {
	r := image.NewRGBA(m.Bounds())
	for y := r.Rect.Min.Y; y < r.Rect.Max.Y; y++ {
		for x := r.Rect.Min.X; x < r.Rect.Max.X; x++ {
			r.Set(x, y, m.At(x, y))
		}
	}
	return r
}

// TestMeasure prints output size and best-of-3 time for image/png and each pngenc variant.
// Run with PNGENC_MEASURE=1 go test ./convert/internal/pngenc -run Measure -v.
func TestMeasure(t *testing.T) {
	if os.Getenv("PNGENC_MEASURE") == "" {
		t.Skip("set PNGENC_MEASURE=1")
	}
	type variant struct {
		name string
		enc  func(io.Writer, image.Image) error
	}
	ours := func(o Options) func(io.Writer, image.Image) error {
		return func(w io.Writer, m image.Image) error { return Encode(context.Background(), w, m, &o) }
	}
	std := png.Encoder{CompressionLevel: png.BestSpeed}
	variants := []variant{
		{"image/png BestSpeed (today)", std.Encode},
		{"auto (default)", ours(Options{})},
		{"auto, 1 worker", ours(Options{Workers: 1})},
		{"auto, 64-row bands", ours(Options{BandRows: 64})},
		{"auto, 1024-row bands", ours(Options{BandRows: 1024})},
		{"auto, level 2", ours(Options{Level: 2})},
		{"adaptive, stdlib L1, 1 worker", ours(Options{Filter: FilterAdaptive, Compressor: Stdlib, Workers: 1})},
		{"adaptive, klauspost L1, 1 worker", ours(Options{Filter: FilterAdaptive, Compressor: Klauspost, Workers: 1})},
		{"minsad, stdlib L1, 1 worker", ours(Options{Filter: FilterMinSAD, Compressor: Stdlib, Workers: 1})},
		{"minsad, klauspost L1, 1 worker", ours(Options{Filter: FilterMinSAD, Workers: 1})},
		{"up, stdlib L1, 1 worker", ours(Options{Filter: FilterUp, Compressor: Stdlib, Workers: 1})},
		{"up, klauspost L1, 1 worker", ours(Options{Filter: FilterUp, Workers: 1})},
		{"paeth, stdlib L1, 1 worker", ours(Options{Filter: FilterPaeth, Compressor: Stdlib, Workers: 1})},
		{"paeth, klauspost L1, 1 worker", ours(Options{Filter: FilterPaeth, Workers: 1})},
		{"average, klauspost L1, 1 worker", ours(Options{Filter: FilterAverage, Workers: 1})},
		{"none, stdlib L1, 1 worker", ours(Options{Filter: FilterNone, Compressor: Stdlib, Workers: 1})},
		{"none, klauspost L1, 1 worker", ours(Options{Filter: FilterNone, Workers: 1})},
		{"sub, stdlib L1, 1 worker", ours(Options{Filter: FilterSub, Compressor: Stdlib, Workers: 1})},
		{"sub, klauspost L1, 1 worker", ours(Options{Filter: FilterSub, Workers: 1})},
	}
	if v := os.Getenv("PNGENC_VARIANTS"); v != "" {
		var keep []variant
		for _, x := range variants {
			if strings.Contains(x.name, "today") || strings.Contains(x.name, v) {
				keep = append(keep, x)
			}
		}
		variants = keep
	}
	t.Logf("GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	for _, im := range benchImages(t) {
		b := im.m.Bounds()
		t.Logf("== %s (%dx%d %T)", im.name, b.Dx(), b.Dy(), im.m)
		var base time.Duration
		var baseSize int64
		for i, v := range variants {
			best := time.Duration(1 << 62)
			var size int64
			for range 3 {
				var cw countWriter
				start := time.Now()
				if err := v.enc(&cw, im.m); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(start))
				size = cw.n
			}
			if i == 0 {
				base, baseSize = best, size
			}
			t.Logf("%-38s %10d bytes (%+5.1f%%) %8.1f ms (%.2fx)", v.name, size,
				100*float64(size-baseSize)/float64(baseSize), float64(best)/1e6, float64(best)/float64(base))
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, im := range benchImages(b)[:2] {
		for _, v := range []struct {
			name string
			enc  func(io.Writer, image.Image) error
		}{
			{"image-png", (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode},
			{"pngenc", func(w io.Writer, m image.Image) error { return Encode(context.Background(), w, m, nil) }},
			{"pngenc-1worker", func(w io.Writer, m image.Image) error {
				return Encode(context.Background(), w, m, &Options{Workers: 1})
			}},
		} {
			b.Run(fmt.Sprintf("%s/%s", im.name[:5], v.name), func(b *testing.B) {
				b.ReportAllocs()
				var cw countWriter
				for b.Loop() {
					cw.n = 0
					if err := v.enc(&cw, im.m); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cw.n), "out-bytes")
			})
		}
	}
}
