package jpegstrip

import (
	"context"
	"image"
	"io"
	"sync"
	"testing"
)

// StripHeight is the height of every strip EncodeStrips asks for but the last, or the whole
// height when it asks for one strip.
func TestStripHeight(t *testing.T) {
	for _, sz := range []image.Point{{1, 1}, {100, 40}, {640, 1000}, {4000, 3000}, {10000, 333}, {65535, 20}} {
		for _, gray := range []bool{false, true} {
			b := image.Rectangle{Max: sz}
			var mu sync.Mutex
			var heights []int
			err := EncodeStrips(context.Background(), io.Discard, b, gray, nil, 2, func(_ context.Context, r image.Rectangle) (image.Image, error) {
				mu.Lock()
				heights = append(heights, r.Dy())
				mu.Unlock()
				if gray {
					return image.NewGray(r), nil
				}
				return image.NewRGBA(r), nil
			})
			if err != nil {
				t.Fatalf("%v gray %v: %v", sz, gray, err)
			}
			want := StripHeight(b, gray)
			tallest := 0
			for _, h := range heights {
				tallest = max(tallest, h)
			}
			if tallest != want {
				t.Errorf("%v gray %v: strips of %v rows, StripHeight %d", sz, gray, heights, want)
			}
		}
	}
}
