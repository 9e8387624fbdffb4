package pngstream

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"sync"
	"testing"
)

// pixOf returns an image's pixel bytes and stride for the types the decoder returns.
func pixOf(m image.Image) ([]byte, int, int) {
	switch m := m.(type) {
	case *image.RGBA:
		return m.Pix, m.Stride, 4
	case *image.NRGBA:
		return m.Pix, m.Stride, 4
	case *image.Gray:
		return m.Pix, m.Stride, 1
	case *image.Paletted:
		return m.Pix, m.Stride, 1
	}
	panic(fmt.Sprintf("type %T", m))
}

// A ring decoder hands over every row of the file through a few rows of memory: a reader that
// copies the rows as progress reports them final, and lets them go after, gets image/png's
// pixels, for rings far smaller than the image, of one progress batch, and larger than it.
func TestRingDecoder_SameRows(t *testing.T) {
	for name, img := range testImages(301, 203, 17) {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		want, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		wantPix, wantStride, _ := pixOf(want)
		for _, ring := range []int{2, 5, progressRows, 40, 203, 500} {
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			released := 0
			wait := func(y int) error {
				mu.Lock()
				defer mu.Unlock()
				for released < y-ring+1 {
					cond.Wait()
				}
				return nil
			}
			d, ok, err := NewRingDecoder(bytes.NewReader(buf.Bytes()), ring, wait)
			if err != nil || !ok {
				t.Fatalf("%s ring %d: %v, %v", name, ring, ok, err)
			}
			if wantRing := ring; ring >= 203 {
				wantRing = 0
				if d.Ring() != wantRing || d.Image().Bounds().Dy() != 203 {
					t.Fatalf("%s ring %d: Ring %d, %d rows; want the whole image", name, ring, d.Ring(), d.Image().Bounds().Dy())
				}
			} else if d.Ring() != ring || d.Image().Bounds().Dy() != ring {
				t.Fatalf("%s ring %d: Ring %d, %d rows", name, ring, d.Ring(), d.Image().Bounds().Dy())
			}
			pix, stride, _ := pixOf(d.Image())
			rows := make(chan int, 1024)
			var copied []byte
			var wg sync.WaitGroup
			wg.Go(func() {
				done := 0
				for r := range rows {
					for y := done; y < r; y++ {
						slot := y
						if d.Ring() > 0 {
							slot = y % d.Ring()
						}
						copied = append(copied, pix[slot*stride:slot*stride+wantStride]...)
					}
					done = r
					mu.Lock()
					released = r
					cond.Broadcast()
					mu.Unlock()
				}
			})
			err = d.Decode(func(r int) { rows <- r })
			close(rows)
			wg.Wait()
			if err != nil {
				t.Fatalf("%s ring %d: %v", name, ring, err)
			}
			if !bytes.Equal(copied, wantPix[:len(copied)]) || len(copied) != len(wantPix) {
				t.Errorf("%s ring %d: the rows handed over differ from image/png's (%d of %d bytes)", name, ring, len(copied), len(wantPix))
			}
		}
	}
}

// An error from wait stops Decode with that error.
func TestRingDecoder_WaitError(t *testing.T) {
	img := testImages(64, 100, 3)["rgb"]
	var buf bytes.Buffer
	png.Encode(&buf, img)
	stop := errors.New("stop")
	d, ok, err := NewRingDecoder(bytes.NewReader(buf.Bytes()), 8, func(y int) error { return stop })
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := d.Decode(nil); !errors.Is(err, stop) {
		t.Errorf("Decode: %v, want the wait's error", err)
	}
	if _, _, err := NewRingDecoder(bytes.NewReader(buf.Bytes()), 1, nil); err == nil {
		t.Error("a ring of one row was accepted")
	}
}
