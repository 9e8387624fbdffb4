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

// runToPNG converts a file of the codec codecID with streamToPNG after ReadHeader, as
// imageRun does, under an unlimited budget.
func runToPNG(ctx context.Context, t testing.TB, codecID string, data []byte, w io.Writer) (bool, error) {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID(codecID)
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	return streamToPNG(ctx, testCatalog(convert.Limits{}), in, w, codec, CodecByID("png"), cfg, convert.Options{}, nil)
}

// toPNGSamples are the files streamToPNG streams at w x h: binary PPM and PGM, and the TIFFs
// of tiffSamples without an alpha channel (tiffenc's gray and RGB, x/image/tiff's gray,
// deflate and uncompressed; x/image/tiff stores an RGBA image's alpha even when opaque).
func toPNGSamples(t testing.TB, w, h int) map[string][]byte {
	out := map[string][]byte{
		fmt.Sprintf("ppm-%dx%d", w, h): ppmBytes(w, h, false, 255),
		fmt.Sprintf("pgm-%dx%d", w, h): ppmBytes(w, h, true, 255),
	}
	for name, data := range tiffSamples(t, w, h) {
		if strings.HasPrefix(name, "tiffenc-") && !strings.Contains(name, "rgba") || strings.Contains(name, "-gray-") {
			out[name] = data
		}
	}
	return out
}

// codecOfSample is the codec id of a toPNGSamples name.
func codecOfSample(name string) string {
	if strings.HasPrefix(name, "ppm") || strings.HasPrefix(name, "pgm") {
		return "ppm"
	}
	return "tiff"
}

// The streamed PPM/PGM/TIFF -> PNG writes the whole-image path's bytes exactly, for gray and
// RGB, at sizes of one strip and one band, of many, with short last strips and bands, and
// for rows wider than a strip's bytes.
func TestStreamToPNG_SameBytesAsWholeImage(t *testing.T) {
	samples := map[string][]byte{}
	for _, sz := range shortSizes(image.Pt(1, 1), image.Pt(300, 300), image.Pt(1000, 517), image.Pt(257, 2000), image.Pt(90000, 3)) {
		for name, data := range toPNGSamples(t, sz.X, sz.Y) {
			samples[name] = data
		}
	}
	for name, data := range samples {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			var out bytes.Buffer
			handled, err := runToPNG(context.Background(), t, codecOfSample(name), data, &out)
			if err != nil || !handled {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			if want := wholeImage(t, codecOfSample(name), "png", data, convert.Options{}); !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
			}
		})
	}
}

// Through the catalog, TIFF and PPM -> PNG stream (the budget holds the stream estimate) and
// write the whole-image path's bytes.
func TestStreamToPNG_ThroughCatalog(t *testing.T) {
	const w, h = 640, 480
	for name, data := range map[string][]byte{"ppm": ppmBytes(w, h, false, 255), "tiff": tiffRGBSample(t, w, h)} {
		c := testCatalog(convert.Limits{})
		var out bytes.Buffer
		if _, err := c.Convert(context.Background(), name, "png", convert.Options{}, openFile(t, convtest.WriteTemp(t, data).Name()), &out, t.TempDir()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := wholeImage(t, name, "png", data, convert.Options{}); !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: catalog output (%d bytes) differs from the whole-image path's (%d bytes)", name, out.Len(), len(want))
		}
	}
}

// Files the strip decoders leave to the whole-image path, and TIFFs with an alpha channel
// (whose PNG is RGB or RGBA depending on every pixel), are not streamed: handled is false and
// nothing is written.
func TestStreamToPNG_OthersFallBack(t *testing.T) {
	rgba := tiffSamples(t, 100, 50)
	cases := map[string]struct {
		codec string
		data  []byte
	}{
		"ppm maxval 1000":   {"ppm", ppmBytes(100, 50, false, 1000)},
		"tiffenc rgba":      {"tiff", rgba["tiffenc-rgba-100x50"]},
		"x/image/tiff rgba": {"tiff", rgba["ximage-c1-ptrue-rgba-100x50"]},
		"x/image/tiff opaque rgb, stored with alpha": {"tiff", rgba["ximage-c0-pfalse-rgb-100x50"]},
	}
	for name, tc := range cases {
		if tc.data == nil {
			t.Fatalf("%s: no sample", name)
		}
		var out bytes.Buffer
		handled, err := runToPNG(context.Background(), t, tc.codec, tc.data, &out)
		if handled || err != nil || out.Len() != 0 {
			t.Errorf("%s: handled %v, err %v, %d bytes written; want not handled, nothing written", name, handled, err, out.Len())
		}
	}
}

