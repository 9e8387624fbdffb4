package tiffenc

import (
	"context"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// measureImages are the files TIFFENC_PHOTO names (comma-separated PNG or JPEG, e.g.
// bench/genimg's), else a 1000x1000 testimg.Photo.
func measureImages(t testing.TB) (names []string, ims []image.Image) {
	p := os.Getenv("TIFFENC_PHOTO")
	if p == "" {
		return []string{"photo 1000x1000"}, []image.Image{testimg.Photo(1000, 1000)}
	}
	for _, p := range strings.Split(p, ",") {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := image.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*image.YCbCr); ok {
			r := image.NewRGBA(m.Bounds())
			draw.Draw(r, r.Rect, m, m.Bounds().Min, draw.Src)
			m = r
		}
		if p, ok := m.(*image.Paletted); ok {
			r := image.NewNRGBA(p.Bounds())
			draw.Draw(r, r.Rect, p, p.Bounds().Min, draw.Src)
			m = r
		}
		names, ims = append(names, p), append(ims, m)
	}
	return names, ims
}

// TestMeasure prints output size and best-of-3 time for x/image/tiff and tiffenc variants.
// Run with TIFFENC_MEASURE=1 go test ./convert/internal/tiffenc -run Measure -v.
func TestMeasure(t *testing.T) {
	if os.Getenv("TIFFENC_MEASURE") == "" {
		t.Skip("set TIFFENC_MEASURE=1")
	}
	names, ims := measureImages(t)
	type variant struct {
		name string
		enc  func(io.Writer, image.Image) error
	}
	ours := func(o Options) func(io.Writer, image.Image) error {
		return func(w io.Writer, m image.Image) error { return Encode(context.Background(), w, m, &o) }
	}
	variants := []variant{{"x/image/tiff Deflate (today)", func(w io.Writer, m image.Image) error {
		return tiff.Encode(w, m, &tiff.Options{Compression: tiff.Deflate})
	}}}
	variants = append(variants, variant{"default", ours(Options{})}, variant{"default, 1 worker", ours(Options{Workers: 1})},
		variant{"photo choice", ours(photoOptions)}, variant{"graphics choice", ours(flatOptions)})
	for _, lvl := range []int{HuffmanOnly, 1, 2, 3, 4, 6} {
		for _, rps := range []int{16, 64, 256} {
			variants = append(variants, variant{fmt.Sprintf("level %d, %d rows", lvl, rps), ours(Options{Level: lvl, RowsPerStrip: rps})})
			variants = append(variants, variant{fmt.Sprintf("stdlib level %d, %d rows", lvl, rps), ours(Options{Level: lvl, RowsPerStrip: rps, Stdlib: true})})
			variants = append(variants, variant{fmt.Sprintf("no predictor, level %d, %d rows", lvl, rps), ours(Options{Level: lvl, RowsPerStrip: rps, NoPredictor: true})})
		}
	}
	if v := os.Getenv("TIFFENC_VARIANTS"); v != "" {
		var keep []variant
		for _, x := range variants {
			if strings.Contains(x.name, "today") || strings.Contains(x.name, v) {
				keep = append(keep, x)
			}
		}
		variants = keep
	}
	for k, m := range ims {
		b := m.Bounds()
		t.Logf("== %s (%dx%d %T), GOMAXPROCS %d", names[k], b.Dx(), b.Dy(), m, runtime.GOMAXPROCS(0))
		var base time.Duration
		var baseSize int64
		for i, v := range variants {
			best := time.Duration(1 << 62)
			var size int64
			for range 3 {
				var cw countWriter
				start := time.Now()
				if err := v.enc(&cw, m); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(start))
				size = cw.n
			}
			if i == 0 {
				base, baseSize = best, size
			}
			t.Logf("%-32s %10d bytes (%+5.1f%%) %8.1f ms (%.2fx)", v.name, size,
				100*float64(size-baseSize)/float64(baseSize), float64(best)/1e6, float64(best)/float64(base))
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	_, ims := measureImages(b)
	m := ims[0]
	for _, v := range []struct {
		name string
		enc  func(io.Writer, image.Image) error
	}{
		{"x-image-tiff", func(w io.Writer, m image.Image) error {
			return tiff.Encode(w, m, &tiff.Options{Compression: tiff.Deflate})
		}},
		{"tiffenc", func(w io.Writer, m image.Image) error { return Encode(context.Background(), w, m, nil) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var cw countWriter
			for b.Loop() {
				cw.n = 0
				if err := v.enc(&cw, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cw.n), "out-bytes")
		})
	}
}
