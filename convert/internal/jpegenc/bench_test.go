package jpegenc

import (
	"bytes"
	"image"
	"image/color"
	"image/color/palette"
	"image/draw"
	"image/jpeg"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/cputime"
)

// photoRGBA is testimg.Photo as an *image.RGBA (what the PNG decoder gives for opaque RGB).
func photoRGBA(w, h int) *image.RGBA {
	p := testimg.Photo(w, h)
	m := image.NewRGBA(p.Rect)
	copy(m.Pix, p.Pix)
	return m
}

// BenchmarkEncode compares image/jpeg and jpegenc on photo-like RGBA at quality 85, back to
// back in one process.
func BenchmarkEncode(b *testing.B) {
	sizes := []struct {
		name string
		w, h int
	}{{"1MP", 1000, 1000}, {"12MP", 4000, 3000}}
	encoders := []struct {
		name string
		enc  func(io.Writer, image.Image, *jpeg.Options) error
	}{{"stdlib", jpeg.Encode}, {"jpegenc", Encode}}
	for _, s := range sizes {
		var m *image.RGBA
		var buf bytes.Buffer
		for _, e := range encoders {
			b.Run(e.name+"/"+s.name, func(b *testing.B) {
				if m == nil {
					m = photoRGBA(s.w, s.h)
				}
				b.ResetTimer()
				b.SetBytes(int64(s.w * s.h * 4))
				b.ReportAllocs()
				cpu0 := cputime.Self()
				for b.Loop() {
					buf.Reset()
					if err := e.enc(&buf, m, &jpeg.Options{Quality: 85}); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time moves less than wall time on a shared machine.
				b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkEncodeTypes compares image/jpeg and jpegenc at 1 MP on the other image types
// convsvc's decoders produce.
func BenchmarkEncodeTypes(b *testing.B) {
	photo := testimg.Photo(1000, 1000)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	ycc := image.NewYCbCr(photo.Rect, image.YCbCrSubsampleRatio420)
	for y := range 1000 {
		for x := range 1000 {
			c := photo.NRGBAAt(x, y)
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			ycc.Y[ycc.YOffset(x, y)], ycc.Cb[ycc.COffset(x, y)], ycc.Cr[ycc.COffset(x, y)] = yy, cb, cr
		}
	}
	pal := image.NewPaletted(photo.Rect, palette.Plan9)
	draw.Draw(pal, pal.Rect, photo, image.Point{}, draw.Src)
	ims := []struct {
		name string
		m    image.Image
	}{{"NRGBA-opaque", photo}, {"NRGBA-alpha", testimg.PhotoAlpha(1000, 1000)}, {"Gray", gray}, {"YCbCr420", ycc}, {"Paletted", pal}, {"NRGBA64", testimg.Photo16(1000, 1000)}}
	for _, im := range ims {
		for _, e := range []struct {
			name string
			enc  func(io.Writer, image.Image, *jpeg.Options) error
		}{{"stdlib", jpeg.Encode}, {"jpegenc", Encode}} {
			b.Run(im.name+"/"+e.name, func(b *testing.B) {
				var buf bytes.Buffer
				cpu0 := cputime.Self()
				for b.Loop() {
					buf.Reset()
					if err := e.enc(&buf, im.m, &jpeg.Options{Quality: 85}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkRGBARows times the conversion of two rows of an MCU's 16 opaque RGBA pixels:
// rgbaRows (SSE2 on amd64) against rgbaRowsGo.
func BenchmarkRGBARows(b *testing.B) {
	var p [2][64]byte
	for i := range p[0] {
		p[0][i], p[1][i] = byte(i*37), byte(i*59)
		if i%4 == 3 {
			p[0][i], p[1][i] = 0xff, 0xff
		}
	}
	var u mcu
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			rgbaRows(&p[0], &p[1], &u, 6, false)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			rgbaRowsGo(&p[0], &p[1], &u, 6, false)
		}
	})
}
