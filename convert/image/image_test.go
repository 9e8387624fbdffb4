package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/cputime"
	"github.com/gen2brain/avif"
	gwebp "github.com/gen2brain/webp"
	ico "github.com/sergeymakinen/go-ico"
	"github.com/spakin/netpbm"
	"github.com/xfmoulet/qoi"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

func openFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// imageFormatOf maps a sample or output path to its image format id by extension.
func imageFormatOf(path string) string {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	for _, f := range imageFormats {
		for _, e := range f.Extensions {
			if e == ext && CodecByID(f.ID) != nil {
				return f.ID
			}
		}
	}
	return ""
}

// decodedSample is a sample decoded the way the converters decode it: the reference an output
// is compared with.
type decodedSample struct {
	img    image.Image // the image, or an animation's first frame
	frames int
}

var decodedSamples sync.Map // path -> *decodedSample

// decodeSample decodes a sample with this package's own decoders, once per test binary.
func decodeSample(t testing.TB, path string) *decodedSample {
	t.Helper()
	if d, ok := decodedSamples.Load(path); ok {
		return d.(*decodedSample)
	}
	format := imageFormatOf(path)
	codec := CodecByID(format)
	if codec == nil {
		t.Fatalf("%s: not an image sample", path)
	}
	f := openFile(t, path)
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	in := io.NewSectionReader(f, 0, fi.Size())
	img, err := decodeImageAs(context.Background(), in, format, convert.Limits{})
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	d := &decodedSample{img: img, frames: 1}
	if codec.frames != nil {
		if d.frames, err = codec.frames(in); err != nil {
			t.Fatalf("counting frames of %s: %v", path, err)
		}
	}
	decodedSamples.Store(path, d)
	return d
}

// decodeOutput decodes a conversion's output with a decoder other than the one that wrote it
// wherever Go has one (x/image for WebP, xfmoulet/qoi for our QOI encoder, spakin/netpbm for
// our PPM writer), and returns its first frame and frame count.
func decodeOutput(t testing.TB, format string, data []byte) (image.Image, int) {
	t.Helper()
	r := bytes.NewReader(data)
	var img image.Image
	var err error
	frames := 1
	switch format {
	case "png":
		img, err = png.Decode(r)
	case "jpeg":
		img, err = jpeg.Decode(r)
	case "gif":
		var g *gif.GIF
		if g, err = gif.DecodeAll(r); err == nil {
			img, frames = g.Image[0], len(g.Image)
			if b := img.Bounds(); b.Dx() != g.Config.Width || b.Dy() != g.Config.Height {
				t.Fatalf("GIF first frame %v on a %dx%d screen", b, g.Config.Width, g.Config.Height)
			}
		}
	case "bmp":
		img, err = bmp.Decode(r)
	case "tiff":
		img, err = tiff.Decode(r)
	case "webp":
		info, perr := parseWebP(r)
		if perr != nil {
			t.Fatalf("output is not WebP: %v", perr)
		}
		if info.animated {
			var a *gwebp.WEBP
			if a, err = gwebp.DecodeAll(bytes.NewReader(data)); err == nil {
				img, frames = a.Image[0], len(a.Image)
				if frames != info.frames {
					t.Fatalf("libwebp decoded %d frames, the file has %d ANMF chunks", frames, info.frames)
				}
			}
		} else {
			img, err = webp.Decode(r)
		}
	case "avif":
		img, err = avif.Decode(r)
	case "qoi":
		img, err = qoi.Decode(r)
	case "ppm":
		img, err = netpbm.Decode(r, &netpbm.DecodeOptions{Target: netpbm.PAM})
	case "ico":
		img, err = ico.Decode(r)
	default:
		t.Fatalf("no decoder for %s outputs", format)
	}
	if err != nil {
		t.Fatalf("%s output does not decode: %v", format, err)
	}
	return img, frames
}

