package jpegenc

import (
	"bytes"
	"image"
	"image/jpeg"
	"io"
	"syscall"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
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
				cpu0 := cpuTime()
				for b.Loop() {
					buf.Reset()
					if err := e.enc(&buf, m, &jpeg.Options{Quality: 85}); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time moves less than wall time on a shared machine.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime returns the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
