package image

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	gwebp "github.com/gen2brain/webp"
	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// encoderSources are images of every type encodePNG and encodeTIFF meet: the fast paths'
// (RGBA, NRGBA, Gray, opaque or not) and the ones left to image/png and x/image/tiff.
func encoderSources(t *testing.T) map[string]image.Image {
	photo := testimg.Photo(123, 77)
	alpha := testimg.PhotoAlpha(123, 77)
	rgbaAlpha := image.NewRGBA(alpha.Rect)
	draw.Draw(rgbaAlpha, rgbaAlpha.Rect, alpha, image.Point{}, draw.Src)
	gray := image.NewGray(photo.Rect)
	draw.Draw(gray, gray.Rect, photo, image.Point{}, draw.Src)
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, photo, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	ycc, err := jpeg.Decode(&jb)
	if err != nil {
		t.Fatal(err)
	}
	pal := image.NewPaletted(photo.Rect, color.Palette{color.Black, color.White, color.NRGBA{200, 10, 10, 128}})
	draw.FloydSteinberg.Draw(pal, pal.Rect, photo, image.Point{})
	return map[string]image.Image{
		"nrgba-opaque": photo, "nrgba-alpha": alpha, "rgba-alpha": rgbaAlpha, "gray": gray,
		"ycbcr": ycc, "paletted": pal, "nrgba64": testimg.Photo16(40, 30),
		"sub-image": photo.SubImage(image.Rect(5, 7, 100, 70)),
	}
}

// sameNRGBA64 compares two images pixel by pixel as 16-bit non-premultiplied colours, where
// fully transparent pixels match whatever colour they hide.
func sameNRGBA64(t *testing.T, what string, got, want image.Image) {
	t.Helper()
	gb, wb := got.Bounds(), want.Bounds()
	if gb.Size() != wb.Size() {
		t.Fatalf("%s: %v, want %v", what, gb.Size(), wb.Size())
	}
	for y := 0; y < wb.Dy(); y++ {
		for x := 0; x < wb.Dx(); x++ {
			g := color.NRGBA64Model.Convert(got.At(gb.Min.X+x, gb.Min.Y+y)).(color.NRGBA64)
			w := color.NRGBA64Model.Convert(want.At(wb.Min.X+x, wb.Min.Y+y)).(color.NRGBA64)
			if g != w && !(g.A == 0 && w.A == 0) {
				t.Fatalf("%s: pixel (%d, %d) = %v, want %v", what, x, y, g, w)
			}
		}
	}
}

