package convert

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/image/tiff"
)

// formatByExt maps a sample's extension to its format id.
var formatByExt = map[string]string{".png": "png", ".jpeg": "jpeg", ".gif": "gif", ".bmp": "bmp", ".tiff": "tiff", ".webp": "webp"}

func openFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// decodeFile decodes a sample with the standard decoders (registered by this package's imports).
func decodeFile(t testing.TB, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return img
}

// psnr compares the opaque pixels of two images (colors as 8-bit non-premultiplied).
func psnr(a, b image.Image) float64 {
	var sum float64
	var n int
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ca := color.NRGBAModel.Convert(a.At(x, y)).(color.NRGBA)
			cb := color.NRGBAModel.Convert(b.At(x, y)).(color.NRGBA)
			if ca.A != 255 {
				continue
			}
			for _, d := range []float64{float64(ca.R) - float64(cb.R), float64(ca.G) - float64(cb.G), float64(ca.B) - float64(cb.B)} {
				sum += d * d
			}
			n += 3
		}
	}
	if sum == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(sum/float64(n)))
}

// nrgbaAt returns a pixel as 8-bit non-premultiplied color. For NYCbCrA, which is
// non-premultiplied itself, it converts directly rather than through premultiplied
// 16-bit values, which lose precision at low alpha.
func nrgbaAt(m image.Image, x, y int) color.NRGBA {
	if n, ok := m.(*image.NYCbCrA); ok {
		c := n.NYCbCrAAt(x, y)
		r, g, b := color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
		return color.NRGBA{R: r, G: g, B: b, A: c.A}
	}
	return color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
}

func sameNRGBA(a, b image.Image) bool {
	r := a.Bounds()
	if r != b.Bounds() {
		return false
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if nrgbaAt(a, x, y) != nrgbaAt(b, x, y) {
				return false
			}
		}
	}
	return true
}

// TestImage_Matrix converts every sample to every target its format reaches and checks the
// result decodes as the target format with the same size and plausible pixels.
func TestImage_Matrix(t *testing.T) {
	c := NewCatalog(Limits{})
	samples, err := filepath.Glob("../testdata/images/sample*")
	if err != nil || len(samples) < 6 {
		t.Fatalf("samples: %v, %v", samples, err)
	}
	for _, path := range samples {
		from := formatByExt[filepath.Ext(path)]
		if from == "" {
			continue
		}
		src := decodeFile(t, path)
		srcOpaque := src.(interface{ Opaque() bool }).Opaque()
		for _, to := range c.Targets(from) {
			t.Run(filepath.Base(path)+"-"+to, func(t *testing.T) {
				t.Parallel()
				outPath := filepath.Join(t.TempDir(), "out")
				out, err := os.Create(outPath)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Convert(context.Background(), from, to, Options{}, openFile(t, path), out, t.TempDir()); err != nil {
					t.Fatalf("Convert: %v", err)
				}
				out.Close()
				data, err := os.ReadFile(outPath)
				if err != nil {
					t.Fatal(err)
				}
				cfg, gotFormat, err := image.DecodeConfig(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("output does not decode: %v", err)
				}
				if gotFormat != to {
					t.Errorf("output format = %s, want %s", gotFormat, to)
				}
				if cfg.Width != 64 || cfg.Height != 48 {
					t.Errorf("output size = %dx%d, want 64x48", cfg.Width, cfg.Height)
				}
				got, _, err := image.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("output does not decode: %v", err)
				}
				switch to {
				case "png", "tiff":
					if !sameNRGBA(src, got) {
						t.Errorf("lossless conversion changed pixels")
					}
				case "bmp":
					if !sameNRGBA(src, got) {
						t.Errorf("lossless conversion changed pixels")
					}
				case "jpeg":
					if srcOpaque {
						if p := psnr(src, got); p < 26 {
							t.Errorf("PSNR = %.1f dB, want >= 26", p)
						}
					}
				case "gif":
					if srcOpaque {
						if p := psnr(src, got); p < 25 {
							t.Errorf("PSNR = %.1f dB, want >= 25", p)
						}
					}
				}
			})
		}
	}
}

func convertBytes(t *testing.T, c *Catalog, from, to, path string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := c.Convert(context.Background(), from, to, Options{}, openFile(t, path), &out, t.TempDir()); err != nil {
		t.Fatalf("Convert %s to %s: %v", from, to, err)
	}
	return out.Bytes()
}

func TestImage_JPEGToPNG_Stays8Bit(t *testing.T) {
	c := NewCatalog(Limits{})
	for _, path := range []string{"../testdata/images/sample.jpeg", "../testdata/images/sample.webp", "../testdata/images/sample-alpha.webp"} {
		data := convertBytes(t, c, formatByExt[filepath.Ext(path)], "png", path)
		// IHDR: 8 signature + 4 length + 4 type + 4 width + 4 height, then bit depth.
		if depth := data[24]; depth != 8 {
			t.Errorf("%s: PNG bit depth = %d, want 8", path, depth)
		}
	}
}

