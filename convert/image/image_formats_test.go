package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gwebp "github.com/gen2brain/webp"
	"github.com/xfmoulet/qoi"
	"golang.org/x/image/webp"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

func TestImage_Sniff(t *testing.T) {
	ftyp := func(major string, compat ...string) string {
		s := major + "\x00\x00\x00\x00" + strings.Join(compat, "")
		return string(binary.BigEndian.AppendUint32(nil, uint32(8+len(s)))) + "ftyp" + s
	}
	tests := []struct {
		data     string
		id, name string
	}{
		{ftyp("avif", "mif1", "miaf"), "avif", "AVIF"},
		{ftyp("avis", "msf1"), "avif", "AVIF"},
		{ftyp("mif1", "mif1", "avif"), "avif", "AVIF"}, // the brand that matters is a compatible one
		{ftyp("heic", "mif1", "heic"), "heic", "HEIC"},
		{ftyp("mif1", "heic"), "heic", "HEIC"},
		{ftyp("mif1", "mif1"), "", "HEIF"},
		{ftyp("isom", "mp41"), "", "MP4"},
		{"\xff\x0a\xfa\x7f", "jxl", "JPEG XL"},
		{jxlContainerSig + "\x00\x00\x00\x14ftypjxl ", "jxl", "JPEG XL"},
		{"qoif\x00\x00\x00\x01\x00\x00\x00\x01\x04\x00", "qoi", "QOI"},
		{"P6\n64 48\n255\n", "ppm", "Netpbm"},
		{"P3 # comment\n2 2 255 0 0 0", "ppm", "Netpbm"},
		{"P1\n4 4\n0101", "ppm", "Netpbm"},
		{"P7\nWIDTH 4\nHEIGHT 4\n", "ppm", "Netpbm"},
		{"P3 is a paragraph number", "", "text"},
		{"P5\n", "", "text"},
		{"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00", "ico", "ICO"},
		{"\x00\x00\x01\x00\x00\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00", "", "ICO"}, // no images
		{"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x07\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00", "", "ICO"}, // reserved byte set
	}
	for _, tt := range tests {
		id, name := convert.Sniff([]byte(tt.data))
		if id != tt.id || name != tt.name {
			t.Errorf("sniff(%q) = %q, %q; want %q, %q", tt.data, id, name, tt.id, tt.name)
		}
	}
	// Every sample sniffs as its own format.
	paths, _ := filepath.Glob("../../testdata/images/sample*")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := imageFormatOf(p)
		if strings.HasSuffix(p, ".heic") {
			want = "heic"
		}
		if id, name := convert.Sniff(data); id != want {
			t.Errorf("%s sniffs as %q (%s), want %q", p, id, name, want)
		}
	}
}

