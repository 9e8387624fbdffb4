package testenv

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// NoisePNG makes a w x h photo-like PNG (gradients plus noise) that compresses poorly, so that
// converting it takes measurable time.
func NoisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := uint8(rng.IntN(64))
			img.SetNRGBA(x, y, color.NRGBA{uint8(x*255/w) ^ n, uint8(y*255/h) + n, uint8((x+y)*127/(w+h)) + n, 255})
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