func TestImage_16BitKeptWhereFormatAllows(t *testing.T) {
	c := NewCatalog(Limits{})
	path := "../testdata/images/sample-16bit.png"
	src := decodeFile(t, path)
	got, err := tiff.Decode(bytes.NewReader(convertBytes(t, c, "png", "tiff", path)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(*image.NRGBA64); !ok {
		if _, ok := got.(*image.RGBA64); !ok {
			t.Errorf("16-bit PNG to TIFF decoded as %T, want 16-bit", got)
		}
	}
	if !sameColors64(src, got) {
		t.Error("16-bit PNG to TIFF changed pixels")
	}
}

func sameColors64(a, b image.Image) bool {
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if color.NRGBA64Model.Convert(a.At(x, y)) != color.NRGBA64Model.Convert(b.At(x, y)) {
				return false
			}
		}
	}
	return true
}

func TestImage_AlphaToJPEG_OverWhite(t *testing.T) {
	c := NewCatalog(Limits{})
	got, _, err := image.Decode(bytes.NewReader(convertBytes(t, c, "png", "jpeg", "../testdata/images/sample-alpha.png")))
	if err != nil {
		t.Fatal(err)
	}
	// Column 0 is fully transparent: it must come out white, not black.
	for y := 0; y < 48; y += 8 {
		r, g, b, _ := got.At(0, y).RGBA()
		if r>>8 < 235 || g>>8 < 235 || b>>8 < 235 {
			t.Errorf("transparent pixel (0,%d) became %d,%d,%d; want white", y, r>>8, g>>8, b>>8)
		}
	}
}

func TestImage_GIF_MedianCutPalette(t *testing.T) {
	c := NewCatalog(Limits{})
	g, err := gif.Decode(bytes.NewReader(convertBytes(t, c, "png", "gif", "../testdata/images/sample.png")))
	if err != nil {
		t.Fatal(err)
	}
	pm := g.(*image.Paletted)
	if len(pm.Palette) < 200 {
		t.Errorf("palette has %d colors, want a full adaptive palette", len(pm.Palette))
	}
	plan9 := 0
	for _, pc := range pm.Palette {
		if p9 := color.Palette(palette.Plan9); p9[p9.Index(pc)] == pc {
			plan9++
		}
	}
	if plan9 > len(pm.Palette)/2 {
		t.Errorf("%d of %d colors are from the Plan9 palette", plan9, len(pm.Palette))
	}
}

