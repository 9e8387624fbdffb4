package testenv

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestNoisePNG_SameImage: the pixels are the ones NoisePNG drew through SetNRGBA before it
// wrote them into Pix (files cached under noisePNGVersion 1 hold this image).
func TestNoisePNG_SameImage(t *testing.T) {
	const w, h = 37, 23
	want := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := uint8(rng.IntN(64))
			want.SetNRGBA(x, y, color.NRGBA{uint8(x*255/w) ^ n, uint8(y*255/h) + n, uint8((x+y)*127/(w+h)) + n, 255})
		}
	}
	got, err := png.Decode(bytes.NewReader(NoisePNG(t, w, h)))
	if err != nil {
		t.Fatal(err)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if g := color.NRGBAModel.Convert(got.At(x, y)); g != want.At(x, y) {
				t.Fatalf("NoisePNG(%d, %d) at (%d, %d): %v, want %v", w, h, x, y, g, want.At(x, y))
			}
		}
	}
}

// TestNoisePNG_Cache: a size at or over noiseCacheMin is written to the cache once and read
// from it after; a cached file cut short is made again and replaced.
func TestNoisePNG_Cache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	old := noiseCacheMin
	noiseCacheMin = 64 * 48
	t.Cleanup(func() { noiseCacheMin = old })
	dir, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "convsvc", "noisepng", "noise-v1-64x48.png")

	first := NoisePNG(t, 64, 48)
	cached, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(cached, first) {
		t.Fatalf("cache file %s: %d bytes, %v; want the %d bytes returned", path, len(cached), err, len(first))
	}
	// A file in the cache is what comes back: mark one to tell it from a new encode.
	marked := append(bytes.Clone(first[:len(first)-len(pngEnd)]), pngEnd...)
	copy(marked[len(marked)-len(pngEnd)-4:], "mark") // the last IDAT's CRC: DecodeConfig does not read it
	if err := os.WriteFile(path, marked, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := NoisePNG(t, 64, 48); !bytes.Equal(got, marked) {
		t.Fatal("a whole cached file was not the one returned")
	}
	if err := os.WriteFile(path, first[:len(first)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if got := NoisePNG(t, 64, 48); !bytes.Equal(got, first) {
		t.Fatalf("with the cached file cut short: %d bytes, want the %d made", len(got), len(first))
	}
	if cached, _ := os.ReadFile(path); !bytes.Equal(cached, first) {
		t.Fatalf("the file cut short was not replaced (%d bytes)", len(cached))
	}
	if small := NoisePNG(t, 8, 8); len(small) == 0 {
		t.Fatal("no 8x8 PNG")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("cache holds %d files, want only the 64x48 one (no temporary files, nothing under the minimum)", len(entries))
	}
}
