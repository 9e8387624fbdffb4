package testenv

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// noisePNGVersion names NoisePNG's cached files: change it with the pixels or the encoding.
const noisePNGVersion = 1

// noiseCacheMin is the fewest pixels NoisePNG caches (a variable for its test).
var noiseCacheMin = 1 << 20

// NoisePNG makes a w x h photo-like PNG (gradients plus noise) that compresses poorly, so that
// converting it takes measurable time. The file depends on w and h only; one of a megapixel or
// more is kept in <os.UserCacheDir()>/convsvc/noisepng/ and read from there by the next test
// that asks for that size, in any package and in CI's later steps: making the 3000x2000 and
// 6000x4000 ones took 5 and 20 s, and 22 and 101 s under -race (load 17), in the tests of
// cli, client, httpapi, service and e2e alike.
func NoisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	if w*h < noiseCacheMin {
		return makeNoisePNG(t, w, h)
	}
	path := ""
	if dir, err := os.UserCacheDir(); err == nil {
		path = filepath.Join(dir, "convsvc", "noisepng", fmt.Sprintf("noise-v%d-%dx%d.png", noisePNGVersion, w, h))
		if data, err := os.ReadFile(path); err == nil && wholePNG(data, w, h) {
			return data
		}
	}
	data := makeNoisePNG(t, w, h)
	if path != "" {
		cacheFile(path, data) // best effort: without the cache the next test makes it again
	}
	return data
}

// makeNoisePNG draws and encodes NoisePNG's image.
func makeNoisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := 0; x < w; x++ {
			n := uint8(rng.IntN(64))
			p := row[4*x : 4*x+4 : 4*x+4]
			p[0], p[1], p[2], p[3] = uint8(x*255/w)^n, uint8(y*255/h)+n, uint8((x+y)*127/(w+h))+n, 255
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngEnd is the IEND chunk, a PNG's last 12 bytes.
var pngEnd = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82}

// wholePNG reports whether a cached file is a whole PNG of w x h: a file cut short (a test
// killed while writing it, a full disk) is made again.
func wholePNG(data []byte, w, h int) bool {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	return err == nil && cfg.Width == w && cfg.Height == h && bytes.HasSuffix(data, pngEnd)
}

// cacheFile writes data to path through a temporary file and a rename, so a test in another
// package reading it at the same moment finds the whole file or none.
func cacheFile(path string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
