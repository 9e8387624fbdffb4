package jpegscale

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"testing"
)

// BenchmarkDecodeScaled decodes a 12 MP (4000x3000) and a 1 MP photo-like JPEG (q85, 4:2:0,
// written by image/jpeg) at every scale, and with image/jpeg for reference.
func BenchmarkDecodeScaled(b *testing.B) {
	for _, size := range [][2]int{{4000, 3000}, {1000, 1000}} {
		data := photoJPEG(b, size[0], size[1], 85)
		name := fmt.Sprintf("%dx%d", size[0], size[1])
		b.Run(name+"/image-jpeg", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, s := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/1-%d", name, s), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := DecodeScaled(bytes.NewReader(data), s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeFile decodes the JPEG named by JPEGSCALE_BENCH_FILE at 1/4 scale (the
// shrink-on-load of a 12 MP photo to 800 px), for A/B runs against other revisions on a real
// file such as bench/images21.sh's big.jpg; skipped when it is not set.
func BenchmarkDecodeFile(b *testing.B) {
	name := os.Getenv("JPEGSCALE_BENCH_FILE")
	if name == "" {
		b.Skip("JPEGSCALE_BENCH_FILE is not set")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeScaled(bytes.NewReader(data), 4); err != nil {
			b.Fatal(err)
		}
	}
}