// psnr compares the opaque pixels of two images (colors as 8-bit non-premultiplied).
func psnr(a, b image.Image) float64 {
	var sum float64
	var n int
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ca := nrgbaAt(a, x, y)
			cb := nrgbaAt(b, x-r.Min.X+b.Bounds().Min.X, y-r.Min.Y+b.Bounds().Min.Y)
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

// psnrTranslucent compares the straight (non-premultiplied) colour and the alpha of the
// pixels at least half opaque in a but not fully: where premultiplication mistakes show.
func psnrTranslucent(a, b image.Image) float64 {
	var sum float64
	var n int
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ca, cb := nrgbaAt(a, x, y), nrgbaAt(b, x-r.Min.X+b.Bounds().Min.X, y-r.Min.Y+b.Bounds().Min.Y)
			if ca.A < 128 || ca.A == 255 {
				continue
			}
			for _, d := range []float64{float64(ca.R) - float64(cb.R), float64(ca.G) - float64(cb.G), float64(ca.B) - float64(cb.B), float64(ca.A) - float64(cb.A)} {
				sum += d * d
			}
			n += 4
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

// pixelDiff returns the largest difference of any channel between two same-sized images,
// counting only pixels opaque in a when opaqueOnly, and ignoring the colour of pixels fully
// transparent in both. Premultiplied layouts round translucent colours differently, so those
// compare within tolerance.
func pixelDiff(a, b image.Image, opaqueOnly bool) (worst int, at image.Point) {
	ra, rb := a.Bounds(), b.Bounds()
	for y := 0; y < ra.Dy(); y++ {
		for x := 0; x < ra.Dx(); x++ {
			ca, cb := nrgbaAt(a, ra.Min.X+x, ra.Min.Y+y), nrgbaAt(b, rb.Min.X+x, rb.Min.Y+y)
			if opaqueOnly && ca.A != 255 || ca.A == 0 && cb.A == 0 {
				continue
			}
			d := max(absDiff(ca.R, cb.R), absDiff(ca.G, cb.G), absDiff(ca.B, cb.B), absDiff(ca.A, cb.A))
			if ca.A < 255 && ca.A > 0 {
				// Translucent: a premultiplied copy loses up to 255/alpha per channel.
				d = max(0, d-255/int(ca.A))
			}
			if d > worst {
				worst, at = d, image.Pt(x, y)
			}
		}
	}
	return worst, at
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return false
}

// animatedTargets hold every frame of an animation.
var animatedTargets = map[string]bool{"gif": true, "webp": true}

// TestImage_Matrix converts every image sample to every image format it reaches and reads
// each back (the image-to-image part of the standard catalog's conversion matrix; rasters
// rendered from documents are the document family's).
func TestImage_Matrix(t *testing.T) {
	checkers := map[string]convtest.Checker{}
	for i := range Codecs {
		if c := &Codecs[i]; c.Encode != nil {
			checkers[c.ID] = checkImageOutput(c.ID)
		}
	}
	owns := func(from, to string) bool { return CodecByID(from) != nil && checkers[to] != nil }
	convtest.Matrix(t, testCatalog(convert.Limits{}), owns, checkers)
}

// checkImageOutput reads an output back as format id with an independent decoder where there
// is one and compares it with the source as this package decodes it: the size (ICO fits
// 256x256), the frame count of animations where the target holds them, and the pixels:
// exactly for lossless targets, by PSNR for lossy ones.
func checkImageOutput(id string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		data, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := convert.Sniff(data); got != id {
			t.Fatalf("output sniffs as %q, want %s", got, id)
		}
		src := decodeSample(t, source)
		got, frames := decodeOutput(t, id, data)
		want := src.img.Bounds().Size()
		if id == "ico" && (want.X > 256 || want.Y > 256) {
			w, h, _ := ResizeBox(want.X, want.Y, convert.Options{Width: 256, Height: 256})
			want = image.Pt(w, h)
		}
		if got.Bounds().Size() != want {
			t.Fatalf("output is %v, source %v", got.Bounds().Size(), want)
		}
		wantFrames := 1
		if animatedTargets[id] {
			wantFrames = src.frames
		}
		if frames != wantFrames {
			t.Errorf("output has %d frames, want %d", frames, wantFrames)
		}
		if frames > 1 || id == "ico" && got.Bounds().Size() != src.img.Bounds().Size() {
			return // frames are composed canvases; TestImage_Animation compares them
		}
		switch id {
		case "png", "tiff", "bmp", "qoi":
			if d, at := pixelDiff(src.img, got, false); d > 0 {
				t.Errorf("lossless conversion changed pixels: off by %d at %v", d, at)
			}
		case "ppm", "ico":
			// PPM lays alpha over white; ICO's BMP entries keep it, as a 1-bit mask.
			if d, at := pixelDiff(src.img, got, true); d > 0 {
				t.Errorf("conversion changed opaque pixels: off by %d at %v", d, at)
			}
		case "jpeg", "webp", "avif":
			// The samples are small and noisy (sigma 10), the PBM one black and white: lossy
			// codecs stay above 23 dB on them; a channel mix-up or a shift falls far below.
			if p := psnr(src.img, got); p < 22 {
				t.Errorf("PSNR = %.1f dB, want >= 22", p)
			}
			if id != "jpeg" && !opaque(src.img) {
				if p := psnrTranslucent(src.img, got); p < 22 {
					t.Errorf("PSNR of translucent pixels (colour and alpha) = %.1f dB, want >= 22", p)
				}
			}
		case "gif":
			if p := psnr(src.img, got); p < 20 {
				t.Errorf("PSNR = %.1f dB, want >= 20", p)
			}
		}
	}
}

func convertImageBytes(t *testing.T, c *convert.Catalog, from, to, path string) []byte {
	t.Helper()
	return convertImageOpts(t, c, from, to, path, convert.Options{})
}

func convertImageOpts(t *testing.T, c *convert.Catalog, from, to, path string, opts convert.Options) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := c.Convert(context.Background(), from, to, opts, openFile(t, path), &out, t.TempDir()); err != nil {
		t.Fatalf("Convert %s to %s: %v", from, to, err)
	}
	return out.Bytes()
}