// The budget charges a streamed TIFF or PPM -> PNG its strip and the encoder's bands: under a
// budget too small for the whole-image estimate it streams, holding exactly the stream
// estimate, while a resize and a TIFF with alpha, which do not stream, are refused.
func TestStreamToPNG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h = 3000, 2000
	var tb bytes.Buffer
	if err := encodeTIFF(context.Background(), &tb, testimg.Photo(w, h), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	var ab bytes.Buffer
	if err := encodeTIFF(context.Background(), &ab, testimg.PhotoAlpha(w, h), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"tiff": convtest.WriteTemp(t, tb.Bytes()).Name(),
		"ppm":  convtest.WriteTemp(t, ppmBytes(w, h, false, 255)).Name(),
	}
	alphaTIFF := convtest.WriteTemp(t, ab.Bytes()).Name()
	for _, from := range []string{"tiff", "ppm"} {
		whole := memoryEstimate(CodecByID(from), CodecByID("png"), 1, w*h, w*h, false, false)
		stream := BaseConversionMemory + streamPNGCost(image.Rect(0, 0, w, h), false, 4)
		if stream*2 > whole {
			t.Fatalf("%s: stream estimate %d MiB is not well under the whole-image %d MiB", from, stream>>20, whole>>20)
		}
		c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})

		if got := budgetWhileWriting(t, c, from, files[from], "png", convert.Options{}); got != stream {
			t.Errorf("%s: budget in use %d while streaming, want the stream estimate %d", from, got, stream)
		}

		refused := map[string]func() error{
			// An enlargement: a reduction streams too (stripResize), under its own estimate.
			"resize": func() error {
				_, err := c.Convert(context.Background(), from, "png", convert.Options{Width: w + 1}, openFile(t, files[from]), io.Discard, t.TempDir())
				return err
			},
		}
		if from == "tiff" {
			refused["alpha"] = func() error {
				_, err := c.Convert(context.Background(), "tiff", "png", convert.Options{}, openFile(t, alphaTIFF), io.Discard, t.TempDir())
				return err
			}
		}
		for name, run := range refused {
			err := run()
			var ce *convert.Error
			if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
				t.Errorf("%s %s: err = %v, want the budget exceeded", from, name, err)
			}
			if got, _ := c.MemoryUse(); got != 0 {
				t.Errorf("%s %s: budget in use %d after the refusal", from, name, got)
			}
		}
	}
}

// The streamed conversion allocates a small fraction of the image: a 12 MP RGB TIFF (as
// convsvc writes it) or PPM, which the whole-image path decodes to a 48 MB RGBA image,
// converts with under 32 MB allocated in all (the strip buffer, the encoder's bands and
// their deflated copies, the deflaters), whatever the machine's load.
func TestStreamToPNG_AllocatesStripsNotTheImage(t *testing.T) {
	atMostProcs(t, 2)
	if testing.Short() {
		t.Skip("12 MP")
	}
	var tb bytes.Buffer
	if err := encodeTIFF(context.Background(), &tb, testimg.Photo(4000, 3000), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"tiff", "ppm"} {
		data := tb.Bytes()
		if from == "ppm" {
			data = ppmBytes(4000, 3000, false, 255)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		handled, err := runToPNG(context.Background(), t, from, data, io.Discard)
		runtime.ReadMemStats(&after)
		if !handled || err != nil {
			t.Fatalf("%s: handled %v, err %v", from, handled, err)
		}
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s 4000x3000: %.1f MiB allocated", from, float64(got)/(1<<20))
		if got > 32<<20 {
			t.Errorf("%s 4000x3000: %d MiB allocated, want under 32 MiB", from, got>>20)
		}
	}
}

// cancelWriter keeps what is written and cancels its context once it holds at least after
// bytes (from the writer goroutine of the encoder, mid-stream).
type cancelWriter struct {
	bytes.Buffer
	after  int
	cancel context.CancelFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if w.Len() >= w.after {
		w.cancel()
	}
	return n, err
}

// A conversion cancelled mid-stream returns the context's error, writes nothing after the
// cancellation, does not end the PNG, and leaves no goroutine behind.
func TestStreamToPNG_CancelMidStream(t *testing.T) {
	width, height := 2000, 1500
	if testing.Short() {
		// The race run: a PNG of over 1 MB still, cancelled at 300 KiB (2000x1500 took 22 s
		// under -race -short at a load of 16-18).
		width, height = 1000, 750
	}
	for name, data := range map[string][]byte{"ppm": ppmBytes(width, height, false, 255), "tiff": tiffRGBSample(t, width, height)} {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &cancelWriter{after: 300 << 10, cancel: cancel}
			done := make(chan error, 1)
			go func() {
				handled, err := runToPNG(ctx, t, name, data, w)
				if !handled {
					err = fmt.Errorf("not handled (%v)", err)
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(testtime.Scale(2 * time.Minute)):
				t.Fatal("the cancelled conversion did not return")
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			// The writes after the cancel are refused (ContextWriter): what was written is
			// the write that crossed the threshold at most.
			if w.Len() < w.after || w.Len() >= w.after+(300<<10) {
				t.Errorf("%d bytes written, want the write that crossed %d and no more", w.Len(), w.after)
			}
			if bytes.Contains(w.Bytes(), []byte("IEND")) {
				t.Error("a cancelled PNG was ended with IEND")
			}
		})
	}
}

// failWriter takes ok bytes, then fails every write with errDisk.
type failWriter struct {
	ok, n int
}

var errDisk = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.ok {
		return 0, errDisk
	}
	w.n += len(p)
	return len(p), nil
}

