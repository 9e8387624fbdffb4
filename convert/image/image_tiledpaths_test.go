package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// Tiled TIFFs through the two strip consumers besides tiffToJPEG: streamToPNG (same size) and
// stripResize (downscales). Both charge the row of tiles (tileRowExtra) and leave a file whose
// row of tiles is over half the image to the whole-image path.

// tiledStreamCases are image and tile sizes whose row of tiles is at most half the image (so
// they stream): tiles smaller than, as tall as and taller than the strips, edge tiles on the
// right and at the bottom, a row of tiles exactly half the image.
var tiledStreamCases = []struct{ size, tile image.Point }{
	{image.Pt(1000, 517), image.Pt(256, 256)},
	{image.Pt(257, 400), image.Pt(64, 16)},
	{image.Pt(300, 300), image.Pt(16, 112)},
	{image.Pt(600, 400), image.Pt(64, 200)},
}

// A tiled TIFF without alpha streams to the whole-image path's PNG byte for byte (gray and
// RGB, uncompressed and deflate with the predictor).
func TestStreamTiledTIFFToPNG_SameBytesAsWholeImage(t *testing.T) {
	cases := tiledStreamCases
	if testing.Short() {
		// The race run skips the largest (1000x517 in 256x256 tiles); the others have edge
		// tiles on both sides and tiles smaller and taller than the strips.
		cases = cases[1:]
	}
	for _, tc := range cases {
		// Without alpha: RGBA is not streamed to PNG (TestStreamToPNG_OthersFallBack).
		for name, data := range tiledSamples(t, tc.size.X, tc.size.Y, tc.tile.X, tc.tile.Y, false) {
			t.Run(name, func(t *testing.T) {
				checkGoroutines(t)
				var out bytes.Buffer
				handled, err := runToPNG(context.Background(), t, "tiff", data, &out)
				if err != nil || !handled {
					t.Fatalf("handled %v, err %v", handled, err)
				}
				if want := wholeImage(t, "tiff", "png", data, convert.Options{}); !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("streamed PNG (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
				}
			})
		}
	}
}

// A tiled TIFF made smaller in strips (stripResize) writes exactly the whole-image path's
// output, RGBA included, for contain, cover and fill, PNG and JPEG.
func TestStripResizeTiledTIFF_SameAsWholeImage(t *testing.T) {
	opts := []convert.Options{
		{Width: 97},
		{Width: 100, Height: 100, Fit: convert.FitCover},
		{Width: 301, Height: 40, Fit: convert.FitFill},
	}
	cases := tiledStreamCases
	if testing.Short() {
		// As TestStreamTiledTIFFToPNG_SameBytesAsWholeImage: the race run leaves out 1000x517
		// (30 of the test's 75 s under -race -short at a load of 16-18).
		cases = cases[1:]
	}
	for _, tc := range cases {
		for name, data := range tiledSamples(t, tc.size.X, tc.size.Y, tc.tile.X, tc.tile.Y, true) {
			for _, o := range opts {
				for _, dstID := range shortTargets("png", "jpeg") {
					if dstID == "jpeg" && o.Fit != convert.FitCover {
						continue
					}
					t.Run(fmt.Sprintf("%s/%dx%d-%s/%s", name, o.Width, o.Height, o.Fit, dstID), func(t *testing.T) {
						checkGoroutines(t)
						var out bytes.Buffer
						handled, err := runStripResize(context.Background(), t, nil, "tiff", dstID, data, &out, o)
						if err != nil || !handled {
							t.Fatalf("handled %v, err %v", handled, err)
						}
						if want := wholeImage(t, "tiff", dstID, data, o); !bytes.Equal(out.Bytes(), want) {
							t.Fatalf("strip resize output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
						}
					})
				}
			}
		}
	}
}

// tileRowCost is what a w-wide RGB(A) tiled file in tw x th tiles adds to a strip consumer's
// estimate: its decoded row of tiles (4 bytes a pixel), one stored RGB tile, and 16 bytes of
// offset and count a tile.
func tileRowCost(w, h, tw, th int) int64 {
	across, down := (w+tw-1)/tw, (h+th-1)/th
	return int64(4*w*th + tw*th*3 + 16*across*down)
}

// A tiled TIFF streamed to PNG holds exactly streamPNGCost plus its row of tiles, one stored
// tile and the offsets, under a budget too small for the whole image.
func TestStreamTiledTIFFToPNG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h, tw, th = 3000, 2000, 256, 256
	tif, png := CodecByID("tiff"), CodecByID("png")
	whole := memoryEstimate(tif, png, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamPNGCost(image.Rect(0, 0, w, h), false, 4) + tileRowCost(w, h, tw, th)
	if stream*2 > whole {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	src := convtest.WriteTemp(t, tiledTIFF(t, testimg.Photo(w, h), tw, th, 8, true)).Name()
	if got := budgetWhileWriting(t, c, "tiff", src, "png", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the PNG stream estimate with a row of tiles %d (without it %d)",
			got, stream, stream-tileRowCost(w, h, tw, th))
	}
}

// A tiled TIFF made smaller in strips holds exactly the strip resize's estimate plus its row
// of tiles, one stored tile and the offsets, under a budget too small for the whole image.
func TestStripResizeTiledTIFF_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	const w, h, tw, th = 3000, 2000, 256, 256
	tif, jpg := CodecByID("tiff"), CodecByID("jpeg")
	whole := memoryEstimate(tif, jpg, 1, w*h, w*h/4, true, false)
	strip := memoryEstimate(tif, jpg, 1, 0, w*h/4, true, false) +
		stripResizeCost(w, h, 4, w/2, h/2, image.Rect(0, 0, w, h)) + tileRowCost(w, h, tw, th)
	if strip*2 > whole {
		t.Fatalf("strip estimate %d MiB is not well under the whole-image %d MiB", strip>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (strip + whole) / 2})
	src := convtest.WriteTemp(t, tiledTIFF(t, testimg.Photo(w, h), tw, th, 8, true)).Name()
	if got := budgetWhileWriting(t, c, "tiff", src, "jpeg", convert.Options{Width: w / 2}); got != strip {
		t.Errorf("budget in use %d while writing, want the strip estimate with a row of tiles %d (without it %d)",
			got, strip, strip-tileRowCost(w, h, tw, th))
	}
}