// encodeTemp writes an image as PNG to a temporary file and returns its path.
func encodeTemp(t *testing.T, m image.Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return convtest.WriteTemp(t, b.Bytes()).Name()
}

func TestImage_StaysEightBit(t *testing.T) {
	c := testCatalog(convert.Limits{})
	for _, name := range []string{"sample.jpeg", "sample.webp", "sample-alpha.webp", "sample.avif", "sample.jxl", "sample.qoi", "sample.ppm", "sample.pgm", "sample.ico"} {
		path := filepath.Join("../../testdata/images", name)
		data := convertImageBytes(t, c, imageFormatOf(path), "png", path)
		// IHDR: 8 signature + 4 length + 4 type + 4 width + 4 height, then bit depth.
		if depth := data[24]; depth != 8 {
			t.Errorf("%s: PNG bit depth = %d, want 8", name, depth)
		}
	}
}

func TestImage_16BitKeptWhereFormatAllows(t *testing.T) {
	c := testCatalog(convert.Limits{})
	path := "../../testdata/images/sample-16bit.png"
	src := decodeSample(t, path).img
	got, err := tiff.Decode(bytes.NewReader(convertImageBytes(t, c, "png", "tiff", path)))
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
	ppm, err := netpbm.Decode(bytes.NewReader(convertImageBytes(t, c, "png", "ppm", path)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ppm.MaxValue() != 65535 {
		t.Errorf("16-bit PNG to PPM has maxval %d, want 65535", ppm.MaxValue())
	}
	if !sameColors64(src, ppm) {
		t.Error("16-bit PNG to PPM changed pixels")
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

func TestImage_AlphaOverWhite(t *testing.T) {
	c := testCatalog(convert.Limits{})
	for _, to := range []string{"jpeg", "ppm"} {
		got, _ := decodeOutput(t, to, convertImageBytes(t, c, "png", to, "../../testdata/images/sample-alpha.png"))
		// Column 0 is fully transparent: it must come out white, not black.
		for y := 0; y < 48; y += 8 {
			r, g, b, _ := got.At(0, y).RGBA()
			if r>>8 < 235 || g>>8 < 235 || b>>8 < 235 {
				t.Errorf("%s: transparent pixel (0,%d) became %d,%d,%d; want white", to, y, r>>8, g>>8, b>>8)
			}
		}
	}
}

func TestImage_GIF_MedianCutPalette(t *testing.T) {
	c := testCatalog(convert.Limits{})
	g, err := gif.Decode(bytes.NewReader(convertImageBytes(t, c, "png", "gif", "../../testdata/images/sample.png")))
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
	c := testCatalog(convert.Limits{})
	data := convertImageBytes(t, c, "png", "gif", encodeTemp(t, m))
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
	c := testCatalog(convert.Limits{})
	g, err := gif.Decode(bytes.NewReader(convertImageBytes(t, c, "png", "gif", "../../testdata/images/sample-alpha.png")))
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
	c := testCatalog(convert.Limits{})
	cfg, err := png.DecodeConfig(bytes.NewReader(convertImageBytes(t, c, "gif", "png", convtest.WriteTemp(t, in.Bytes()).Name())))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 40 || cfg.Height != 30 {
		t.Errorf("size = %dx%d, want the 40x30 screen", cfg.Width, cfg.Height)
	}
}

func TestImage_PixelLimit(t *testing.T) {
	c := testCatalog(convert.Limits{MaxPixels: 3000})
	_, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{}, openFile(t, "../../testdata/images/sample.png"), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if want := "image is 64x48 = 0.0031 megapixels, over the 0.003 megapixel limit"; ce.Message != want {
		t.Errorf("Message = %q, want %q", ce.Message, want)
	}
}

func TestImage_ContextCancelled(t *testing.T) {
	c := testCatalog(convert.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Convert(ctx, "png", "gif", convert.Options{}, openFile(t, "../../testdata/images/sample.png"), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want *Error wrapping context.Canceled", err)
	}
}

// warmWASM runs each wasm-backed decoder once so that tests timing a failure do not time the
// one-off compilation of its module (seconds; see TestImage_WASMFirstCall).
var warmWASM = sync.OnceFunc(func() {
	for _, name := range []string{"sample.avif", "sample.jxl", "sample-anim.webp"} {
		path := filepath.Join("../../testdata/images", name)
		data, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		_, _ = decodeImageAs(context.Background(), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), imageFormatOf(path), convert.Limits{})
	}
})

// TestImage_Hostile feeds every hostile sample to a converter: each must fail with a clear
// *Error, fast, without allocating anything like what its header claims.
func TestImage_Hostile(t *testing.T) {
	tests := []struct {
		file, from, to, want string
	}{
		{"png-bomb.png", "png", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"gif-bomb.gif", "gif", "", "image is 65535x65535 = 4294.83 megapixels, over the 100 megapixel limit"},
		{"gif-frames.gif", "gif", "webp", "animation has 2500 frames of 2000x2000 = 10000 megapixels in all, over the 100 megapixel limit"},
		{"tiff-bomb.tiff", "tiff", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"tiff-tile-bomb.tiff", "tiff", "", "input is not a valid TIFF file (its 60000x60000 tiles are out of proportion to the 16x16 image)"},
		{"bmp-bomb.bmp", "bmp", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"bmp-zero.bmp", "bmp", "", "input is not a valid BMP file (bmp: unsupported BMP image)"},
		{"jpeg-bomb.jpeg", "jpeg", "", "image is 65535x65535 = 4294.83 megapixels, over the 100 megapixel limit"},
		{"webp-bomb.webp", "webp", "", "image is 40000x40000 = 1600 megapixels, over the 100 megapixel limit"},
		{"webp-anim-bomb.webp", "webp", "gif", "animation has 100 frames of 4000x4000 = 1600 megapixels in all, over the 100 megapixel limit"},
		{"avif-bomb.avif", "avif", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"avif-noinfo.avif", "avif", "", "input is not a valid AVIF file (no image size in the header)"},
		{"avif-truncated.avif", "avif", "", "input is not a valid AVIF file (it is truncated)"},
		{"avif-wrong-magic.avif", "avif", "", "input is not a valid AVIF file (it looks like PNG)"},
		{"jxl-bomb.jxl", "jxl", "", "image is 200000x200000 = 40000 megapixels, over the 100 megapixel limit"},
		{"jxl-truncated.jxl", "jxl", "", "input is not a valid JPEG XL file (it is truncated)"},
		{"jxl-truncated-codestream.jxl", "jxl", "", "input is not a valid JPEG XL file (jpegxl: decode failed)"},
		{"jxl-wrong-magic.jxl", "jxl", "", "input is not a valid JPEG XL file (it looks like JPEG)"},
		{"qoi-bomb.qoi", "qoi", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"qoi-expansion.qoi", "qoi", "", "input is not a valid QOI file (9000x9000 pixels cannot come from 64 bytes of data)"},
		{"qoi-truncated.qoi", "qoi", "", "input is not a valid QOI file (it is truncated)"},
		{"ppm-bomb.ppm", "ppm", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"ppm-truncated.ppm", "ppm", "", "input is not a valid Netpbm file (it is truncated)"},
		{"ppm-wrong-magic.ppm", "ppm", "", "input is not a valid Netpbm file (unrecognised data)"},
		{"ico-huge-entry.ico", "ico", "", "image is 100000x100000 = 10000 megapixels, over the 100 megapixel limit"},
		{"ico-many-entries.ico", "ico", "", "input is not a valid ICO file (it lists 300 images; at most 256 are accepted)"},
		{"ico-outside.ico", "ico", "", "input is not a valid ICO file (it is truncated)"},
		{"truncated.png", "png", "", "input is not a valid PNG file (png: invalid format: not enough pixel data)"},
		{"truncated.jpeg", "jpeg", "", "input is not a valid JPEG file (invalid JPEG format: short Huffman data)"},
		{"wrong-magic.png", "png", "", "input is not a valid PNG file (it looks like JPEG)"},
		{"text.png", "png", "", "input is not a valid PNG file (it looks like text)"},
		{"empty.png", "png", "", "input is empty"},
	}
	warmWASM()
	c := testCatalog(convert.Limits{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			to := tt.to
			if to == "" {
				to = "png"
				if tt.from == "png" {
					to = "jpeg"
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := cputime.Self() // CPU, not wall time: the machine may be busy (issue 24)
			_, err := c.Convert(context.Background(), tt.from, to, convert.Options{}, openFile(t, filepath.Join("../../testdata/hostile", tt.file)), io.Discard, t.TempDir())
			elapsed := cputime.Self() - start
			runtime.ReadMemStats(&after)
			var ce *convert.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if ce.Message != tt.want {
				t.Errorf("Message = %q, want %q", ce.Message, tt.want)
			}
			t.Logf("%v of CPU, %d KB allocated", elapsed, (after.TotalAlloc-before.TotalAlloc)>>10)
			// Each takes well under a millisecond and about 150 KB (mostly read buffers);
			// the truncated AVIF is the largest file read whole.
			if elapsed > 200*time.Millisecond*raceSlowdown {
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
