package image

import (
	"bytes"
	"context"
	"fmt"
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

// photoFile encodes a w x h photo-like image as format (with the codec's own encoder).
func photoFile(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, testimg.Photo(w, h))
	} else {
		err = CodecByID(format).Encode(context.Background(), &b, testimg.Photo(w, h), convert.Options{})
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
	jpg := photoFile(t, "jpeg", 1200, 900)
	pngIn := photoFile(t, "png", 512, 384)
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
		// GIF's dithered rows.
		{"jpeg", "gif", jpg, 2, [][2]float64{{0, share("jpeg", "gif")}, {share("jpeg", "gif"), 1}}},
		// tiffenc's strips.
		{"jpeg", "tiff", jpg, 2, [][2]float64{{0, share("jpeg", "tiff")}, {share("jpeg", "tiff"), 1}}},
		// pngstream's strips into jpegstrip's: the input read and the rows written, across the whole.
		{"png", "jpeg", pngIn, 3, [][2]float64{{0, 0.5}, {0.5, 1}}},
	} {
		got := convtest.Progress(t, c, tc.from, tc.to, convert.Options{}, tc.in)
		t.Logf("%s -> %s: %d reports %v", tc.from, tc.to, len(got), got)
		convtest.CheckProgress(t, tc.from+" -> "+tc.to, got, tc.n, tc.ranges...)
	}
}
