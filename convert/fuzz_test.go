package convert

import (
	"bytes"
	"context"
	"errors"
	"image"
	"io"
	"testing"
)

// FuzzDecodeImage feeds arbitrary bytes through the image input path (sniff, header, pixel
// limit, decode) and, for small results, through every encoder: nothing may panic, every
// failure must be an *Error, and no decoded image may exceed the pixel limit.
func FuzzDecodeImage(f *testing.F) {
	lim := Limits{MaxPixels: 1 << 20}
	encoders := map[string]func(context.Context, io.Writer, image.Image) error{}
	for i := range imageCodecs {
		if c := &imageCodecs[i]; c.encode != nil {
			encoders[c.id] = func(ctx context.Context, w io.Writer, img image.Image) error { return c.encode(ctx, w, img, Options{}) }
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		formats := []string{"png"}
		if id, _ := sniff(data); id != "" && id != "png" {
			for i := range imageCodecs {
				if imageCodecs[i].id == id {
					formats = append(formats, id)
				}
			}
		}
		for _, format := range formats {
			img, err := decodeImageAs(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), format, lim)
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("decoding as %s: %v is %T, not *Error", format, err, err)
				}
				continue
			}
			b := img.Bounds()
			px := int64(b.Dx()) * int64(b.Dy())
			if px > lim.MaxPixels || px <= 0 {
				t.Fatalf("decoded %v, limit %d pixels", b, lim.MaxPixels)
			}
			if px > 4096 {
				continue // encoding large images makes the fuzzer crawl
			}
			for id, enc := range encoders {
				if err := enc(ctx, io.Discard, img); err != nil {
					t.Fatalf("encoding a decoded %s image as %s: %v", format, id, err)
				}
			}
		}
	})
}