// TestEncodePNGMatchesImagePNG: whichever encoder encodePNG picks, the file decodes to what
// image/png's own encoder stores for the 8-bit (or 16-bit) form of the image.
func TestEncodePNGMatchesImagePNG(t *testing.T) {
	for name, m := range encoderSources(t) {
		var ours bytes.Buffer
		if err := encodePNG(context.Background(), &ours, m, convert.Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := png.Decode(&ours)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ref := m
		switch m.(type) {
		case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		default:
			ref = To8Bit(m)
		}
		var theirs bytes.Buffer
		if err := png.Encode(&theirs, ref); err != nil {
			t.Fatal(err)
		}
		want, err := png.Decode(&theirs)
		if err != nil {
			t.Fatal(err)
		}
		if gt, wt := colorModelName(got), colorModelName(want); gt != wt {
			t.Errorf("%s: decoded as %s, image/png's as %s", name, gt, wt)
		}
		sameNRGBA64(t, name+" png", got, want)
	}
}

func colorModelName(m image.Image) string {
	switch m.(type) {
	case *image.Gray:
		return "gray"
	case *image.NRGBA, *image.RGBA:
		return "8-bit colour"
	case *image.Paletted:
		return "paletted"
	}
	return "16-bit"
}

// TestEncodeTIFFReadsBack: the TIFF decodes through x/image/tiff (convsvc's own decoder) to the
// colours x/image/tiff's own encoder would have stored.
func TestEncodeTIFFReadsBack(t *testing.T) {
	for name, m := range encoderSources(t) {
		var ours bytes.Buffer
		if err := encodeTIFF(context.Background(), &ours, m, convert.Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := tiff.Decode(bytes.NewReader(ours.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ref := m
		switch m.(type) {
		case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		default:
			ref = To8Bit(m)
		}
		var theirs bytes.Buffer
		if err := tiff.Encode(&theirs, ref, &tiff.Options{Compression: tiff.Deflate}); err != nil {
			t.Fatal(err)
		}
		want, err := tiff.Decode(&theirs)
		if err != nil {
			t.Fatal(err)
		}
		sameNRGBA64(t, name+" tiff", got, want)
	}
}

// TestEncodersThroughCatalog runs jpeg->png, png->tiff and back through the catalog, the
// paths the fast encoders serve, and checks the pixels.
func TestEncodersThroughCatalog(t *testing.T) {
	dir := t.TempDir()
	c := testCatalog(convert.Limits{})
	photo := testimg.Photo(640, 480)
	alpha := testimg.PhotoAlpha(640, 480)
	write := func(name string, enc func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := enc(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	conv := func(from, to, in string) []byte {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out bytes.Buffer
		if _, err := c.Convert(context.Background(), from, to, convert.Options{}, f, &out, dir); err != nil {
			t.Fatalf("%s->%s: %v", from, to, err)
		}
		return out.Bytes()
	}
	jpg := write("photo.jpg", func(b *bytes.Buffer) error { return jpeg.Encode(b, photo, &jpeg.Options{Quality: 85}) })
	jdec, err := jpeg.Decode(bytes.NewReader(mustRead(t, jpg)))
	if err != nil {
		t.Fatal(err)
	}
	pngOut := conv("jpeg", "png", jpg)
	got, err := png.Decode(bytes.NewReader(pngOut))
	if err != nil {
		t.Fatal(err)
	}
	sameNRGBA64(t, "jpeg->png", got, To8Bit(jdec))

	for name, m := range map[string]image.Image{"opaque": photo, "alpha": alpha} {
		src := write(name+".png", func(b *bytes.Buffer) error { return png.Encode(b, m) })
		tif := conv("png", "tiff", src)
		got, err := tiff.Decode(bytes.NewReader(tif))
		if err != nil {
			t.Fatalf("%s png->tiff: %v", name, err)
		}
		sameNRGBA64(t, name+" png->tiff", got, m)
		back := write(name+".tif", func(b *bytes.Buffer) error { _, err := b.Write(tif); return err })
		got, err = png.Decode(bytes.NewReader(conv("tiff", "png", back)))
		if err != nil {
			t.Fatalf("%s tiff->png: %v", name, err)
		}
		sameNRGBA64(t, name+" tiff->png", got, m)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWebPFromJPEGPlanes: a JPEG's planes handed to libwebp as they are (rescaled to VP8's
// range) must come back, through libwebp's own decoder, as close to the JPEG as the RGBA
// route, with the same size and colours: a range mistake would shift every pixel.
func TestWebPFromJPEGPlanes(t *testing.T) {
	for _, size := range []image.Point{{240, 160}, {241, 159}} {
		src := jpegPhoto(t, size.X, size.Y)
		encode := func(img image.Image) image.Image {
			var out bytes.Buffer
			if err := encodeWebP(context.Background(), &out, img, convert.Options{}); err != nil {
				t.Fatal(err)
			}
			got, err := gwebp.DecodeAll(&out)
			if err != nil {
				t.Fatal(err)
			}
			if got.Image[0].Bounds().Size() != size {
				t.Fatalf("decoded %v, want %v", got.Image[0].Bounds().Size(), size)
			}
			return got.Image[0]
		}
		planes, rgba := psnr(src, encode(src)), psnr(src, encode(packedNRGBA(src)))
		t.Logf("%v: PSNR %.2f dB from the planes, %.2f dB through RGBA", size, planes, rgba)
		if planes < rgba-0.1 || planes < 28 {
			t.Fatalf("%v: PSNR %.2f dB from the planes, %.2f dB through RGBA", size, planes, rgba)
		}
		// Mid-grey stays mid-grey: the mean level must not move (a full-range/studio-range
		// mix-up moves it by about 8 levels).
		if d := meanLevel(encode(src)) - meanLevel(src); math.Abs(d) > 1 {
			t.Fatalf("%v: mean level moved by %.2f", size, d)
		}
	}
}

// meanLevel is the mean of an image's R, G and B samples (8-bit).
func meanLevel(img image.Image) float64 {
	var sum float64
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			sum += float64(r>>8+g>>8+bl>>8) / 3
		}
	}
	return sum / float64(b.Dx()*b.Dy())
}

// TestVP8PlanesFromRGBA_SameFileAsLibwebp encodes opaque RGBA through the planes computed in Go
// and through libwebp's own conversion: the files must be identical, byte for byte, for even
// and odd sizes, photo-like and noisy content, both RGBA and NRGBA, and a sub-image.
func TestVP8PlanesFromRGBA_SameFileAsLibwebp(t *testing.T) {
	sizes := []image.Point{{1, 1}, {2, 2}, {3, 5}, {16, 16}, {17, 9}, {240, 160}, {241, 159}, {64, 1}, {1, 64}}
	for _, size := range sizes {
		photo := jpegPhoto(t, max(size.X, 8), max(size.Y, 8))
		rgba := image.NewRGBA(image.Rect(0, 0, size.X, size.Y))
		draw.Draw(rgba, rgba.Bounds(), photo, image.Point{}, draw.Src)
		noise := image.NewNRGBA(image.Rect(0, 0, size.X, size.Y))
		rng := rand.New(rand.NewPCG(uint64(size.X), uint64(size.Y)))
		for i := range noise.Pix {
			noise.Pix[i] = uint8(rng.IntN(256))
			if i%4 == 3 {
				noise.Pix[i] = 0xff
			}
		}
		for name, img := range map[string]image.Image{"photo RGBA": rgba, "noise NRGBA": noise} {
			pix, stride, _ := rgbaPixels(img)
			planes, ok := vp8PlanesFromRGBA(pix, stride, size.X, size.Y)
			if !ok {
				t.Fatalf("%v %s: reported translucent", size, name)
			}
			var fromPlanes, fromRGBA bytes.Buffer
			opts := gwebp.Options{Quality: WebPQuality, Method: webpMethod}
			if err := gwebp.Encode(&fromPlanes, planes, opts); err != nil {
				t.Fatal(err)
			}
			if err := gwebp.Encode(&fromRGBA, packedNRGBA(img), opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fromPlanes.Bytes(), fromRGBA.Bytes()) {
				t.Errorf("%v %s: %d bytes from the planes, %d through libwebp's conversion, not the same file",
					size, name, fromPlanes.Len(), fromRGBA.Len())
			}
		}
	}
	// A sub-image starting off the origin converts its own pixels.
	big := image.NewRGBA(image.Rect(0, 0, 40, 30))
	draw.Draw(big, big.Bounds(), jpegPhoto(t, 40, 30), image.Point{}, draw.Src)
	sub := big.SubImage(image.Rect(3, 5, 28, 26)).(*image.RGBA)
	var a, b bytes.Buffer
	if err := encodeWebP(context.Background(), &a, sub, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := gwebp.Encode(&b, packedNRGBA(sub), gwebp.Options{Quality: WebPQuality, Method: webpMethod}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("sub-image: not the file libwebp makes from its pixels")
	}
	// Translucent pixels are left to libwebp, which weighs colours by alpha.
	big.Pix[4*(20*40+10)+3] = 0x80
	if _, ok := vp8PlanesFromRGBA(big.Pix, big.Stride, 40, 30); ok {
		t.Error("a translucent pixel was not noticed")
	}
}

// TestWebPLossless_SingleColourImages: lossless WebP of images of one colour whose residuals
// all hit the colour cache (1x1 and 2x1 black, found by FuzzDecodeImage from the PBM "P1 1 1
// 1"), still and animated, which nativewebp v1.2.0 panics on, are written (by libwebp's
// lossless mode then) and decode to the same pixels.
func TestWebPLossless_SingleColourImages(t *testing.T) {
	ctx := context.Background()
	lim := convert.Limits{MaxPixels: 1 << 20}
	codec := CodecByID("webp")
	for _, size := range []image.Point{{1, 1}, {2, 1}, {1, 3}, {16, 16}} {
		m := image.NewNRGBA(image.Rectangle{Max: size})
		for i := 3; i < len(m.Pix); i += 4 {
			m.Pix[i] = 255 // opaque black
		}
		check := func(what string, data []byte) {
			t.Helper()
			got, err := decodeImageAs(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), "webp", lim)
			if err != nil {
				t.Fatalf("%v %s: decoding what was written: %v", size, what, err)
			}
			if got.Bounds().Size() != size {
				t.Fatalf("%v %s: decoded %v", size, what, got.Bounds())
			}
			for y := range size.Y {
				for x := range size.X {
					if r, g, b, a := got.At(got.Bounds().Min.X+x, got.Bounds().Min.Y+y).RGBA(); r|g|b != 0 || a != 0xffff {
						t.Fatalf("%v %s: pixel (%d,%d) is %d %d %d %d, want opaque black", size, what, x, y, r, g, b, a)
					}
				}
			}
		}
		var still bytes.Buffer
		if err := codec.Encode(ctx, &still, m, fuzzLossless); err != nil {
			t.Fatalf("%v still: %v", size, err)
		}
		check("still", still.Bytes())
		var anim bytes.Buffer
		if err := codec.encodeAll(ctx, &anim, &animation{frames: []image.Image{m, m}, delays: []int{100, 100}}, fuzzLossless); err != nil {
			t.Fatalf("%v animated: %v", size, err)
		}
		check("animated", anim.Bytes())
	}
}
