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

	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// tiffSamples are TIFFs of photo-like pixels at w x h: what convsvc writes (tiffenc: deflate
// strips, predictor on photos; RGB for opaque images, RGBA, gray), and x/image/tiff's
// uncompressed and deflate+predictor files (one strip, associated and unassociated alpha).
func tiffSamples(t testing.TB, w, h int) map[string][]byte {
	photo := testimg.Photo(w, h)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	alpha := testimg.PhotoAlpha(w, h)
	out := map[string][]byte{}
	for name, m := range map[string]image.Image{"rgb": photo, "gray": gray, "rgba": alpha} {
		var b bytes.Buffer
		if err := encodeTIFF(context.Background(), &b, m, convert.Options{}); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("tiffenc-%s-%dx%d", name, w, h)] = bytes.Clone(b.Bytes())
		for _, o := range []*tiff.Options{{Compression: tiff.Uncompressed}, {Compression: tiff.Deflate, Predictor: true}} {
			b.Reset()
			if err := tiff.Encode(&b, m, o); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("ximage-c%d-p%v-%s-%dx%d", o.Compression, o.Predictor, name, w, h)] = bytes.Clone(b.Bytes())
		}
	}
	return out
}

// tiffRGBSample is tiffSamples' "tiffenc-rgb-WxH" alone (the same bytes), for tests that use
// no other: tiffSamples encodes nine files, which at millions of pixels under the race
// detector took most of such a test's time.
func tiffRGBSample(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := encodeTIFF(context.Background(), &b, testimg.Photo(w, h), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// runTIFFPipeline converts a TIFF with tiffToJPEG after ReadHeader, as streamConvert does.
func runTIFFPipeline(ctx context.Context, t testing.TB, data []byte, w io.Writer, opts convert.Options) (bool, error) {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID("tiff")
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	return tiffToJPEG(ctx, in, w, codec, cfg, opts, nil)
}

// The streamed TIFF -> JPEG writes the whole-image path's bytes exactly for every layout
// tiffstrip reads, at one JPEG strip, at many, and with a short last strip.
func TestStreamTIFFToJPEG_SameBytesAsWholeImage(t *testing.T) {
	for _, sz := range shortSizes(image.Pt(300, 300), image.Pt(1000, 517), image.Pt(257, 2000)) {
		for name, data := range tiffSamples(t, sz.X, sz.Y) {
			for _, q := range shortQualities(0, 35) {
				t.Run(fmt.Sprintf("%s/q%d", name, q), func(t *testing.T) {
					checkGoroutines(t)
					var out bytes.Buffer
					handled, err := runTIFFPipeline(context.Background(), t, data, &out, convert.Options{Quality: q})
					if err != nil || !handled {
						t.Fatalf("handled %v, err %v", handled, err)
					}
					if want := wholeImage(t, "tiff", "jpeg", data, convert.Options{Quality: q}); !bytes.Equal(out.Bytes(), want) {
						t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
					}
				})
			}
		}
	}
}

// A 16-bit TIFF is left to the whole-image path, with nothing written.
func TestStreamTIFFToJPEG_16BitFallsBack(t *testing.T) {
	var b bytes.Buffer
	if err := tiff.Encode(&b, image.NewGray16(image.Rect(0, 0, 40, 30)), nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	handled, err := runTIFFPipeline(context.Background(), t, b.Bytes(), &out, convert.Options{})
	if handled || err != nil || out.Len() != 0 {
		t.Fatalf("handled %v, err %v, %d bytes written; want it left to the whole-image path", handled, err, out.Len())
	}
}

// Cut and corrupted TIFFs (every 97th prefix, a byte flipped every 97 bytes, in each sample
// layout) either fail with a convert.Error on both paths or convert to the same pixels: the
// streamed path never accepts what the whole-image path refuses, nor the other way round.
func TestStreamTIFFToJPEG_CutAndCorrupt(t *testing.T) {
	for name, data := range tiffSamples(t, 40, 70) {
		var inputs [][]byte
		for n := 0; n < len(data); n += 97 {
			inputs = append(inputs, data[:n])
		}
		for i := 0; i < len(data); i += 97 {
			c := bytes.Clone(data)
			c[i] ^= 0xa5
			inputs = append(inputs, c)
		}
		for _, in := range inputs {
			tiffStreamAgreesWithWhole(t, name, in)
		}
	}
}

// The budget charges a streamed TIFF -> JPEG its strips: under a budget too small for the
// whole-image estimate it streams, holding exactly the stream estimate and the strips
// inflated ahead.
func TestStreamTIFFToJPEG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h = 3000, 2000
	tif, jpg := CodecByID("tiff"), CodecByID("jpeg")
	whole := memoryEstimate(tif, jpg, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamJPEGCost(image.Rect(0, 0, w, h), false, 4)
	if stream*2 > whole {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	var b bytes.Buffer
	if err := encodeTIFF(context.Background(), &b, testimg.Photo(w, h), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	src := convtest.WriteTemp(t, b.Bytes()).Name()
	// And the strips inflated ahead (tiffstrip's Prefetch).
	extra, _ := tiffStreamExtra(io.NewSectionReader(bytes.NewReader(b.Bytes()), 0, int64(b.Len())))
	stream += extra

	if got := budgetWhileWriting(t, c, "tiff", src, "jpeg", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the stream estimate %d", got, stream)
	}
	// An enlargement converts the whole image (a reduction is resampled strip by strip).
	_, err := c.Convert(context.Background(), "tiff", "jpeg", convert.Options{Width: w + 1}, openFile(t, src), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
		t.Errorf("resize: err = %v, want the budget exceeded", err)
	}
}

// The streamed conversion allocates a small fraction of the image: a 12 MP RGB TIFF (as
// convsvc writes it), which x/image/tiff decodes to a 48 MB RGBA image, converts with under
// 16 MB allocated in all.
func TestStreamTIFFToJPEG_AllocatesStripsNotTheImage(t *testing.T) {
	if testing.Short() {
		t.Skip("12 MP")
	}
	var b bytes.Buffer
	if err := encodeTIFF(context.Background(), &b, testimg.Photo(4000, 3000), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	handled, err := runTIFFPipeline(context.Background(), t, data, io.Discard, convert.Options{})
	runtime.ReadMemStats(&after)
	if !handled || err != nil {
		t.Fatalf("handled %v, err %v", handled, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("4000x3000: %d MiB allocated, want under 16 MiB", got>>20)
	}
}

// translucent is called once for an RGBA TIFF with a pixel that is not opaque (a single one
// in the last row of a 300x2000 image), and never for opaque ones.
func TestStreamTIFFToJPEG_Translucent(t *testing.T) {
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
	encode := func(m image.Image) []byte {
		// x/image/tiff keeps 4 samples for an opaque NRGBA (tiffenc would write RGB).
		var b bytes.Buffer
		if err := tiff.Encode(&b, m, &tiff.Options{Compression: tiff.Deflate}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for name, tc := range map[string]struct {
		data []byte
		want int
	}{
		"rgb":              {encode(testimg.Photo(300, h)), 0},
		"rgba all opaque":  {encode(opaqueRGBA), 0},
		"rgba last pixel":  {encode(lastPixel), 1},
		"rgba translucent": {encode(testimg.PhotoAlpha(300, h)), 1},
	} {
		in := io.NewSectionReader(bytes.NewReader(tc.data), 0, int64(len(tc.data)))
		codec := CodecByID("tiff")
		cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		handled, err := tiffToJPEG(context.Background(), in, io.Discard, codec, cfg, convert.Options{}, func() { calls++ })
		if !handled || err != nil {
			t.Fatalf("%s: handled %v, err %v", name, handled, err)
		}
		if calls != tc.want {
			t.Errorf("%s: translucent called %d times, want %d", name, calls, tc.want)
		}
	}
}

// tiffStreamAgreesWithWhole converts in (a damaged TIFF) with tiffToJPEG and, when that streams
// it, checks it against the whole-image path: both fail, or both succeed with the same pixels
// (under jpegStripMinPixels the whole-image path writes one piece, the stream strips, so the
// bytes may differ). A streamed failure must be a convert.Error. It says whether in streamed.
func tiffStreamAgreesWithWhole(t *testing.T, name string, in []byte) bool {
	t.Helper()
	sr := io.NewSectionReader(bytes.NewReader(in), 0, int64(len(in)))
	codec := CodecByID("tiff")
	cfg, err := ReadHeader(context.Background(), sr, codec, convert.Limits{}.Normalized())
	if err != nil {
		return false
	}
	var out bytes.Buffer
	handled, err := tiffToJPEG(context.Background(), sr, &out, codec, cfg, convert.Options{}, nil)
	if !handled {
		return false
	}
	var want bytes.Buffer
	img, wantErr := DecodePixels(context.Background(), sr, codec, cfg)
	if wantErr == nil {
		wantErr = encodeJPEG(context.Background(), &want, img, convert.Options{})
	}
	var ce *convert.Error
	switch {
	case err != nil && !errors.As(err, &ce):
		t.Errorf("%s (%d bytes): %v is not a convert.Error", name, len(in), err)
	case (err == nil) != (wantErr == nil):
		t.Errorf("%s (%d bytes): streamed err %v, whole-image err %v", name, len(in), err, wantErr)
	case err == nil:
		sameDecodedJPEG(t, out.Bytes(), want.Bytes())
	}
	return true
}
