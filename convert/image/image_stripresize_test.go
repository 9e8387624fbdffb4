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
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// runStripResize converts data (of codec codecID) to dstID with stripResize after ReadHeader,
// as imageRun does, under an unlimited budget unless c is given.
func runStripResize(ctx context.Context, t testing.TB, c *convert.Catalog, codecID, dstID string, data []byte, w io.Writer, opts convert.Options) (bool, error) {
	t.Helper()
	if c == nil {
		c = testCatalog(convert.Limits{})
	}
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID(codecID)
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	return stripResizeOpts(ctx, c, in, w, codec, CodecByID(dstID), cfg, opts)
}

// stripResizeSamples are the PNG layouts pngstream reads, binary PGM and PPM, and the TIFF
// layouts tiffstrip reads, at an odd size.
func stripResizeSamples(t testing.TB, w, h int) map[string][]byte {
	s := map[string][]byte{}
	for name, data := range pipelineSamplesAt(t, w, h) {
		s["png/"+name] = data
	}
	s["ppm/pgm"] = ppmBytes(w, h, true, 255)
	s["ppm/ppm"] = ppmBytes(w, h, false, 255)
	for name, data := range tiffSamples(t, w, h) {
		s["tiff/"+name] = data
	}
	return s
}

// The strip resize writes exactly the whole-image path's output (lossless PNG, so every
// pixel counts; and JPEG for the cover crops) for every PNG, PPM and TIFF layout, contain, cover and fill, odd
// sizes and a strong shrink.
func TestStripResize_SameAsWholeImage(t *testing.T) {
	opts := []convert.Options{
		{Width: 97},
		{Height: 50},
		{Width: 100, Height: 100, Fit: convert.FitCover},
		{Width: 31, Height: 200, Fit: convert.FitCover},
		{Width: 90, Height: 60, Fit: convert.FitContain},
		{Width: 301, Height: 40, Fit: convert.FitFill}, // wider than the source, still smaller
		{Width: 7, Height: 3},
	}
	for name, data := range stripResizeSamples(t, 157, 211) {
		for _, o := range opts {
			for _, dstID := range []string{"png", "jpeg"} {
				if dstID == "jpeg" && o.Fit != convert.FitCover {
					continue // the same pixels as PNG's: one fit mode is enough to check the encode
				}
				t.Run(fmt.Sprintf("%s/%dx%d-%s/%s", name, o.Width, o.Height, o.Fit, dstID), func(t *testing.T) {
					checkGoroutines(t)
					codecID, _, _ := strings.Cut(name, "/")
					var out bytes.Buffer
					handled, err := runStripResize(context.Background(), t, nil, codecID, dstID, data, &out, o)
					if err != nil || !handled {
						t.Fatalf("handled %v, err %v", handled, err)
					}
					if want := wholeImage(t, codecID, dstID, data, o); !bytes.Equal(out.Bytes(), want) {
						t.Fatalf("strip resize output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
					}
				})
			}
		}
	}
}

// Through the catalog too: a PNG, PPM and TIFF made smaller come out as the whole-image path
// makes them, with the alpha warning when a translucent source goes to JPEG.
func TestStripResize_Catalog(t *testing.T) {
	c := testCatalog(convert.Limits{})
	for name, data := range stripResizeSamples(t, 300, 200) {
		codecID, _, _ := strings.Cut(name, "/")
		o := convert.Options{Width: 120}
		var out bytes.Buffer
		warns, err := c.Convert(context.Background(), codecID, "jpeg", o, convtest.WriteTemp(t, data), &out, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := wholeImage(t, codecID, "jpeg", data, o); !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: output differs from the whole-image path's", name)
		}
		alphaWarned := false
		for _, w := range warns {
			alphaWarned = alphaWarned || w.Code == convert.WarnAlphaDropped
		}
		translucent := strings.Contains(name, "rgba") || strings.Contains(name, "alpha") || strings.Contains(name, "paletted")
		if alphaWarned != translucent {
			t.Errorf("%s: alpha warning %v, want %v (%v)", name, alphaWarned, translucent, warns)
		}
	}
}

// Conversions that are not a downscale of a strip-decoded layout are left to the whole-image
// path, with nothing written: an enlargement, the same size, a 16-bit or interlaced PNG, a
// plain PPM.
func TestStripResize_NotHandled(t *testing.T) {
	rgb := encodePNGBytes(t, testimg.Photo(200, 100))
	deep := encodePNGBytes(t, testimg.Photo16(200, 100))
	for name, c := range map[string]struct {
		codec string
		data  []byte
		opts  convert.Options
	}{
		"enlarge":      {"png", rgb, convert.Options{Width: 400}},
		"same size":    {"png", rgb, convert.Options{Width: 200}},
		"no resize":    {"png", rgb, convert.Options{}},
		"fill same px": {"png", rgb, convert.Options{Width: 100, Height: 200, Fit: convert.FitFill}},
		"16-bit":       {"png", deep, convert.Options{Width: 50}},
		"plain ppm":    {"ppm", []byte("P3\n2 2\n255\n1 2 3 4 5 6 7 8 9 10 11 12\n"), convert.Options{Width: 1}},
		"maxval 1000":  {"ppm", ppmBytes(20, 20, false, 1000), convert.Options{Width: 5}},
	} {
		var out bytes.Buffer
		handled, err := runStripResize(context.Background(), t, nil, c.codec, "png", c.data, &out, c.opts)
		if handled || err != nil || out.Len() != 0 {
			t.Errorf("%s: handled %v, err %v, %d bytes written; want it left to the whole-image path", name, handled, err, out.Len())
		}
	}
}

// A corrupt file fails as on the whole-image path, even when the damage is below the rows
// a cover crop keeps: every row is decoded and the end of the file checked.
func TestStripResize_CorruptFile(t *testing.T) {
	good := encodePNGBytes(t, testimg.Photo(300, 400))
	for name, data := range map[string][]byte{
		"truncated":    good[:len(good)*2/3],
		"bad checksum": append(bytes.Clone(good[:len(good)-16]), []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 1, 2, 3, 4, 0xae, 0x42, 0x60, 0x82}...),
		"no IEND":      good[:len(good)-12],
	} {
		c := testCatalog(convert.Limits{})
		o := convert.Options{Width: 100, Height: 30, Fit: convert.FitCover} // keeps rows 125 to 275
		_, err := c.Convert(context.Background(), "png", "jpeg", o, convtest.WriteTemp(t, data), io.Discard, t.TempDir())
		var ce *convert.Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "not a valid PNG") {
			t.Errorf("%s: err = %v, want the PNG reported invalid", name, err)
		}
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		cfg, _ := ReadHeader(context.Background(), in, CodecByID("png"), convert.Limits{}.Normalized())
		_, werr := DecodePixels(context.Background(), in, CodecByID("png"), cfg)
		if werr == nil || err == nil || werr.Error() != err.Error() {
			t.Errorf("%s: err = %v, the whole-image path's %v", name, err, werr)
		}
	}
}