func TestImage_GIF_ExactColorsAndTransparency(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 30, 20))
	cols := []color.NRGBA{{255, 0, 0, 255}, {0, 128, 0, 255}, {1, 2, 3, 255}, {0, 0, 0, 0}}
	for y := 0; y < 20; y++ {
		for x := 0; x < 30; x++ {
			m.SetNRGBA(x, y, cols[(x/10+y/10)%len(cols)])
		}
	}
	var in bytes.Buffer
	if err := png.Encode(&in, m); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(Limits{})
	data := convertBytes(t, c, "png", "gif", writeTemp(t, in.Bytes()).Name())
	g, err := gif.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.(*image.Paletted).Palette) != 4 {
		t.Errorf("palette has %d colors, want 4", len(g.(*image.Paletted).Palette))
	}
	for y := 0; y < 20; y++ {
		for x := 0; x < 30; x++ {
			want := m.NRGBAAt(x, y)
			got := color.NRGBAModel.Convert(g.At(x, y)).(color.NRGBA)
			if want.A == 0 && got.A == 0 {
				continue
			}
			if got != want {
				t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

func TestImage_GIF_AlphaThreshold(t *testing.T) {
	c := NewCatalog(Limits{})
	g, err := gif.Decode(bytes.NewReader(convertBytes(t, c, "png", "gif", "../testdata/images/sample-alpha.png")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := g.At(0, 10).RGBA(); a != 0 {
		t.Errorf("transparent pixel has alpha %d", a)
	}
	if _, _, _, a := g.At(63, 10).RGBA(); a != 0xffff {
		t.Errorf("opaque pixel has alpha %d", a)
	}
}

func TestImage_GIF_FirstFrameOnScreen(t *testing.T) {
	// A two-frame GIF whose first frame covers only part of the 40x30 screen.
	pal := color.Palette{color.Black, color.White}
	f1 := image.NewPaletted(image.Rect(5, 5, 15, 15), pal)
	f2 := image.NewPaletted(image.Rect(0, 0, 40, 30), pal)
	var in bytes.Buffer
	err := gif.EncodeAll(&in, &gif.GIF{
		Image: []*image.Paletted{f1, f2}, Delay: []int{10, 10},
		Config: image.Config{ColorModel: pal, Width: 40, Height: 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(Limits{})
	cfg, err := png.DecodeConfig(bytes.NewReader(convertBytes(t, c, "gif", "png", writeTemp(t, in.Bytes()).Name())))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 40 || cfg.Height != 30 {
		t.Errorf("size = %dx%d, want the 40x30 screen", cfg.Width, cfg.Height)
	}
}

func TestImage_PixelLimit(t *testing.T) {
	c := NewCatalog(Limits{MaxPixels: 3000})
	err := c.Convert(context.Background(), "png", "jpeg", Options{}, openFile(t, "../testdata/images/sample.png"), io.Discard, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if want := "image is 64x48 = 0.0031 megapixels, over the 0.003 megapixel limit"; ce.Message != want {
		t.Errorf("Message = %q, want %q", ce.Message, want)
	}
}

func TestImage_ContextCancelled(t *testing.T) {
	c := NewCatalog(Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Convert(ctx, "png", "gif", Options{}, openFile(t, "../testdata/images/sample.png"), io.Discard, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want *Error wrapping context.Canceled", err)
	}
}

// TestImage_Hostile feeds every hostile sample to a converter: each must fail with a clear
// *Error, fast, without allocating anything like what its header claims.
func TestImage_Hostile(t *testing.T) {
	tests := []struct {
		file, from, want string
	}{
		{"png-bomb.png", "png", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"gif-bomb.gif", "gif", "image is 65535x65535 = 4294.83 megapixels, over the 100 megapixel limit"},
		{"tiff-bomb.tiff", "tiff", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"tiff-tile-bomb.tiff", "tiff", "input is not a valid TIFF file (its 60000x60000 tiles are out of proportion to the 16x16 image)"},
		{"bmp-bomb.bmp", "bmp", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"bmp-zero.bmp", "bmp", "input is not a valid BMP file (bmp: unsupported BMP image)"},
		{"jpeg-bomb.jpeg", "jpeg", "image is 65535x65535 = 4294.83 megapixels, over the 100 megapixel limit"},
		{"webp-bomb.webp", "webp", "image is 40000x40000 = 1600 megapixels, over the 100 megapixel limit"},
		{"truncated.png", "png", "input is not a valid PNG file (png: invalid format: not enough pixel data)"},
		{"truncated.jpeg", "jpeg", "input is not a valid JPEG file (invalid JPEG format: short Huffman data)"},
		{"wrong-magic.png", "png", "input is not a valid PNG file (it looks like JPEG)"},
		{"text.png", "png", "input is not a valid PNG file (it looks like text)"},
		{"empty.png", "png", "input is empty"},
	}
	c := NewCatalog(Limits{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			to := "png"
			if tt.from == "png" {
				to = "jpeg"
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := c.Convert(context.Background(), tt.from, to, Options{}, openFile(t, filepath.Join("../testdata/hostile", tt.file)), io.Discard, t.TempDir())
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if ce.Message != tt.want {
				t.Errorf("Message = %q, want %q", ce.Message, tt.want)
			}
			t.Logf("%v, %d KB allocated", elapsed, (after.TotalAlloc-before.TotalAlloc)>>10)
			// Each takes well under a millisecond and about 150 KB (mostly read buffers).
			if elapsed > 200*time.Millisecond {
				t.Errorf("took %v", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("allocated %d KB", alloc>>10)
			}
		})
	}
}

func TestNearestFinder_MatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 17, 255, 256} {
		pal := make(color.Palette, n)
		for i := range pal {
			pal[i] = color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
		}
		skip := -1
		if n > 1 {
			skip = n - 1
		}
		f := newNearestFinder(pal, skip)
		for range 20000 {
			r, g, b := int32(rng.IntN(256)), int32(rng.IntN(256)), int32(rng.IntN(256))
			best := int32(math.MaxInt32)
			for i, c := range pal {
				if i == skip {
					continue
				}
				cr, cg, cb, _ := c.RGBA()
				dr, dg, db := int32(cr>>8)-r, int32(cg>>8)-g, int32(cb>>8)-b
				best = min(best, dr*dr+dg*dg+db*db)
			}
			i := f.nearest(r, g, b)
			if int(i) == skip {
				t.Fatalf("nearest returned the skipped entry")
			}
			cr, cg, cb, _ := pal[i].RGBA()
			dr, dg, db := int32(cr>>8)-r, int32(cg>>8)-g, int32(cb>>8)-b
			if d := dr*dr + dg*dg + db*db; d != best {
				t.Fatalf("palette of %d: nearest(%d,%d,%d) at distance %d, brute force %d", n, r, g, b, d, best)
			}
		}
	}
}

func init() {
	for _, id := range []string{"png", "jpeg", "gif", "bmp", "tiff"} {
		registerOutputChecker(id, checkImageOutput(id))
	}
}

// checkImageOutput decodes the output as format id and compares its size with the source's.
func checkImageOutput(id string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		data, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := sniff(data); got != id {
			t.Fatalf("output sniffs as %q, want %s", got, id)
		}
		img := decodeFile(t, output)
		if src := decodeFile(t, source); img.Bounds().Size() != src.Bounds().Size() {
			t.Fatalf("output %v, source %v", img.Bounds().Size(), src.Bounds().Size())
		}
	}
}
