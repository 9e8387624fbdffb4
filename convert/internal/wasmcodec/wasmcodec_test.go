package wasmcodec

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/draw"
	"image/png"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/gen2brain/avif"
	"github.com/gen2brain/jpegxl"
)

const images = "../../../testdata/images/"

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(images + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// samePixels fails unless got and want are the same type, size and bytes.
func samePixels(t *testing.T, name string, got, want image.Image) {
	t.Helper()
	pix := func(m image.Image) []byte {
		switch m := m.(type) {
		case *image.RGBA:
			return m.Pix
		case *image.RGBA64:
			return m.Pix
		case *image.NRGBA:
			return m.Pix
		case *image.NRGBA64:
			return m.Pix
		}
		t.Fatalf("%s: unexpected image type %T", name, m)
		return nil
	}
	if got.Bounds() != want.Bounds() {
		t.Fatalf("%s: bounds %v, want %v", name, got.Bounds(), want.Bounds())
	}
	if g, w := pix(got), pix(want); !bytes.Equal(g, w) {
		t.Errorf("%s: %T pixels differ from the module's %T", name, got, want)
	}
}

// The same wasm run by our host decodes to exactly the pixels the modules' own glue returns.
func TestDecodeAVIF_SameAsModule(t *testing.T) {
	for _, name := range []string{"sample.avif", "sample-rotated.avif"} {
		data := readFile(t, name)
		got, err := DecodeAVIF(context.Background(), data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := avif.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: module: %v", name, err)
		}
		samePixels(t, name, got, want)
	}
}

func TestDecodeJXL_SameAsModule(t *testing.T) {
	for _, name := range []string{"sample.jxl", "sample-lossless.jxl"} {
		data := readFile(t, name)
		got, err := DecodeJXL(context.Background(), data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := jpegxl.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: module: %v", name, err)
		}
		samePixels(t, name, got, want)
	}
}

func sampleRGBA(t testing.TB) *image.RGBA {
	t.Helper()
	src, err := png.Decode(bytes.NewReader(readFile(t, "sample.png")))
	if err != nil {
		t.Fatal(err)
	}
	m := image.NewRGBA(src.Bounds().Sub(src.Bounds().Min))
	draw.Draw(m, m.Rect, src, src.Bounds().Min, draw.Src)
	return m
}

// Encoding through libavif gives the module's bytes for the same settings, and the file
// decodes. (Opaque lossy images take the direct path by default: avif_aom_test.go.)
func TestEncodeAVIF_SameAsModule(t *testing.T) {
	m := sampleRGBA(t)
	aomDirectOff = true
	defer func() { aomDirectOff = false }()
	for _, tc := range []struct {
		opts   AVIFOptions
		chroma image.YCbCrSubsampleRatio
	}{
		{AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420}, image.YCbCrSubsampleRatio420},
		{AVIFOptions{Quality: 90, QualityAlpha: 90, Speed: 8, Chroma: AVIFYUV444}, image.YCbCrSubsampleRatio444},
		{AVIFOptions{Speed: 10, Chroma: AVIFYUV444, Lossless: true}, image.YCbCrSubsampleRatio444},
	} {
		var got, want bytes.Buffer
		if err := EncodeAVIF(context.Background(), &got, m, tc.opts); err != nil {
			t.Fatalf("%+v: %v", tc.opts, err)
		}
		err := avif.Encode(&want, m, avif.Options{Quality: tc.opts.Quality, QualityAlpha: tc.opts.QualityAlpha,
			Speed: tc.opts.Speed, ChromaSubsampling: tc.chroma, Lossless: tc.opts.Lossless})
		if err != nil {
			t.Fatalf("%+v: module: %v", tc.opts, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%+v: %d bytes, the module wrote %d different ones", tc.opts, got.Len(), want.Len())
		}
		back, err := DecodeAVIF(context.Background(), got.Bytes())
		if err != nil || back.Bounds() != m.Rect {
			t.Errorf("%+v: decoding the output: %v, %v", tc.opts, back, err)
		}
		if tc.opts.Lossless {
			samePixels(t, "lossless round trip", back, m)
		}
	}
}

func TestDecode_Garbage(t *testing.T) {
	data := readFile(t, "sample.avif")
	if _, err := DecodeAVIF(context.Background(), data[:len(data)/2]); !errors.Is(err, ErrAVIFDecode) {
		t.Errorf("truncated AVIF: %v, want ErrAVIFDecode", err)
	}
	data = readFile(t, "sample.jxl")
	if _, err := DecodeJXL(context.Background(), data[:len(data)/2]); !errors.Is(err, ErrJXLDecode) {
		t.Errorf("truncated JPEG XL: %v, want ErrJXLDecode", err)
	}
}

// A job cancelled before the codec starts does not start it.
func TestEncodeAVIF_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := EncodeAVIF(ctx, new(bytes.Buffer), sampleRGBA(t), AVIFOptions{Quality: 60, Speed: 10, Chroma: AVIFYUV420}); !errors.Is(err, context.Canceled) {
		t.Errorf("encode with a cancelled context: %v, want context.Canceled", err)
	}
}

// BenchmarkEncodeAVIF encodes a 1000x1000 photo-like image at the service's settings.
func BenchmarkEncodeAVIF(b *testing.B) {
	m := benchImage(1000, 1000)
	if err := Warm(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := EncodeAVIF(context.Background(), new(bytes.Buffer), m, AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchImage is smooth gradients with some noise, packed RGBA.
func benchImage(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(3, 4))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := m.PixOffset(x, y)
			n := byte(rng.IntN(16))
			m.Pix[i] = byte(x*255/w) + n
			m.Pix[i+1] = byte(y*255/h) + n
			m.Pix[i+2] = byte((x+y)*127/(w+h)) + n
			m.Pix[i+3] = 255
		}
	}
	return m
}

// The codec's linear memory is a mapping of its own, not Go heap: a 1000x1000 encode, whose
// libaom works in about 100 MB, allocates under 8 MB on the Go heap (131 MB with wazero's
// default allocator, which grows a Go slice by copying).
func TestEncodeAVIF_MemoryOutsideTheGoHeap(t *testing.T) {
	if memoryAllocator == nil {
		t.Skip("no mapping allocator on this system")
	}
	m := benchImage(1000, 1000)
	if err := Warm(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var out bytes.Buffer
	if err := EncodeAVIF(context.Background(), &out, m, AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("one 1000x1000 encode allocated %d MB on the Go heap, want under 8", got>>20)
	}
}
