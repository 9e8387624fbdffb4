package image

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// benchInputs encodes one 1000x1000 photo-like image in every readable format (ICO at
// 256x256, the most it holds): with this package's encoders, and JPEG XL with cjxl when it is
// installed.
func benchInputs(b *testing.B, dir string) map[string]string {
	b.Helper()
	src := testimg.Photo(1000, 1000)
	paths := map[string]string{}
	put := func(id string, data []byte) {
		p := filepath.Join(dir, "input."+id)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		paths[id] = p
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, src); err != nil {
		b.Fatal(err)
	}
	put("png", bytes.Clone(buf.Bytes()))
	buf.Reset()
	if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	put("jpeg", bytes.Clone(buf.Bytes()))
	for _, id := range []string{"gif", "bmp", "tiff", "webp", "avif", "qoi", "ppm", "ico"} {
		buf.Reset()
		img := image.Image(src)
		if id == "ico" {
			img = testimg.Photo(256, 256)
		}
		if err := codecByID(id).Encode(context.Background(), &buf, img, convert.Options{}); err != nil {
			b.Fatal(err)
		}
		put(id, bytes.Clone(buf.Bytes()))
	}
	if _, err := exec.LookPath("cjxl"); err == nil {
		out := filepath.Join(dir, "input.jxl")
		if err := exec.Command("cjxl", "--quiet", "-d", "1", paths["png"], out).Run(); err == nil {
			paths["jxl"] = out
		}
	}
	return paths
}

func codecByID(id string) *Codec { return CodecByID(id) }

// BenchmarkConvert measures every image conversion on a 1000x1000 photo-like image (ICO
// inputs 256x256; ICO outputs shrink to 256x256). Select pairs with -bench, e.g.
// -bench 'Convert/(png-webp|png-avif|webp-png)$'.
func BenchmarkConvert(b *testing.B) {
	dir := b.TempDir()
	inputs := benchInputs(b, dir)
	c := testCatalog(convert.Limits{})
	lossless := true
	for _, from := range []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "avif", "jxl", "qoi", "ppm", "ico"} {
		path, ok := inputs[from]
		if !ok {
			b.Logf("no %s input (cjxl missing?)", from)
			continue
		}
		targets := c.Targets(from)
		if from == "png" || from == "jpeg" {
			targets = append(targets, "webp-lossless")
		}
		for _, to := range targets {
			opts := convert.Options{}
			if to == "webp-lossless" {
				to, opts.Lossless = "webp", &lossless
			}
			name := from + "-" + to
			if opts.Lossless != nil {
				name += "-lossless"
			}
			b.Run(name, func(b *testing.B) {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				b.ReportAllocs()
				var out convert.CountingWriter
				out.W = io.Discard
				for b.Loop() {
					out.N = 0
					if _, err := c.Convert(context.Background(), from, to, opts, f, &out, dir); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.N), "out-bytes")
			})
		}
	}
}

// BenchmarkPNGCompression compares zlib levels for PNG output on the same photo-like image,
// reporting the output size beside the time: the evidence behind PNGCompression.
func BenchmarkPNGCompression(b *testing.B) {
	noisy := image.Image(testimg.Photo(1000, 1000))
	// A JPEG round trip smooths the noise the way real photos are smooth.
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, noisy, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	dec, err := jpeg.Decode(&buf)
	if err != nil {
		b.Fatal(err)
	}
	smooth := To8Bit(dec)
	for _, lvl := range []struct {
		name string
		l    png.CompressionLevel
		src  image.Image
	}{
		{"noisy/default", png.DefaultCompression, noisy}, {"noisy/best-speed", png.BestSpeed, noisy},
		{"jpeg-decoded/default", png.DefaultCompression, smooth}, {"jpeg-decoded/best-speed", png.BestSpeed, smooth},
	} {
		src := lvl.src
		b.Run(lvl.name, func(b *testing.B) {
			b.ReportAllocs()
			var out convert.CountingWriter
			out.W = io.Discard
			enc := png.Encoder{CompressionLevel: lvl.l, BufferPool: PNGBuffers}
			for b.Loop() {
				out.N = 0
				if err := enc.Encode(&out, src); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.N), "out-bytes")
		})
	}
}

// BenchmarkConvertSmall is the API benchmark's conversion: a 16x16 PNG to JPEG and to PNG, where
// the fixed costs of a conversion (buffers, headers, setup) are all there is.
func BenchmarkConvertSmall(b *testing.B) {
	dir := b.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, testimg.Photo(16, 16)); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "small.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	c := testCatalog(convert.Limits{})
	for _, to := range []string{"jpeg", "gif", "webp"} {
		b.Run("png-"+to, func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Convert(context.Background(), "png", to, convert.Options{}, f, io.Discard, dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