func TestImage_Graph(t *testing.T) {
	c := testCatalog(convert.Limits{})
	readable := []string{"avif", "bmp", "gif", "ico", "jpeg", "jxl", "png", "ppm", "qoi", "tiff", "webp"}
	writable := []string{"avif", "bmp", "gif", "ico", "jpeg", "png", "ppm", "qoi", "tiff", "webp"}
	imageTargets := func(id string) []string {
		// Other families may convert images too (to PDF, say): only image targets count here.
		return slices.DeleteFunc(c.Targets(id), func(to string) bool {
			f, _ := c.Format(to)
			return f.Category != convert.CategoryImage
		})
	}
	for _, from := range readable {
		// Every writable format is its own target too (a transform within the format).
		want := slices.Clone(writable)
		if got := imageTargets(from); !slices.Equal(got, want) {
			t.Errorf("Targets(%q) = %v, want %v", from, got, want)
		}
		for _, to := range want {
			if steps, err := c.Path(from, to); err != nil || len(steps) != 1 {
				t.Errorf("Path(%q, %q) = %v, %v; want one step", from, to, steps, err)
			}
		}
	}
	for _, id := range []string{"heic", "psd"} {
		if _, ok := c.Format(id); !ok {
			t.Errorf("format %s not recognised", id)
		}
		if got := imageTargets(id); len(got) != 0 {
			t.Errorf("Targets(%s) = %v, want none: recognised only", id, got)
		}
	}
	transforms := []string{convert.OptRotate, convert.OptFlip, convert.OptCrop, convert.OptBackground, convert.OptAutoOrient, convert.OptStripMetadata, convert.OptMaxBytes}
	for _, tt := range []struct {
		id   string
		opts []string
	}{
		{"webp", append([]string{convert.OptQuality, convert.OptLossless, convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"avif", append([]string{convert.OptQuality, convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"jpeg", append([]string{convert.OptQuality, convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"qoi", append([]string{convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"ppm", append([]string{convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"ico", append([]string{convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transforms...)},
		{"jxl", nil},
	} {
		f, _ := c.Format(tt.id)
		if !slices.Equal(f.Options, tt.opts) {
			t.Errorf("%s accepts %v, want %v", tt.id, f.Options, tt.opts)
		}
	}
}

// TestImage_Animation converts the animated samples between GIF and WebP and compares every
// frame with the source's, as this package composes them, and the timing and loop count.
func TestImage_Animation(t *testing.T) {
	c := testCatalog(convert.Limits{})
	lossless := true
	for _, tt := range []struct {
		sample, to string
		opts       convert.Options
		minPSNR    float64 // 0: exact
	}{
		{"sample-anim.gif", "webp", convert.Options{Lossless: &lossless}, 0},
		{"sample-anim.gif", "webp", convert.Options{}, 22},
		{"sample-anim.webp", "gif", convert.Options{}, 20},
	} {
		t.Run(tt.sample+"->"+tt.to, func(t *testing.T) {
			path := filepath.Join("../../testdata/images", tt.sample)
			from := imageFormatOf(path)
			src := mustDecodeFrames(t, path, from)
			data := convertImageOpts(t, c, from, tt.to, path, tt.opts)
			got := mustDecodeFrames(t, convtest.WriteTemp(t, data).Name(), tt.to)
			if len(got.frames) != len(src.frames) {
				t.Fatalf("%d frames, want %d", len(got.frames), len(src.frames))
			}
			if got.loopCount != src.loopCount {
				t.Errorf("plays %d times, want %d", got.loopCount, src.loopCount)
			}
			for i := range src.frames {
				if d := got.delays[i] - src.delays[i]; d < -5 || d > 5 {
					t.Errorf("frame %d shows %d ms, want %d", i, got.delays[i], src.delays[i])
				}
				if tt.minPSNR == 0 {
					if d, at := pixelDiff(src.frames[i], got.frames[i], false); d > 0 {
						t.Errorf("frame %d: lossless conversion off by %d at %v", i, d, at)
					}
				} else if p := psnr(src.frames[i], got.frames[i]); p < tt.minPSNR {
					t.Errorf("frame %d: PSNR %.1f dB, want >= %.1f", i, p, tt.minPSNR)
				}
			}
		})
	}
	// Other targets take the first frame.
	path := "../../testdata/images/sample-anim.gif"
	first := decodeSample(t, path).img
	got, frames := decodeOutput(t, "png", convertImageBytes(t, c, "gif", "png", path))
	if frames != 1 {
		t.Errorf("PNG has %d frames", frames)
	}
	if d, at := pixelDiff(first, got, false); d > 0 {
		t.Errorf("first frame off by %d at %v", d, at)
	}
}

// mustDecodeFrames decodes every frame of a GIF or WebP file the way the converters do.
func mustDecodeFrames(t *testing.T, path, format string) *animation {
	t.Helper()
	f := openFile(t, path)
	fi, _ := f.Stat()
	in := io.NewSectionReader(f, 0, fi.Size())
	codec := CodecByID(format)
	lim := convert.Limits{}.Normalized()
	cfg, err := ReadHeader(context.Background(), in, codec, lim)
	if err != nil {
		t.Fatal(err)
	}
	n, err := countImageFrames(in, codec, cfg, lim)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decodeImageFrames(context.Background(), in, codec, cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestImage_GIFDisposal(t *testing.T) {
	// Frame 1 fills the 4x1 screen red; frame 2 paints pixel 1 blue and is disposed to the
	// background; frame 3 paints pixel 2 green over what is left and is restored to the
	// previous state; frame 4 paints nothing.
	pal := color.Palette{color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}, color.NRGBA{0, 255, 0, 255}, color.NRGBA{}}
	frame := func(r image.Rectangle, idx uint8) *image.Paletted {
		p := image.NewPaletted(r, pal)
		for i := range p.Pix {
			p.Pix[i] = idx
		}
		return p
	}
	g := &gif.GIF{
		Image:    []*image.Paletted{frame(image.Rect(0, 0, 4, 1), 0), frame(image.Rect(1, 0, 2, 1), 1), frame(image.Rect(2, 0, 3, 1), 2), frame(image.Rect(3, 0, 4, 1), 3)},
		Delay:    []int{0, 1, 5, 200},
		Disposal: []byte{gif.DisposalNone, gif.DisposalBackground, gif.DisposalPrevious, gif.DisposalNone},
		Config:   image.Config{ColorModel: pal, Width: 4, Height: 1},
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, g); err != nil {
		t.Fatal(err)
	}
	a, err := decodeGIFAll(context.Background(), &buf, image.Config{Width: 4, Height: 1})
	if err != nil {
		t.Fatal(err)
	}
	red, blue, green, clear := color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}, color.NRGBA{0, 255, 0, 255}, color.NRGBA{}
	want := [][]color.NRGBA{
		{red, red, red, red},
		{red, blue, red, red},
		{red, clear, green, red},
		{red, clear, red, red},
	}
	for i, row := range want {
		for x, c := range row {
			if got := a.frames[i].(*image.NRGBA).NRGBAAt(x, 0); got != c {
				t.Errorf("frame %d pixel %d = %v, want %v", i, x, got, c)
			}
		}
	}
	if !slices.Equal(a.delays, []int{100, 100, 50, 2000}) {
		t.Errorf("delays %v, want [100 100 50 2000] (0 and 1 cs play as 100 ms)", a.delays)
	}
	if a.loopCount != 0 {
		t.Errorf("loop count %d, want 0 (forever)", a.loopCount)
	}
}

func TestImage_LoopCounts(t *testing.T) {
	for _, gifLoop := range []int{-1, 0, 1, 5} {
		if back := webPToGIFLoop(gifToWebPLoop(gifLoop)); back != gifLoop {
			t.Errorf("GIF loop %d -> WebP %d -> GIF %d", gifLoop, gifToWebPLoop(gifLoop), back)
		}
	}
}

func TestImage_AnimationLimits(t *testing.T) {
	// MaxFrames+1 one-pixel frames on a one-pixel screen.
	pal := color.Palette{color.Black, color.White}
	g := &gif.GIF{Config: image.Config{ColorModel: pal, Width: 1, Height: 1}}
	for i := 0; i <= MaxFrames; i++ {
		g.Image = append(g.Image, image.NewPaletted(image.Rect(0, 0, 1, 1), pal))
		g.Delay = append(g.Delay, 1)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, g); err != nil {
		t.Fatal(err)
	}
	c := testCatalog(convert.Limits{})
	path := convtest.WriteTemp(t, buf.Bytes()).Name()
	_, err := c.Convert(context.Background(), "gif", "webp", convert.Options{}, openFile(t, path), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || ce.Message != "animation has 10001 frames, over the limit of 10000" {
		t.Errorf("err = %v, want the frame limit", err)
	}
	// A target that holds one frame converts the first, whatever the count.
	convertImageBytes(t, c, "gif", "png", path)

	// Frames times pixels against MaxPixels: the sample has 4 frames of 64x48.
	c = testCatalog(convert.Limits{MaxPixels: 4 * 64 * 47})
	_, err = c.Convert(context.Background(), "gif", "webp", convert.Options{}, openFile(t, "../../testdata/images/sample-anim.gif"), io.Discard, t.TempDir())
	if !errors.As(err, &ce) || ce.Message != "animation has 4 frames of 64x48 = 0.01 megapixels in all, over the 0.01 megapixel limit" {
		t.Errorf("err = %v, want the frames*pixels limit", err)
	}
}

func TestImage_WebPLossless(t *testing.T) {
	c := testCatalog(convert.Limits{})
	lossless := true
	for _, name := range []string{"sample-alpha.png", "sample.png", "sample.gif"} {
		path := filepath.Join("../../testdata/images", name)
		data := convertImageOpts(t, c, imageFormatOf(path), "webp", path, convert.Options{Lossless: &lossless, Quality: 10})
		got, err := webp.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if d, at := pixelDiff(decodeSample(t, path).img, got, false); d > 0 {
			t.Errorf("%s: lossless WebP off by %d at %v", name, d, at)
		}
	}
	// nativewebp panics on a fully transparent paletted image unless given NRGBA.
	pal := color.Palette{color.NRGBA{}, color.NRGBA{1, 2, 3, 0}}
	var buf bytes.Buffer
	if err := gif.Encode(&buf, image.NewPaletted(image.Rect(0, 0, 8, 8), pal), nil); err != nil {
		t.Fatal(err)
	}
	data := convertImageOpts(t, c, "gif", "webp", convtest.WriteTemp(t, buf.Bytes()).Name(), convert.Options{Lossless: &lossless})
	if _, err := webp.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("transparent GIF to lossless WebP: %v", err)
	}
}

// TestImage_WebPLosslessInputStaysExact guards against libwebp's Decode, which returns 4:2:0
// YCbCr even for lossless files: lossless WebP must convert to PNG pixel for pixel.
func TestImage_WebPLosslessInputStaysExact(t *testing.T) {
	path := "../../testdata/images/sample-lossless.webp"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	png := decodeSample(t, "../../testdata/images/sample.png").img
	if d, _ := pixelDiff(png, ref, false); d > 0 {
		t.Fatalf("sample-lossless.webp is not sample.png")
	}
	got, _ := decodeOutput(t, "png", convertImageBytes(t, testCatalog(convert.Limits{}), "webp", "png", path))
	if d, at := pixelDiff(png, got, false); d > 0 {
		t.Errorf("lossless WebP to PNG off by %d at %v", d, at)
	}
	if lossy, _ := gwebp.Decode(bytes.NewReader(data)); lossy != nil {
		if d, _ := pixelDiff(png, lossy, false); d == 0 {
			t.Log("gen2brain/webp Decode is exact now; the x/image/webp path could go")
		}
	}
}

func TestImage_MaxSide(t *testing.T) {
	c := testCatalog(convert.Limits{})
	big := encodeTemp(t, image.NewGray(image.Rect(0, 0, 600, 300)))
	// ICO shrinks to fit unless the job sets a size.
	got, _ := decodeOutput(t, "ico", convertImageBytes(t, c, "png", "ico", big))
	if got.Bounds().Size() != image.Pt(256, 128) {
		t.Errorf("ICO of 600x300 is %v, want 256x128", got.Bounds().Size())
	}
	for _, tt := range []struct {
		to   string
		opts convert.Options
		src  image.Rectangle
		want string
	}{
		{"ico", convert.Options{Width: 300}, image.Rect(0, 0, 600, 300), "ICO images are at most 256x256 pixels and this one would be 300x150; set width and height to make it smaller"},
		{"webp", convert.Options{}, image.Rect(0, 0, 16384, 2), "WebP images are at most 16383x16383 pixels and this one would be 16384x2; set width and height to make it smaller"},
		{"avif", convert.Options{Width: 8001, Height: 6000, Fit: convert.FitFill}, image.Rect(0, 0, 8, 6), "AVIF images are written up to 48 megapixels and this one would be 8001x6000; set width and height to make it smaller"},
	} {
		_, err := c.Convert(context.Background(), "png", tt.to, tt.opts, openFile(t, encodeTemp(t, image.NewGray(tt.src))), io.Discard, t.TempDir())
		var ce *convert.Error
		if !errors.As(err, &ce) || ce.Message != tt.want {
			t.Errorf("png %v to %s with %+v: %v, want %q", tt.src.Size(), tt.to, tt.opts, err, tt.want)
		}
	}
}

func TestImage_Resize(t *testing.T) {
	c := testCatalog(convert.Limits{})
	for _, to := range []string{"webp", "avif", "qoi", "ppm", "ico", "gif"} {
		got, _ := decodeOutput(t, to, convertImageOpts(t, c, "png", to, "../../testdata/images/sample.png", convert.Options{Width: 32}))
		if got.Bounds().Size() != image.Pt(32, 24) {
			t.Errorf("%s resized to %v, want 32x24", to, got.Bounds().Size())
		}
	}
	// Animations resize every frame.
	a := mustDecodeFrames(t, convtest.WriteTemp(t, convertImageOpts(t, c, "gif", "webp", "../../testdata/images/sample-anim.gif", convert.Options{Width: 16, Height: 16, Fit: convert.FitFill})).Name(), "webp")
	if len(a.frames) != 4 || a.frames[3].Bounds().Size() != image.Pt(16, 16) {
		t.Errorf("resized animation: %d frames of %v", len(a.frames), a.frames[0].Bounds().Size())
	}
}

func TestParseJXLHeader(t *testing.T) {
	tests := []struct {
		name         string
		head         []byte
		w, h, orient int
	}{
		// div8, height (4+1)*8 = 40, ratio 1 (1:1): 40x40; ImageMetadata all_default.
		{"div8 square", jxlBitsOf(1, 1, 4, 5, 1, 3, 1, 1), 40, 40, 1},
		// Not div8, height selector 0 (9 bits) 47+1, ratio 0, width selector 0 63+1; orientation 6.
		{"explicit", jxlBitsOf(0, 1, 0, 2, 47, 9, 0, 3, 0, 2, 63, 9, 0, 1, 1, 1, 5, 3), 64, 48, 6},
		// Ratio 5 (16:9) on height 9*8 = 72 gives 128.
		{"ratio", jxlBitsOf(1, 1, 8, 5, 5, 3, 1, 1), 128, 72, 1},
	}
	for _, tt := range tests {
		w, h, o, err := parseJXLHeader(tt.head)
		if err != nil || w != tt.w || h != tt.h || o != tt.orient {
			t.Errorf("%s: %dx%d orientation %d, %v; want %dx%d orientation %d", tt.name, w, h, o, err, tt.w, tt.h, tt.orient)
		}
	}
	if _, _, _, err := parseJXLHeader([]byte{0xff, 0x0a}); err == nil {
		t.Error("empty SizeHeader accepted")
	}
	for _, name := range []string{"sample.jxl", "sample-lossless.jxl"} {
		data, _ := os.ReadFile(filepath.Join("../../testdata/images", name))
		cfg, err := jxlDecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != 64 || cfg.Height != 48 {
			t.Errorf("%s: %dx%d, %v; want 64x48", name, cfg.Width, cfg.Height, err)
		}
	}
}

// jxlBitsOf packs (value, width) pairs least significant bit first after the signature.
func jxlBitsOf(pairs ...uint64) []byte {
	out := []byte{0xff, 0x0a}
	var cur byte
	var n uint
	for i := 0; i+1 < len(pairs); i += 2 {
		for b := uint64(0); b < pairs[i+1]; b++ {
			cur |= byte(pairs[i]>>b&1) << n
			if n++; n == 8 {
				out, cur, n = append(out, cur), 0, 0
			}
		}
	}
	return append(out, cur, 0, 0, 0)
}

func TestImage_QOIEncoder(t *testing.T) {
	// Translucent pixels, long runs, repeats of earlier colours, small and large steps.
	m := testimg.PhotoAlpha(97, 31)
	for x := 10; x < 97; x++ {
		m.SetNRGBA(x, 5, color.NRGBA{1, 2, 3, 4})
	}
	m.SetNRGBA(96, 30, color.NRGBA{200, 0, 0, 255})
	var buf bytes.Buffer
	if err := encodeQOI(context.Background(), &buf, m, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), qoiEndMarker) {
		t.Error("no end marker")
	}
	got, err := qoi.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.(*image.NRGBA).Pix, m.Pix) {
		t.Error("QOI round trip changed pixels")
	}
}

func TestImage_Netpbm(t *testing.T) {
	tests := []struct {
		name, data string
		want       image.Image
	}{
		{"plain PGM maxval 15", "P2\n2 1\n15\n0 15\n", &image.Gray{Pix: []byte{0, 255}, Stride: 2, Rect: image.Rect(0, 0, 2, 1)}},
		{"PBM: 1 is black", "P1\n2 1\n1 0\n", &image.Gray{Pix: []byte{0, 255}, Stride: 2, Rect: image.Rect(0, 0, 2, 1)}},
		{"plain PBM, digits run together, comments", "P1 # c\n3 # c\n 1\n011", &image.Gray{Pix: []byte{255, 0, 0}, Stride: 3, Rect: image.Rect(0, 0, 3, 1)}},
		{"raw PBM", "P4\n10 1\n\x80\x40", &image.Gray{Pix: []byte{0, 255, 255, 255, 255, 255, 255, 255, 255, 0}, Stride: 10, Rect: image.Rect(0, 0, 10, 1)}},
		{"PAM black and white: 1 is white", "P7\nWIDTH 2\nHEIGHT 1\nDEPTH 1\nMAXVAL 1\nTUPLTYPE BLACKANDWHITE\nENDHDR\n\x01\x00", &image.Gray{Pix: []byte{255, 0}, Stride: 2, Rect: image.Rect(0, 0, 2, 1)}},
		{"PAM gray alpha", "P7\nWIDTH 1\nHEIGHT 1\nDEPTH 2\nMAXVAL 255\nTUPLTYPE GRAYSCALE_ALPHA\nENDHDR\n\x80\x40", &image.NRGBA{Pix: []byte{0x80, 0x80, 0x80, 0x40}, Stride: 4, Rect: image.Rect(0, 0, 1, 1)}},
		{"16-bit PPM", "P6\n1 1\n65535\n\x12\x34\x56\x78\x9a\xbc", &image.RGBA64{Pix: []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xff, 0xff}, Stride: 8, Rect: image.Rect(0, 0, 1, 1)}},
	}
	c := testCatalog(convert.Limits{})
	for _, tt := range tests {
		got, err := decodeImageAs(context.Background(), io.NewSectionReader(strings.NewReader(tt.data), 0, int64(len(tt.data))), "ppm", c.Limits())
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if d, at := pixelDiff(tt.want, got, false); d > 0 || got.Bounds() != tt.want.Bounds() {
			t.Errorf("%s: %T %v off by %d at %v", tt.name, got, got.Bounds(), d, at)
		}
		if _, wide := tt.want.(*image.RGBA64); wide && !sameColors64(tt.want, got) {
			t.Errorf("%s: 16-bit samples changed", tt.name)
		}
	}
	// spakin/netpbm's parser spins forever on a comment that runs into the end of the file,
	// in the header or in a plain raster; sample values over maxval are refused.
	for _, data := range []string{"P1 0#", "P2\n2 1\n255\n1 # no newline", "P5\n1 1\n100\n\xff", "P2 1 1 7 9", "P7\nWIDTH 1\n"} {
		_, err := decodeImageAs(context.Background(), io.NewSectionReader(strings.NewReader(data), 0, int64(len(data))), "ppm", c.Limits())
		var ce *convert.Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: %v, want *Error", data, err)
		}
	}
}

// TestImage_AVIFRotation: an AVIF whose irot property turns it a quarter comes out upright,
// 48x64, and its header says so before decoding.
func TestImage_AVIFRotation(t *testing.T) {
	path := "../../testdata/images/sample-rotated.avif"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := avifDecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width != 48 || cfg.Height != 64 {
		t.Fatalf("header: %dx%d, %v; want 48x64", cfg.Width, cfg.Height, err)
	}
	got, _ := decodeOutput(t, "png", convertImageBytes(t, testCatalog(convert.Limits{}), "avif", "png", path))
	if got.Bounds().Size() != image.Pt(48, 64) {
		t.Fatalf("PNG is %v, want 48x64", got.Bounds().Size())
	}
	// Turned back a quarter clockwise, it is the unrotated sample.
	upright := decodeSample(t, "../../testdata/images/sample.png").img
	back := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 64; y++ {
		for x := 0; x < 48; x++ {
			back.Set(63-y, x, got.At(x, y))
		}
	}
	if p := psnr(upright, back); p < 22 {
		t.Errorf("PSNR against the upright sample %.1f dB: rotated the wrong way?", p)
	}
}

// TestImage_WASMConcurrent runs the wasm-backed codecs from several goroutines at once: each
// call instantiates its own module from one compiled module per process.
func TestImage_WASMConcurrent(t *testing.T) {
	c := testCatalog(convert.Limits{})
	jobs := []struct{ from, to, sample string }{
		{"avif", "png", "sample.avif"}, {"jxl", "png", "sample.jxl"}, {"png", "avif", "sample.png"},
		{"webp", "gif", "sample-anim.webp"}, {"png", "webp", "sample-alpha.png"},
	}
	errs := make(chan error, 4*len(jobs))
	for range 4 {
		for _, j := range jobs {
			go func() {
				var out bytes.Buffer
				errs <- func() error {
					_, err := c.Convert(context.Background(), j.from, j.to, convert.Options{}, openFile(t, filepath.Join("../../testdata/images", j.sample)), &out, t.TempDir())
					return err
				}()
			}()
		}
	}
	for range 4 * len(jobs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestImage_WebPFallback: x/image/webp refuses a lossy image in an extended (VP8X) file that
// flags alpha without an ALPH chunk, which libwebp decodes: such files fall back to libwebp.
func TestImage_WebPFallback(t *testing.T) {
	simple, err := os.ReadFile("../../testdata/images/sample.webp")
	if err != nil {
		t.Fatal(err)
	}
	vp8 := simple[12:] // the VP8 chunk after "RIFF" size "WEBP"
	vp8x := []byte{'V', 'P', '8', 'X', 10, 0, 0, 0, 0x10, 0, 0, 0, 63, 0, 0, 47, 0, 0}
	body := append(append([]byte("WEBP"), vp8x...), vp8...)
	data := append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
	if _, err := webp.Decode(bytes.NewReader(data)); err == nil {
		t.Log("x/image/webp decodes it now; the fallback is untested")
	}
	got, _ := decodeOutput(t, "png", convertImageBytes(t, testCatalog(convert.Limits{}), "webp", "png", convtest.WriteTemp(t, data).Name()))
	// libwebp upsamples chroma smoothly, x/image by repetition: close, not equal.
	if p := psnr(decodeSample(t, "../../testdata/images/sample.webp").img, got); p < 28 {
		t.Errorf("PSNR against x/image's decode of the simple file %.1f dB, want >= 28", p)
	}
}
