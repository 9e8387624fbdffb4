package image

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/cputime"
)

// TestImageProgress_PhaseCPU measures each codec's decode and encode CPU per pixel on a
// 2000x1500 photo-like image, the phase weights of progress.go (decodeNsPerPixel,
// encodeNsPerPixel). It runs only with CONVSVC_MEASURE=1:
//
//	CONVSVC_MEASURE=1 go test -run TestImageProgress_PhaseCPU -v ./convert/image/
func TestImageProgress_PhaseCPU(t *testing.T) {
	if os.Getenv("CONVSVC_MEASURE") == "" {
		t.Skip("set CONVSVC_MEASURE=1 to measure the codecs' CPU per pixel")
	}
	const w, h = 2000, 1500
	src := testimg.Photo(w, h)
	ctx := context.Background()
	cpu := func(f func() error) time.Duration {
		runtime.GC()
		best := time.Duration(1 << 62)
		for range 3 {
			start := cputime.Self()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			best = min(best, cputime.Self()-start)
		}
		return best
	}
	for i := range Codecs {
		c := &Codecs[i]
		if c.Encode == nil || c.ID == "ico" { // ico: at most 256x256
			continue
		}
		var enc []byte
		ens := cpu(func() error {
			var b bytes.Buffer
			err := c.Encode(ctx, &b, src, convert.Options{})
			enc = b.Bytes()
			return err
		})
		in := io.NewSectionReader(bytes.NewReader(enc), 0, int64(len(enc)))
		cfg, err := ReadHeader(ctx, in, c, convert.Limits{}.Normalized())
		if err != nil {
			t.Fatal(err)
		}
		dns := cpu(func() error { _, err := DecodePixels(ctx, in, c, cfg); return err })
		px := float64(w * h)
		fmt.Printf("%s\tdecode %.1f ns/px\tencode %.1f ns/px\n", c.ID, float64(dns)/px, float64(ens)/px)
	}
}

// noisyFile encodes a w x h image of gradients under strong noise as PNG or JPEG (at quality
// 100): it compresses badly, so a small image is several of the decoder's 64 KiB reads, and
// cheaply made (testimg.Photo's Gaussian noise takes seconds under -race).
func noisyFile(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := 0; i < len(m.Pix); i += 4 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p := i / 4
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = uint8(p%w)+uint8(x&63), uint8(p/w)+uint8(x>>8&63), uint8(x>>16), 0xff
	}
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, m)
	} else {
		err = jpeg.Encode(&b, m, &jpeg.Options{Quality: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImageProgress_DecodeThenRows: real conversions through the catalog report their
// progress from the input's bytes decoded, then from the output's rows encoded, each phase
// within its share (phaseShares); a strip-at-a-time stream counts across the whole. Every
// sequence starts at 0 and strictly grows.
func TestImageProgress_DecodeThenRows(t *testing.T) {
	c := testCatalog(convert.Limits{})
	start := time.Now()
	jpg := noisyFile(t, "jpeg", 320, 256)
	pngIn := noisyFile(t, "png", 320, 256)
	t.Logf("inputs in %v", time.Since(start))
	share := func(from, to string) float64 {
		return phaseShares(CodecByID(from), CodecByID(to), 1, 1)
	}
	for _, tc := range []struct {
		from, to string
		in       []byte
		// want: at least n values in each of these ranges
		n      int
		ranges [][2]float64
	}{
		// image/jpeg's decode by the bytes it reads, pngenc's bands by rows.
		{"jpeg", "png", jpg, 2, [][2]float64{{0, share("jpeg", "png")}, {share("jpeg", "png"), 1}}},
		// (GIF's dithered rows: TestProgress_ConvertersCount in service, slow under -race here.)
		// tiffenc's strips.
		{"jpeg", "tiff", jpg, 2, [][2]float64{{0, share("jpeg", "tiff")}, {share("jpeg", "tiff"), 1}}},
		// pngstream's strips into jpegstrip's: the input read and the rows written, across the whole.
		{"png", "jpeg", pngIn, 1, [][2]float64{{0, 0.5}, {0.5, 1}}},
	} {
		start := time.Now()
		got := convtest.Progress(t, c, tc.from, tc.to, convert.Options{}, tc.in)
		t.Logf("%s -> %s: %d reports %v in %v", tc.from, tc.to, len(got), got, time.Since(start))
		convtest.CheckProgress(t, tc.from+" -> "+tc.to, got, tc.n, tc.ranges...)
	}
}

// TestImageProgress_AVIFBands: an AVIF encoded as a grid of bands (one instance a core) counts
// each band as it ends, so a PNG made AVIF moves inside its encode's 97%, not from its decode's
// end straight to 1.
func TestImageProgress_AVIFBands(t *testing.T) {
	if testing.Short() {
		t.Skip("AVIF encodes")
	}
	if avifTiles < 2 {
		t.Skip("one core: no bands")
	}
	const w, h = 1024, 512 // two bands of a quarter megapixel
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = uint8(i/4%w/4), uint8(i/4/w/2), 0x80, 0xff
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	got := convtest.Progress(t, testCatalog(convert.Limits{}), "png", "avif", convert.Options{}, b.Bytes())
	t.Logf("png -> avif: %v", got)
	s := phaseShares(CodecByID("png"), CodecByID("avif"), 1, 1)
	convtest.CheckProgress(t, "png -> avif", got, 1, [2]float64{s, 1}) // the first band's end
}
