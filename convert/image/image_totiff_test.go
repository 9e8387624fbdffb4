package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/convert/internal/tiffenc"
)

// runToTIFF runs streamToTIFF on data (of the codec codecID) after ReadHeader, as
// imageRun does, under an unlimited budget, with a scratch directory of its own that must be
// empty once it returned; losses counts the calls of its callback.
func runToTIFF(ctx context.Context, t testing.TB, codecID string, data []byte, w io.Writer, losses *int) (bool, error) {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	return runToTIFFFrom(ctx, t, codecID, in, w, losses)
}

func runToTIFFFrom(ctx context.Context, t testing.TB, codecID string, in *io.SectionReader, w io.Writer, losses *int) (bool, error) {
	t.Helper()
	scratch := t.TempDir()
	defer func() {
		if left := listDir(t, scratch); len(left) != 0 {
			t.Errorf("left in the scratch directory: %v", left)
		}
	}()
	return runToTIFFIn(ctx, t, codecID, in, w, losses, scratch)
}

// listDir returns the names in dir.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// runToTIFFIn is runToTIFFFrom with the scratch directory scratch.
func runToTIFFIn(ctx context.Context, t testing.TB, codecID string, in *io.SectionReader, w io.Writer, losses *int, scratch string) (bool, error) {
	t.Helper()
	codec := CodecByID(codecID)
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	count := func() {
		if losses != nil {
			*losses++
		}
	}
	return streamToTIFF(ctx, testCatalog(convert.Limits{}), in, w, codec, CodecByID("tiff"), cfg, convert.Options{}, scratch, count)
}

// graphicsImage is an RGB image of flat rectangles, which tiffenc compresses with its
// graphics options (tiffenc.ErrFlat on the streamed path's first pass).
func graphicsImage(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(m, m.Rect, &image.Uniform{color.RGBA{200, 30, 40, 255}}, image.Point{}, draw.Src)
	for i := range 12 {
		r := image.Rect(i*w/13, i*h/17, i*w/13+w/4, i*h/17+h/5)
		draw.Draw(m, r, &image.Uniform{color.RGBA{uint8(20 * i), uint8(255 - 20*i), 90, 255}}, image.Point{}, draw.Src)
	}
	return m
}

// toTIFFSamples are the sources that stream to TIFF: RGB and gray PNG photos, an RGB PNG of
// graphics, binary PPM and PGM.
func toTIFFSamples(t testing.TB, w, h int) map[string][]byte {
	photo := testimg.Photo(w, h)
	rgb := image.NewRGBA(photo.Rect)
	draw.Draw(rgb, rgb.Rect, photo, image.Point{}, draw.Src)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	return map[string][]byte{
		fmt.Sprintf("png-rgb-%dx%d", w, h):      encodePNGBytes(t, rgb),
		fmt.Sprintf("png-gray-%dx%d", w, h):     encodePNGBytes(t, gray),
		fmt.Sprintf("png-graphics-%dx%d", w, h): encodePNGBytes(t, graphicsImage(w, h)),
		fmt.Sprintf("ppm-rgb-%dx%d", w, h):      ppmBytes(w, h, false, 255),
		fmt.Sprintf("ppm-gray-%dx%d", w, h):     ppmBytes(w, h, true, 255),
	}
}

// The streamed PNG/PPM/PGM -> TIFF writes the whole-image path's bytes exactly (photos and
// graphics, which take a second pass with tiffenc's graphics options), at sizes of one
// decoded strip, many, and a short last strip; the input's losses are reported once. Through
// the catalog the output is the same.
func TestStreamToTIFF_SameBytesAsWholeImage(t *testing.T) {
	samples := map[string][]byte{}
	for _, sz := range shortSizes(image.Pt(300, 300), image.Pt(1000, 517), image.Pt(257, 2000)) {
		for name, data := range toTIFFSamples(t, sz.X, sz.Y) {
			samples[name] = data
		}
	}
	for name, data := range samples {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			codecID := name[:3]
			var out bytes.Buffer
			losses := 0
			handled, err := runToTIFF(context.Background(), t, codecID, data, &out, &losses)
			if err != nil || !handled {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			want := wholeImage(t, codecID, "tiff", data, convert.Options{})
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
			}
			if losses != 1 {
				t.Errorf("losses reported %d times, want 1", losses)
			}
			if strings.Contains(name, "graphics") {
				// Graphics: the streamed path must have redone the rows with the graphics
				// options, which give other bytes than the photo ones.
				in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
				cfg, err := ReadHeader(context.Background(), in, CodecByID(codecID), convert.Limits{}.Normalized())
				if err != nil {
					t.Fatal(err)
				}
				img, err := DecodePixels(context.Background(), in, CodecByID(codecID), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var photo bytes.Buffer
				o := tiffenc.ChosenOptions(false)
				if err := tiffenc.Encode(context.Background(), &photo, img, &o); err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(photo.Bytes(), want) {
					t.Fatal("the graphics sample is encoded with the photo options: the second pass goes untested")
				}
			}
			var viaCatalog bytes.Buffer
			if _, err := testCatalog(convert.Limits{}).Convert(context.Background(), codecID, "tiff", convert.Options{}, openFile(t, convtest.WriteTemp(t, data).Name()), &viaCatalog, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(viaCatalog.Bytes(), want) {
				t.Fatalf("Convert's output (%d bytes) differs from the whole-image path's (%d bytes)", viaCatalog.Len(), len(want))
			}
		})
	}
}

