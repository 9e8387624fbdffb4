package image

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"io"
	"strconv"
	"testing"

	"github.com/HugoSmits86/nativewebp"
	"github.com/gen2brain/avif"
	gwebp "github.com/gen2brain/webp"
	"golang.org/x/image/webp"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// benchPhotos are the two kinds of input the codec choices were measured on: a noisy
// photo-like image and the same after a JPEG round trip (smooth, like real photographs).
func benchPhotos(b *testing.B, w, h int) map[string]*image.NRGBA {
	noisy := testimg.Photo(w, h)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, noisy, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	dec, err := jpeg.Decode(&buf)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]*image.NRGBA{"noisy": noisy, "jpeg-decoded": toNRGBA(To8Bit(dec))}
}

// BenchmarkWebPLossless compares the two lossless WebP encoders on 1000x1000 images, with the
// output size beside the time: the evidence for encodeWebP's choice of nativewebp.
func BenchmarkWebPLossless(b *testing.B) {
	for name, src := range benchPhotos(b, 1000, 1000) {
		for _, enc := range []struct {
			name string
			f    func(io.Writer, image.Image) error
		}{
			{"nativewebp", func(w io.Writer, m image.Image) error { return nativewebp.Encode(w, m, nil) }},
			{"libwebp", func(w io.Writer, m image.Image) error {
				return gwebp.Encode(w, m, gwebp.Options{Lossless: true, Method: webpMethod})
			}},
		} {
			b.Run(name+"/"+enc.name, func(b *testing.B) {
				b.ReportAllocs()
				var out convert.CountingWriter
				out.W = io.Discard
				for b.Loop() {
					out.N = 0
					if err := enc.f(&out, src); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.N), "out-bytes")
			})
		}
	}
}

// BenchmarkAVIFSpeed compares libaom speeds at the default quality on 1000x1000 images: the
// evidence for avifSpeed.
func BenchmarkAVIFSpeed(b *testing.B) {
	for name, src := range benchPhotos(b, 1000, 1000) {
		rgba := packedRGBA(src)
		for _, speed := range []int{6, 8, 10} {
			b.Run(name+"/speed-"+strconv.Itoa(speed), func(b *testing.B) {
				b.ReportAllocs()
				var out convert.CountingWriter
				out.W = io.Discard
				for b.Loop() {
					out.N = 0
					err := avif.Encode(&out, rgba, avif.Options{Quality: AVIFQuality, QualityAlpha: AVIFQuality, Speed: speed, ChromaSubsampling: image.YCbCrSubsampleRatio420})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.N), "out-bytes")
			})
		}
	}
}

// BenchmarkWebPMethod compares libwebp's methods (effort) at quality 85 on 1000x1000 images,
// reporting size and PSNR beside the time: the evidence for webpMethod.
func BenchmarkWebPMethod(b *testing.B) {
	for name, src := range benchPhotos(b, 1000, 1000) {
		for _, method := range []int{0, 1, 2, 3, 4} {
			b.Run(name+"/method-"+strconv.Itoa(method), func(b *testing.B) {
				var out bytes.Buffer
				for b.Loop() {
					out.Reset()
					if err := gwebp.Encode(&out, src, gwebp.Options{Quality: 85, Method: method}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.Len()), "out-bytes")
				got, err := webp.Decode(&out)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(psnr(src, got), "dB")
			})
		}
	}
}

// jpegPhoto is a decoded q85 4:2:0 JPEG of the photo-like test image, as a JPEG->WebP
// conversion receives it.
func jpegPhoto(t testing.TB, w, h int) *image.YCbCr {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testimg.Photo(w, h), &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	dec, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return dec.(*image.YCbCr)
}

// BenchmarkWebPFromJPEG compares encodeWebP on a decoded JPEG given as its planes (what it
// does) with converting it to NRGBA first (what it did), with PSNR against the decoded JPEG
// (libwebp's own decoder) beside the time: the evidence for vp8PlanesFromJPEG.
func BenchmarkWebPFromJPEG(b *testing.B) {
	src := jpegPhoto(b, 1000, 1000)
	for _, c := range []struct {
		name string
		img  func() image.Image
	}{{"planes", func() image.Image { return src }}, {"nrgba", func() image.Image { return packedNRGBA(src) }}} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if err := encodeWebP(context.Background(), &out, c.img(), convert.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.Len()), "out-bytes")
			got, err := gwebp.DecodeAll(&out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(psnr(src, got.Image[0]), "dB")
		})
	}
}

// BenchmarkWebPFromRGBA compares opaque RGBA (what the PNG decoder gives) encoded through
// planes computed in Go (vp8PlanesFromRGBA; the same file, byte for byte) with the same pixels
// handed to libwebp as NRGBA for its own conversion, each including its conversion.
func BenchmarkWebPFromRGBA(b *testing.B) {
	for _, size := range []struct {
		name string
		w, h int
	}{{"1MP", 1000, 1000}, {"12MP", 4000, 3000}} {
		photo := testimg.Photo(size.w, size.h)
		src := image.NewRGBA(photo.Rect)
		copy(src.Pix, photo.Pix)
		for _, c := range []struct {
			name   string
			encode func(io.Writer) error
		}{
			{"planes", func(w io.Writer) error { return encodeWebP(context.Background(), w, src, convert.Options{}) }},
			{"libwebp", func(w io.Writer) error {
				return gwebp.Encode(w, packedNRGBA(src), gwebp.Options{Quality: WebPQuality, Method: webpMethod})
			}},
		} {
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				var out bytes.Buffer
				for b.Loop() {
					out.Reset()
					if err := c.encode(&out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.Len()), "out-bytes")
			})
		}
	}
}