// An output write error, in the PNG header or mid-stream, is what the conversion returns,
// and no goroutine is left behind.
func TestStreamToPNG_WriteErrorSurfaces(t *testing.T) {
	data := ppmBytes(2000, 1500, false, 255)
	for _, ok := range []int{0, 10, 600 << 10} {
		t.Run(fmt.Sprint(ok), func(t *testing.T) {
			checkGoroutines(t)
			handled, err := runToPNG(context.Background(), t, "ppm", data, &failWriter{ok: ok})
			if !handled || !errors.Is(err, errDisk) {
				t.Fatalf("handled %v, err %v; want %v", handled, err, errDisk)
			}
		})
	}
}

// A file cut short in its raster fails as the whole-image path fails (truncated), without an
// ended PNG and without goroutines left behind.
func TestStreamToPNG_Truncated(t *testing.T) {
	tif := tiffRGBSample(t, 1000, 800)
	for name, tc := range map[string]struct {
		codec string
		data  []byte
	}{
		"ppm":  {"ppm", ppmBytes(1000, 800, false, 255)},
		"tiff": {"tiff", tif},
	} {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			data := tc.data[:len(tc.data)*2/3]
			var out bytes.Buffer
			handled, err := runToPNG(context.Background(), t, tc.codec, data, &out)
			var ce *convert.Error
			if !handled || !errors.As(err, &ce) || !strings.Contains(ce.Message, "input is not a valid") {
				t.Fatalf("handled %v, err %v; want the input reported invalid", handled, err)
			}
			if bytes.Contains(out.Bytes(), []byte("IEND")) {
				t.Error("the PNG of a truncated input was ended with IEND")
			}
		})
	}
}

// BenchmarkStreamToPNG12MP is a 12 MP TIFF (convsvc's own: deflate, predictor) and PPM to PNG
// through streamToPNG ("stream") and through the whole-image path it replaces ("whole":
// DecodePixels, then encodePNG); with -benchmem, B/op shows the image is no longer allocated.
func BenchmarkStreamToPNG12MP(b *testing.B) {
	var tb bytes.Buffer
	if err := encodeTIFF(context.Background(), &tb, testimg.Photo(4000, 3000), convert.Options{}); err != nil {
		b.Fatal(err)
	}
	for _, from := range []string{"tiff", "ppm"} {
		data := tb.Bytes()
		if from == "ppm" {
			data = ppmBytes(4000, 3000, false, 255)
		}
		b.Run(from+"/stream", func(b *testing.B) {
			b.SetBytes(4000 * 3000 * 3)
			b.ReportAllocs()
			for range b.N {
				if handled, err := runToPNG(context.Background(), b, from, data, io.Discard); !handled || err != nil {
					b.Fatalf("handled %v, err %v", handled, err)
				}
			}
		})
		b.Run(from+"/whole", func(b *testing.B) {
			b.SetBytes(4000 * 3000 * 3)
			b.ReportAllocs()
			for range b.N {
				in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
				codec := CodecByID(from)
				cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
				if err != nil {
					b.Fatal(err)
				}
				img, err := DecodePixels(context.Background(), in, codec, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := encodePNG(context.Background(), io.Discard, img, convert.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
