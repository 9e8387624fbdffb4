package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// wholeImage is what the whole-image path writes for a file of the codec codecID converted
// to dstID under opts: DecodePixels, Resize (nothing without a size), then the target's
// encoder. The strip paths are held to its bytes.
func wholeImage(t testing.TB, codecID, dstID string, data []byte, opts convert.Options) []byte {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID(codecID)
	cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
	if err != nil {
		t.Fatal(err)
	}
	img, err := DecodePixels(context.Background(), in, codec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = Resize(context.Background(), img, opts, convert.Limits{}.Normalized()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CodecByID(dstID).Encode(context.Background(), &out, img, opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The streamed PNG -> JPEG writes the whole-image path's bytes exactly, for every layout
// pngstream streams (gray, RGB, RGBA, gray+alpha, palettes with transparency and with
// indices past the palette), at sizes of one strip, of many, and with a short last strip.
func TestStreamPNGToJPEG_SameBytesAsWholeImage(t *testing.T) {
	samples := map[string][]byte{}
	for _, sz := range shortSizes(image.Pt(300, 300), image.Pt(1000, 517), image.Pt(257, 2000)) {
		for name, data := range pipelineSamplesAt(t, sz.X, sz.Y) {
			samples[name] = data
		}
	}
	for name, data := range samples {
		for _, q := range shortQualities(0, 35) {
			t.Run(fmt.Sprintf("%s/q%d", name, q), func(t *testing.T) {
				checkGoroutines(t)
				var out bytes.Buffer
				handled, err := runPipeline(context.Background(), t, data, &out, convert.Options{Quality: q})
				if err != nil || !handled {
					t.Fatalf("handled %v, err %v", handled, err)
				}
				if want := wholeImage(t, "png", "jpeg", data, convert.Options{Quality: q}); !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
				}
			})
		}
	}
}

// pipelineSamplesAt is pipelineSamples' set of layouts at one size.
func pipelineSamplesAt(t testing.TB, w, h int) map[string][]byte {
	photo := testimg.Photo(w, h)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	ga := make([]byte, 2*w*h)
	for i := range w * h {
		ga[2*i], ga[2*i+1] = photo.Pix[4*i], byte(i*7)
	}
	plte := []byte{255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 200, 100, 50, 1, 2, 3}
	idx := make([]byte, w*h)
	for i := range idx {
		idx[i] = byte((i*31 + i/w) % 10)
	}
	return map[string][]byte{
		fmt.Sprintf("rgb-%dx%d", w, h):       encodePNGBytes(t, photo),
		fmt.Sprintf("rgba-%dx%d", w, h):      encodePNGBytes(t, testimg.PhotoAlpha(w, h)),
		fmt.Sprintf("gray-%dx%d", w, h):      encodePNGBytes(t, gray),
		fmt.Sprintf("grayalpha-%dx%d", w, h): rawPNG(t, w, h, 4, ga, nil, nil),
		fmt.Sprintf("paletted-%dx%d", w, h):  rawPNG(t, w, h, 3, idx, plte, []byte{0, 128, 255}),
	}
}

// The streamed conversion allocates a small fraction of the image: a 12 MP RGB PNG, which
// decodes to a 48 MB RGBA image, converts with under 16 MB allocated in all (strip buffers,
// the inflater, the encoded strips), whatever the machine's load.
func TestStreamPNGToJPEG_AllocatesStripsNotTheImage(t *testing.T) {
	if testing.Short() {
		t.Skip("12 MP")
	}
	for _, kind := range []string{"rgb", "rgba"} {
		m := image.Image(testimg.Photo(4000, 3000))
		if kind == "rgba" {
			m = testimg.PhotoAlpha(4000, 3000)
		}
		data := encodePNGBytes(t, m)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		handled, err := runPipeline(context.Background(), t, data, io.Discard, convert.Options{})
		runtime.ReadMemStats(&after)
		if !handled || err != nil {
			t.Fatalf("%s: handled %v, err %v", kind, handled, err)
		}
		// The RGBA copies of translucent strips are made per strip (jpegSource), so the
		// rgba total is about one more image's worth; what is alive at once stays small.
		limit := uint64(16 << 20)
		if kind == "rgba" {
			limit = 48<<20 + 16<<20
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > limit {
			t.Errorf("%s 4000x3000: %d MiB allocated, want under %d MiB", kind, got>>20, limit>>20)
		}
	}
}

// The budget charges a streamed conversion its strips, not the image: under a budget too
// small for the whole-image estimate, a PNG -> JPEG streams (and holds exactly the stream
// estimate while it runs), while a 16-bit PNG, which does not stream, and a resize are
// refused for the budget.
func TestStreamPNGToJPEG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h = 3000, 2000
	png, jpg := CodecByID("png"), CodecByID("jpeg")
	whole := memoryEstimate(png, jpg, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamJPEGCost(image.Rect(0, 0, w, h), false, 4)
	if stream*2 > whole {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	src := encodeTemp(t, testimg.Photo(w, h))

	if got := budgetWhileWriting(t, c, "png", src, "jpeg", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the stream estimate %d", got, stream)
	}

	deep := image.NewGray16(image.Rect(0, 0, w, h))
	deepPath := convtest.WriteTemp(t, encodePNGBytes(t, deep)).Name()
	for name, run := range map[string]func() error{
		"16-bit": func() error {
			_, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{}, openFile(t, deepPath), io.Discard, t.TempDir())
			return err
		},
		"resize": func() error {
			_, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{Width: w - 1}, openFile(t, src), io.Discard, t.TempDir())
			return err
		},
	} {
		err := run()
		var ce *convert.Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
			t.Errorf("%s: err = %v, want the budget exceeded", name, err)
		}
		if got, _ := c.MemoryUse(); got != 0 {
			t.Errorf("%s: budget in use %d after the refusal", name, got)
		}
	}
}

// translucent is called once for an image with a pixel that is not opaque wherever it is
// (a single translucent pixel in the last row of a 300x2000 RGBA), and never for opaque
// ones, whatever their layout.
func TestStreamPNGToJPEG_Translucent(t *testing.T) {
	// Many strips (128 rows each at 300 wide), the translucent pixel in the last row of the
	// last: 2000 rows, 600 under -short (the race run, where the 2000-row files took 20-25 s
	// at a load of 16-18).
	h := 2000
	if testing.Short() {
		h = 600
	}
	opaqueRGBA := testimg.PhotoAlpha(300, h)
	for i := 3; i < len(opaqueRGBA.Pix); i += 4 {
		opaqueRGBA.Pix[i] = 255
	}
	lastPixel := testimg.PhotoAlpha(300, h)
	for i := 3; i < len(lastPixel.Pix); i += 4 {
		lastPixel.Pix[i] = 255
	}
	lastPixel.Pix[len(lastPixel.Pix)-1] = 254
	for name, tc := range map[string]struct {
		data []byte
		want int
	}{
		"rgb":                 {encodePNGBytes(t, testimg.Photo(300, h)), 0},
		"rgba all opaque":     {encodePNGBytes(t, opaqueRGBA), 0},
		"rgba last pixel":     {encodePNGBytes(t, lastPixel), 1},
		"rgba translucent":    {encodePNGBytes(t, testimg.PhotoAlpha(300, h)), 1},
		"paletted with alpha": {pipelineSamplesAt(t, 300, h)[fmt.Sprintf("paletted-300x%d", h)], 1},
	} {
		in := io.NewSectionReader(bytes.NewReader(tc.data), 0, int64(len(tc.data)))
		codec := CodecByID("png")
		cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		handled, err := pngToJPEG(context.Background(), in, io.Discard, codec, cfg, convert.Options{}, func() { calls++ })
		if !handled || err != nil {
			t.Fatalf("%s: handled %v, err %v", name, handled, err)
		}
		if calls != tc.want {
			t.Errorf("%s: translucent called %d times, want %d", name, calls, tc.want)
		}
	}
}

// atMostProcs runs the rest of t with GOMAXPROCS at most n. The strip paths' estimates and
// allocations grow with the number of workers (streamJPEGCost, stripBuffers), and the image
// sizes of the budget and allocation tests are chosen so that streaming is well under the
// whole-image path at n; on a machine with many cores those sizes would be too small to say so.
func atMostProcs(t *testing.T, n int) {
	if old := runtime.GOMAXPROCS(0); old > n {
		runtime.GOMAXPROCS(n)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
}