// A tiled TIFF whose row of tiles is more than half the image (one row of tiles: the whole
// image; or two rows of 208 over 400) is not streamed, to PNG or resized: streamToPNG and
// stripResize leave it, nothing written and no budget held; through the catalog it takes the
// whole-image path, which a budget just under the whole-image estimate (far over the
// streaming one) refuses, and converts to the whole-image path's bytes. The file whose rows
// of tiles are 200 (exactly half) streams.
func TestTiledTIFF_RowOfTilesOverHalfFallsBack(t *testing.T) {
	const w, h = 600, 400
	photo := testimg.Photo(w, h)
	tif := CodecByID("tiff")
	resize := convert.Options{Width: w / 2}
	cases := []struct {
		name   string
		tw, th int
		stream bool
	}{
		{"one-row-of-2-tiles", 304, 400, false},
		{"one-row-of-3-tiles", 256, 400, false},
		{"rows-of-208", 64, 208, false},
		{"rows-of-200", 64, 200, true},
	}
	if testing.Short() {
		// The race run keeps the two either side of half (each case took 8-9 s under
		// -race -short at a load of 16-18); the plain run checks all four.
		cases = cases[2:]
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tiledTIFF(t, photo, tc.tw, tc.th, 8, true)
			src := convtest.WriteTemp(t, data).Name()
			in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
			cfg, err := ReadHeader(context.Background(), in, tif, convert.Limits{}.Normalized())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				dstID string
				opts  convert.Options
				run   func(*convert.Catalog, io.Writer) (bool, error)
				whole int64
			}{
				{"png", convert.Options{}, func(c *convert.Catalog, out io.Writer) (bool, error) {
					return streamToPNG(context.Background(), c, in, out, tif, CodecByID("png"), cfg, convert.Options{}, nil)
				}, memoryEstimate(tif, CodecByID("png"), 1, w*h, w*h, false, false)},
				{"jpeg", resize, func(c *convert.Catalog, out io.Writer) (bool, error) {
					return stripResizeOpts(context.Background(), c, in, out, tif, CodecByID("jpeg"), cfg, resize)
				}, memoryEstimate(tif, CodecByID("jpeg"), 1, w*h, w*h/4, true, false)},
			} {
				c := testCatalog(convert.Limits{})
				var out bytes.Buffer
				handled, err := p.run(c, &out)
				if err != nil || handled != tc.stream {
					t.Fatalf("%s: handled %v, err %v; want handled %v", p.dstID, handled, err, tc.stream)
				}
				if !tc.stream && out.Len() != 0 {
					t.Errorf("%s: %d bytes written by a conversion left to the whole-image path", p.dstID, out.Len())
				}
				if got, _ := c.MemoryUse(); got != 0 {
					t.Errorf("%s: budget in use %d after it", p.dstID, got)
				}
				if tc.stream {
					continue
				}
				small := testCatalog(convert.Limits{MaxConversionMemory: p.whole - 1})
				_, err = small.Convert(context.Background(), "tiff", p.dstID, p.opts, openFile(t, src), io.Discard, t.TempDir())
				var ce *convert.Error
				if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
					t.Errorf("%s through the catalog under a budget of the whole-image estimate - 1: err = %v, want the budget exceeded", p.dstID, err)
				}
				var viaCatalog bytes.Buffer
				if _, err := c.Convert(context.Background(), "tiff", p.dstID, p.opts, openFile(t, src), &viaCatalog, t.TempDir()); err != nil {
					t.Fatal(err)
				}
				want := wholeImage(t, "tiff", p.dstID, data, p.opts)
				if p.dstID == "png" {
					want = wholeImage(t, "tiff", "png", data, convert.Options{})
				}
				if !bytes.Equal(viaCatalog.Bytes(), want) {
					t.Errorf("%s through the catalog: %d bytes, the whole-image path's %d", p.dstID, viaCatalog.Len(), len(want))
				}
			}
		})
	}
}