// The budget charges the strips, the ring and the target, not the source: under a budget
// too small for the whole-image estimate a 3000x2000 PNG -> 1500 px converts, holding exactly
// the strip resize's estimate while it writes.
func TestStripResize_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	const w, h = 3000, 2000
	png, jpg := CodecByID("png"), CodecByID("jpeg")
	whole := memoryEstimate(png, jpg, 1, w*h, w*h/4, true, false)
	strip := memoryEstimate(png, jpg, 1, 0, w*h/4, true, false) + stripResizeCost(w, h, 4, w/2, h/2, image.Rect(0, 0, w, h))
	if strip*2 > whole {
		t.Fatalf("strip estimate %d MiB is not well under the whole-image %d MiB", strip>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (strip + whole) / 2})
	src := encodeTemp(t, testimg.Photo(w, h))
	if got := budgetWhileWriting(t, c, "png", src, "jpeg", convert.Options{Width: w / 2}); got != strip {
		t.Errorf("budget in use %d while writing, want the strip estimate %d", got, strip)
	}
	// An enlargement takes the whole-image path, which the budget refuses.
	_, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{Width: w + 1}, openFile(t, src), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
		t.Errorf("enlarge: err = %v, want the budget exceeded", err)
	}
}

// A 12 MP PNG -> 800 px allocates a few MiB in all (strips, ring, target, encoder), not the
// 48 MB RGBA image the whole-image path decodes.
func TestStripResize_AllocatesStripsNotTheImage(t *testing.T) {
	atMostProcs(t, 2) // the PNG encoder's workers allocate per core
	if testing.Short() || raceEnabled {
		t.Skip("12 MP; the race detector's allocations would count too")
	}
	for _, kind := range []string{"rgb", "rgba"} {
		m := image.Image(testimg.Photo(4000, 3000))
		if kind == "rgba" {
			m = testimg.PhotoAlpha(4000, 3000)
		}
		data := encodePNGBytes(t, m)
		for _, dstID := range []string{"jpeg", "png"} {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			handled, err := runStripResize(context.Background(), t, nil, "png", dstID, data, io.Discard, convert.Options{Width: 800})
			runtime.ReadMemStats(&after)
			if !handled || err != nil {
				t.Fatalf("%s: handled %v, err %v", kind, handled, err)
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(12<<20); got > limit {
				t.Errorf("%s 4000x3000 -> 800 px %s: %.1f MiB allocated, want under %d MiB", kind, dstID, float64(got)/(1<<20), limit>>20)
			} else {
				t.Logf("%s 4000x3000 -> 800 px %s: %.1f MiB allocated", kind, dstID, float64(got)/(1<<20))
			}
		}
	}
}

// cancelAtOffset is input that cancels a context once a read reaches an offset: a client
// gone in the middle of the upload's decode.
type cancelAtOffset struct {
	r      io.ReaderAt
	at     int64
	cancel context.CancelFunc
}

func (c cancelAtOffset) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) >= c.at {
		c.cancel()
	}
	return c.r.ReadAt(p, off)
}