// Sources whose TIFF bytes the stream cannot promise are left to the whole-image path, with
// nothing written: alpha (RGBA, gray+alpha, a truecolor tRNS), palettes, 16 bits, a resize,
// a small image.
func TestStreamToTIFF_FallsBack(t *testing.T) {
	const w, h = 300, 300
	photo := testimg.Photo(w, h)
	rgbRows := make([]byte, 3*w*h)
	for i := range w * h {
		copy(rgbRows[3*i:], photo.Pix[4*i:4*i+3])
	}
	samples := pipelineSamplesAt(t, w, h)
	for name, data := range map[string][]byte{
		"rgba":        samples["rgba-300x300"],
		"grayalpha":   samples["grayalpha-300x300"],
		"paletted":    samples["paletted-300x300"],
		"trns":        rawPNG(t, w, h, 2, rgbRows, nil, []byte{0, 1, 0, 2, 0, 3}),
		"16-bit":      encodePNGBytes(t, image.NewGray16(image.Rect(0, 0, w, h))),
		"small":       encodePNGBytes(t, testimg.Photo(200, 200)),
		"ppm 16-bit":  ppmBytes(w, h, false, 65535),
		"plain ppm":   []byte("P3 300 300 255\n" + strings.Repeat("1 2 3\n", w*h)),
		"small ppm":   ppmBytes(10, 10, false, 255),
		"png resized": nil,
	} {
		codecID := "png"
		if strings.Contains(name, "ppm") {
			codecID = "ppm"
		}
		var out bytes.Buffer
		var handled bool
		var err error
		if data == nil {
			data = encodePNGBytes(t, photo)
			in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
			cfg, herr := ReadHeader(context.Background(), in, CodecByID("png"), convert.Limits{}.Normalized())
			if herr != nil {
				t.Fatal(herr)
			}
			handled, err = streamToTIFF(context.Background(), testCatalog(convert.Limits{}), in, &out, CodecByID("png"), CodecByID("tiff"), cfg, convert.Options{Width: w / 2}, t.TempDir(), nil)
		} else {
			handled, err = runToTIFF(context.Background(), t, codecID, data, &out, nil)
		}
		if handled || err != nil || out.Len() != 0 {
			t.Errorf("%s: handled %v, err %v, %d bytes written; want left to the whole-image path", name, handled, err, out.Len())
		}
	}
}

