package wasmcodec

import (
	"bytes"
	"context"
	"image"
	"math"
	"os"
	"sync/atomic"
	"testing"
)

// psnrRGB is the PSNR of got against want over R, G and B, in dB (both opaque, same size).
func psnrRGB(t *testing.T, want *image.RGBA, got image.Image) float64 {
	t.Helper()
	g, ok := got.(*image.RGBA)
	if !ok || g.Rect != want.Rect {
		t.Fatalf("decoded %T %v, want *image.RGBA %v", got, got.Bounds(), want.Rect)
	}
	var sum float64
	for i := 0; i < len(want.Pix); i += 4 {
		for c := range 3 {
			d := float64(want.Pix[i+c]) - float64(g.Pix[i+c])
			sum += d * d
		}
	}
	mse := sum / float64(len(want.Pix)/4*3)
	return 10 * math.Log10(255*255/mse)
}

// A 1000x1000 photo-like image cut into bands, encoded in parallel instances and stored as
// a grid, decodes (libavif joins the grid) to the full size with the quality of the one-image
// encode at the same settings; each instance past the first reserved its memory first.
func TestEncodeAVIF_GridQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a megapixel three times")
	}
	for _, size := range []image.Point{{1000, 1000}, {1000, 1002}} { // the second pads its last band of 2
		m := benchImage(size.X, size.Y)
		base := AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420}
		var one bytes.Buffer
		if err := EncodeAVIF(context.Background(), &one, m, base); err != nil {
			t.Fatal(err)
		}
		for _, tiles := range []int{2, 3} {
			var reserved, released atomic.Int64
			opts := base
			opts.Tiles = tiles
			opts.Reserve = func(ctx context.Context, px int64) (func(), error) {
				reserved.Add(px)
				return func() { released.Add(px) }, nil
			}
			var grid bytes.Buffer
			if err := EncodeAVIF(context.Background(), &grid, m, opts); err != nil {
				t.Fatalf("%v, %d tiles: %v", size, tiles, err)
			}
			if n := AVIFTiles(size.X, size.Y, tiles); n != tiles {
				t.Fatalf("AVIFTiles(%v, %d) = %d", size, tiles, n)
			}
			if !bytes.Contains(grid.Bytes()[:1000], []byte("grid")) {
				t.Fatalf("%v, %d tiles: no grid item in the file", size, tiles)
			}
			if reserved.Load() == 0 || reserved.Load() != released.Load() {
				t.Errorf("%v, %d tiles: reserved %d pixels, released %d", size, tiles, reserved.Load(), released.Load())
			}
			a, err := DecodeAVIF(context.Background(), one.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			b, err := DecodeAVIF(context.Background(), grid.Bytes())
			if err != nil {
				t.Fatalf("%v, %d tiles: decoding the grid: %v", size, tiles, err)
			}
			p1, p2 := psnrRGB(t, m, a), psnrRGB(t, m, b)
			t.Logf("%v: one image %d bytes %.3f dB; %d bands %d bytes %.3f dB", size, one.Len(), p1, tiles, grid.Len(), p2)
			if p2 < p1-0.05 {
				t.Errorf("%v, %d bands: %.3f dB, the one-image encode %.3f dB", size, tiles, p2, p1)
			}
			if os.Getenv("CONVSVC_AVIF_GRID_OUT") != "" {
				os.WriteFile(os.Getenv("CONVSVC_AVIF_GRID_OUT")+"-"+string(rune('0'+tiles))+".avif", grid.Bytes(), 0o644)
			}
		}
	}
}

func TestAVIFTiles(t *testing.T) {
	for _, tc := range []struct{ w, h, max, want int }{
		{4000, 3000, 2, 2},
		{4000, 3000, 1, 1},
		{4000, 3000, 0, 1},
		{1000, 1000, 4, 3},  // bands of at least a quarter megapixel
		{1000, 1002, 2, 2},  // the last band padded
		{1000, 1001, 2, 1},  // odd sides stay one image
		{1001, 1000, 2, 1},  //
		{640, 480, 2, 1},    // too small to split
		{8000, 200, 8, 1},   // bands at least 128 rows
		{16384, 300, 8, 2},  //
		{2000, 1000, 16, 7}, // 143 rows rounded to 144: seven bands cover 1000
	} {
		if got := AVIFTiles(tc.w, tc.h, tc.max); got != tc.want {
			t.Errorf("AVIFTiles(%d, %d, %d) = %d, want %d", tc.w, tc.h, tc.max, got, tc.want)
		}
	}
}

// A reservation that is never granted costs time, not a deadlock: the first instance encodes
// every band, the waiting ones give up once none is left, and the grid is whole.
func TestEncodeAVIF_GridReserveNeverGranted(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a megapixel")
	}
	m := benchImage(1000, 1000)
	var asked, gaveUp atomic.Int64
	opts := AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420, Tiles: 3}
	opts.Reserve = func(ctx context.Context, px int64) (func(), error) {
		asked.Add(1)
		<-ctx.Done() // the budget never has room
		gaveUp.Add(1)
		return nil, ctx.Err()
	}
	var out bytes.Buffer
	if err := EncodeAVIF(context.Background(), &out, m, opts); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 2 || gaveUp.Load() != 2 {
		t.Errorf("reservations asked %d, given up %d; want 2 and 2", asked.Load(), gaveUp.Load())
	}
	back, err := DecodeAVIF(context.Background(), out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if p := psnrRGB(t, m, back); p < 23 {
		t.Errorf("the grid encoded by one instance decodes at %.2f dB", p)
	}
}