// Cancelled in the middle of the decode, the resize returns the context's error without
// reading on to the end, and leaves no goroutine behind.
func TestStripResize_CancelMidStream(t *testing.T) {
	w, h := 2000, 1500
	if testing.Short() {
		w, h = 1000, 750 // the race run: the 2000x1500 PNG took 34 s under -race -short at a load of 16-18
	}
	data := encodePNGBytes(t, testimg.Photo(w, h))
	for _, at := range []int64{int64(len(data)) / 3, int64(len(data)) * 2 / 3} {
		checkGoroutines(t)
		ctx, cancel := context.WithCancel(context.Background())
		in := io.NewSectionReader(cancelAtOffset{bytes.NewReader(data), at, cancel}, 0, int64(len(data)))
		codec := CodecByID("png")
		cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		start := time.Now()
		handled, err := stripResizeOpts(ctx, testCatalog(convert.Limits{}), in, &out, codec, CodecByID("jpeg"), cfg, convert.Options{Width: 200})
		if !handled || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled at %d of %d bytes: handled %v, err %v", at, len(data), handled, err)
		}
		if out.Len() != 0 {
			t.Errorf("cancelled at %d: %d bytes written", at, out.Len())
		}
		if d := time.Since(start); d > testtime.Scale(30*time.Second) {
			t.Errorf("cancelled at %d: returned after %v", at, d)
		}
		cancel()
	}
}

// BenchmarkResize12MPPNG compares, for a 4000x3000 RGB PNG -> 800 px JPEG, the strip resize
// with the whole-image path (decode, Resize, encode).
func BenchmarkResize12MPPNG(b *testing.B) {
	data := encodePNGBytes(b, testimg.Photo(4000, 3000))
	o := convert.Options{Width: 800}
	b.Run("strips", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if handled, err := runStripResize(context.Background(), b, nil, "png", "jpeg", data, io.Discard, o); !handled || err != nil {
				b.Fatal(handled, err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			wholeImage(b, "png", "jpeg", data, o)
		}
	})
}

// stripResizeOpts runs stripResize as imageRun does for an input without orientation or
// metadata: the geometry of opts, and a plain encode after resampling.
func stripResizeOpts(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, opts convert.Options) (bool, error) {
	g, err := planGeometry(cfg.Width, cfg.Height, 1, opts)
	if err != nil {
		return true, err
	}
	return stripResize(ctx, c, in, out, src, dst, cfg, g, opts, 0, nil, func(ctx context.Context, w io.Writer, img image.Image) error {
		return dst.Encode(ctx, w, img, opts)
	})
}