// The budget charges a streamed conversion its strips and the compressed output, not the
// image: under a budget too small for the whole-image estimate a PNG -> TIFF streams, holding
// exactly the stream estimate while it writes, while a resize is refused for the budget.
func TestStreamToTIFF_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	const w, h = 3000, 2000
	png, tif := CodecByID("png"), CodecByID("tiff")
	whole := memoryEstimate(png, tif, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamTIFFCost(image.Rect(0, 0, w, h), false)
	// 0.40x on 2 cores, about 0.5x from 4 (tiffStreamWorkers' raw strips and deflate states).
	if stream*3 > whole*2 {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	src := encodeTemp(t, testimg.Photo(w, h))

	if got := budgetWhileWriting(t, c, "png", src, "tiff", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the stream estimate %d", got, stream)
	}

	_, err := c.Convert(context.Background(), "png", "tiff", convert.Options{Width: w - 1}, openFile(t, src), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
		t.Errorf("resize: err = %v, want the budget exceeded", err)
	}
	if got, _ := c.MemoryUse(); got != 0 {
		t.Errorf("resize: budget in use %d after the refusal", got)
	}
}

// countingDiscard counts what is written to it.
type countingDiscard struct{ n int64 }

func (w *countingDiscard) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// The streamed conversion allocates a few strips, not the image nor the output: a 12 MP RGB
// PNG, which the whole-image path decodes to a 48 MB RGBA image (144 MB allocated in all),
// converts to a 27 MB TIFF with under 24 MiB allocated in all, whatever the number of cores
// (up to 4 workers, each with its deflate state and output buffer, 6 raw strips, the 4 MiB
// of compressed strips held before they spill to the scratch file (tiffenc.SpillThreshold), and the buffers reused
// for those held while spilling).
func TestStreamToTIFF_AllocatesStripsNotTheImage(t *testing.T) {
	if testing.Short() {
		t.Skip("12 MP")
	}
	photo := testimg.Photo(4000, 3000)
	rgb := image.NewRGBA(photo.Rect)
	draw.Draw(rgb, rgb.Rect, photo, image.Point{}, draw.Src)
	data := encodePNGBytes(t, rgb)
	photo, rgb = nil, nil
	var out countingDiscard
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	handled, err := runToTIFF(context.Background(), t, "png", data, &out, nil)
	runtime.ReadMemStats(&after)
	if !handled || err != nil {
		t.Fatalf("handled %v, err %v", handled, err)
	}
	if out.n < 2*tiffSpillThreshold {
		t.Fatalf("a %d MiB TIFF: too small to spill much", out.n>>20)
	}
	const limit = 24 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("4000x3000: %d MiB allocated for a %d MiB TIFF, want under %d MiB", got>>20, out.n>>20, limit>>20)
	}
	t.Logf("4000x3000: %.1f MiB allocated for a %.1f MiB TIFF", float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(out.n)/(1<<20))
}

// forceSpill makes toTIFF spill every compressed strip for the rest of the test.
func forceSpill(t testing.TB) {
	old := tiffSpillThreshold
	tiffSpillThreshold = 0
	t.Cleanup(func() { tiffSpillThreshold = old })
}

// listAtWrite is an output that lists dir at its first write (the header, written once every
// strip is compressed and spilled).
type listAtWrite struct {
	t    testing.TB
	dir  string
	seen []string
	once bool
	bytes.Buffer
}

func (w *listAtWrite) Write(p []byte) (int, error) {
	if !w.once {
		w.once = true
		w.seen = listDir(w.t, w.dir)
	}
	return w.Buffer.Write(p)
}

// With every strip spilled, the conversion writes the whole-image path's bytes (photos, and
// graphics, whose photo pass spilled before ErrFlat) from one spill file in the scratch
// directory (created when missing), there when the output is written and gone once the
// conversion returned. Through the catalog the spill goes to Convert's scratchDir.
func TestStreamToTIFF_SpillsToScratch(t *testing.T) {
	forceSpill(t)
	w := 1000
	if testing.Short() {
		w = 300 // every strip spills at any size; under -race -short 1000x517 took 24 s at a load of 16-18
	}
	for name, data := range toTIFFSamples(t, w, 517) {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			codecID := name[:3]
			want := wholeImage(t, codecID, "tiff", data, convert.Options{})
			scratch := filepath.Join(t.TempDir(), "missing")
			out := &listAtWrite{t: t, dir: scratch}
			in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
			if handled, err := runToTIFFIn(context.Background(), t, codecID, in, out, nil, scratch); !handled || err != nil {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
			}
			if len(out.seen) != 1 || !strings.HasPrefix(out.seen[0], "tiff-strips-") {
				t.Errorf("scratch directory at the first write: %v, want one tiff-strips-* file", out.seen)
			}
			if left := listDir(t, scratch); len(left) != 0 {
				t.Errorf("left in the scratch directory: %v", left)
			}

			scratch = t.TempDir()
			out = &listAtWrite{t: t, dir: scratch}
			if _, err := testCatalog(convert.Limits{}).Convert(context.Background(), codecID, "tiff", convert.Options{}, openFile(t, convtest.WriteTemp(t, data).Name()), out, scratch); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("Convert's output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
			}
			// (runStep's 64 KiB buffer holds a smaller output until the converter returned.)
			if len(want) > 64<<10 && (len(out.seen) != 1 || !strings.HasPrefix(out.seen[0], "tiff-strips-")) {
				t.Errorf("Convert's scratch directory at the first write: %v, want one tiff-strips-* file", out.seen)
			}
			if left := listDir(t, scratch); len(left) != 0 {
				t.Errorf("left in Convert's scratch directory: %v", left)
			}
		})
	}
}

// A scratch directory where the spill cannot be made (its path goes through a file) fails the
// conversion with an error that says so, wrapping the file system's, and writes nothing;
// through the catalog too.
func TestStreamToTIFF_ScratchNotWritable(t *testing.T) {
	forceSpill(t)
	data := ppmBytes(800, 300, false, 255)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(notDir, "scratch")
	const msg = "could not write a temporary file in the scratch directory"
	var out bytes.Buffer
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	_, err := runToTIFFIn(context.Background(), t, "ppm", in, &out, nil, scratch)
	var ce *convert.Error
	if !errors.As(err, &ce) || ce.Message != msg || !errors.Is(err, syscall.ENOTDIR) || out.Len() != 0 {
		t.Fatalf("got %v with %d bytes written, want %q wrapping ENOTDIR", err, out.Len(), msg)
	}
	_, err = testCatalog(convert.Limits{}).Convert(context.Background(), "ppm", "tiff", convert.Options{}, openFile(t, convtest.WriteTemp(t, data).Name()), &out, scratch)
	if !errors.As(err, &ce) || ce.Message != msg || out.Len() != 0 {
		t.Fatalf("Convert: got %v with %d bytes written, want %q", err, out.Len(), msg)
	}
}

// cancelAfterReader cancels a context once n bytes of the input have been read.
type cancelAfterReader struct {
	r      io.ReaderAt
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfterReader) ReadAt(p []byte, off int64) (int, error) {
	if c.n.Add(-int64(len(p))) < 0 {
		c.cancel()
	}
	return c.r.ReadAt(p, off)
}

// Cancelled before or in the middle of the rows (the input read half way), the conversion
// returns the context's error with nothing written and no goroutine left; an output that
// fails at any write, the error; a truncated file, the invalid-input error. Every strip is
// spilled, and the spill file is gone from the scratch directory in every case.
func TestStreamToTIFF_StopsCleanly(t *testing.T) {
	forceSpill(t) // and runToTIFF checks that the spill file is gone whatever happened
	rgb := image.NewRGBA(image.Rect(0, 0, 800, 900))
	draw.Draw(rgb, rgb.Rect, testimg.Photo(800, 900), image.Point{}, draw.Src)
	data := encodePNGBytes(t, rgb)
	t.Run("cancelled before", func(t *testing.T) {
		checkGoroutines(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := runToTIFF(ctx, t, "png", data, io.Discard, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	for _, codecID := range []string{"png", "ppm"} {
		t.Run("cancelled while running "+codecID, func(t *testing.T) {
			checkGoroutines(t)
			data := data
			if codecID == "ppm" {
				data = ppmBytes(800, 900, false, 255)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cr := &cancelAfterReader{r: bytes.NewReader(data), cancel: cancel}
			cr.n.Store(int64(len(data) / 2))
			var out bytes.Buffer
			_, err := runToTIFFFrom(ctx, t, codecID, io.NewSectionReader(cr, 0, int64(len(data))), &out, nil)
			if !errors.Is(err, context.Canceled) || out.Len() != 0 {
				t.Fatalf("got %v with %d bytes written", err, out.Len())
			}
		})
	}
	t.Run("output fails", func(t *testing.T) {
		checkGoroutines(t)
		for _, n := range []int{0, 1, 5, 16} {
			_, err := runToTIFF(context.Background(), t, "png", data, &errWriter{n: n}, nil)
			if err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("after %d writes: got %v", n, err)
			}
		}
	})
	t.Run("truncated", func(t *testing.T) {
		checkGoroutines(t)
		var out bytes.Buffer
		_, err := runToTIFF(context.Background(), t, "png", data[:len(data)/2], &out, nil)
		var ce *convert.Error
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "not a valid PNG file") || out.Len() != 0 {
			t.Fatalf("got %v with %d bytes written", err, out.Len())
		}
	})
}

// BenchmarkStreamPNGToTIFF is the streamed 12 MP RGB PNG -> TIFF against the whole-image path
// (DecodePixels + encodeTIFF) on the same file; run with -benchmem.
func BenchmarkStreamPNGToTIFF(b *testing.B) {
	photo := testimg.Photo(4000, 3000)
	rgb := image.NewRGBA(photo.Rect)
	draw.Draw(rgb, rgb.Rect, photo, image.Point{}, draw.Src)
	data := encodePNGBytes(b, rgb)
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rgb.Pix)))
		for b.Loop() {
			if handled, err := runToTIFF(context.Background(), b, "png", data, io.Discard, nil); !handled || err != nil {
				b.Fatal(handled, err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rgb.Pix)))
		for b.Loop() {
			wholeImage(b, "png", "tiff", data, convert.Options{})
		}
	})
}
