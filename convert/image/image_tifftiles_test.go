package image

import (
	"bytes"
	"cmp"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"runtime"
	"slices"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// tiledTIFF writes m (*image.Gray, or *image.NRGBA: as RGB when every pixel is opaque,
// else unassociated RGBA) as a little-endian tiled TIFF of tiles tw x th, uncompressed or
// deflate (compression 1 or 8), with or without the horizontal predictor. Edge tiles are
// padded with a pattern of their own, not zeros.
func tiledTIFF(t testing.TB, m image.Image, tw, th, compression int, predictor bool) []byte {
	t.Helper()
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	var spp, photometric, extra int
	var sample func(x, y, s int) byte
	switch m := m.(type) {
	case *image.Gray:
		spp, photometric = 1, 1
		sample = func(x, y, _ int) byte { return m.Pix[y*m.Stride+x] }
	case *image.NRGBA:
		spp, photometric = 4, 2
		if m.Opaque() {
			spp = 3
		} else {
			extra = 2
		}
		sample = func(x, y, s int) byte { return m.Pix[y*m.Stride+4*x+s] }
	default:
		t.Fatalf("tiledTIFF: %T", m)
	}
	le := binary.LittleEndian
	out := bytes.NewBuffer([]byte("II\x2A\x00\x00\x00\x00\x00"))
	across, down := (w+tw-1)/tw, (h+th-1)/th
	var offsets, counts []uint32
	tile := make([]byte, tw*th*spp)
	rowLen := tw * spp
	for j := range down {
		for i := range across {
			for y := range th {
				for x := range tw {
					for s := range spp {
						px, py := i*tw+x, j*th+y
						v := byte(px*13 + py*7 + s*101 + 29)
						if px < w && py < h {
							v = sample(px, py, s)
						}
						tile[y*rowLen+x*spp+s] = v
					}
				}
			}
			data := bytes.Clone(tile)
			if predictor {
				for r := 0; r < len(data); r += rowLen {
					for k := rowLen - 1; k >= spp; k-- {
						data[r+k] -= data[r+k-spp]
					}
				}
			}
			if compression == 8 {
				var z bytes.Buffer
				zw := zlib.NewWriter(&z)
				zw.Write(data)
				zw.Close()
				data = z.Bytes()
			}
			offsets = append(offsets, uint32(out.Len()))
			counts = append(counts, uint32(len(data)))
			out.Write(data)
		}
	}
	array := func(v []uint32) uint32 {
		off := uint32(out.Len())
		for _, x := range v {
			binary.Write(out, le, x)
		}
		return off
	}
	bps := uint32(8)
	if spp > 2 {
		bps = uint32(out.Len())
		for range spp {
			binary.Write(out, le, uint16(8))
		}
	}
	entries := [][4]uint32{ // tag, type, count, value
		{256, 4, 1, uint32(w)},
		{257, 4, 1, uint32(h)},
		{258, 3, uint32(spp), bps},
		{259, 3, 1, uint32(compression)},
		{262, 3, 1, uint32(photometric)},
		{277, 3, 1, uint32(spp)},
		{322, 4, 1, uint32(tw)},
		{323, 4, 1, uint32(th)},
		{324, 4, uint32(len(offsets)), array(offsets)},
		{325, 4, uint32(len(counts)), array(counts)},
	}
	if predictor {
		entries = append(entries, [4]uint32{317, 3, 1, 2})
	}
	if extra != 0 {
		entries = append(entries, [4]uint32{338, 3, 1, uint32(extra)})
	}
	slices.SortFunc(entries, func(a, b [4]uint32) int { return cmp.Compare(a[0], b[0]) })
	ifd := uint32(out.Len())
	binary.Write(out, le, uint16(len(entries)))
	for _, e := range entries {
		binary.Write(out, le, uint16(e[0]))
		binary.Write(out, le, uint16(e[1]))
		binary.Write(out, le, e[2])
		if e[1] == 3 && e[2] == 1 {
			binary.Write(out, le, uint16(e[3]))
			binary.Write(out, le, uint16(0))
		} else {
			binary.Write(out, le, e[3])
		}
	}
	binary.Write(out, le, uint32(0))
	data := out.Bytes()
	le.PutUint32(data[4:], ifd)
	return data
}

// tiledSamples are tiled TIFFs of photo-like pixels at w x h: RGB, gray and RGBA, each
// uncompressed and deflate with the predictor, in tiles of tw x th.
func tiledSamples(t testing.TB, w, h, tw, th int, alpha bool) map[string][]byte {
	photo := testimg.Photo(w, h)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	layouts := map[string]image.Image{"rgb": photo, "gray": gray}
	if alpha {
		layouts["rgba"] = testimg.PhotoAlpha(w, h)
	}
	out := map[string][]byte{}
	for name, m := range layouts {
		out[fmt.Sprintf("%s-%dx%d-tiles%dx%d-none", name, w, h, tw, th)] = tiledTIFF(t, m, tw, th, 1, false)
		out[fmt.Sprintf("%s-%dx%d-tiles%dx%d-deflate-pred", name, w, h, tw, th)] = tiledTIFF(t, m, tw, th, 8, true)
	}
	return out
}

// A tiled TIFF streams to the whole-image path's JPEG byte for byte, for every layout, with
// tiles smaller than, as tall as and larger than the JPEG strips, edge tiles padded on the
// right and at the bottom.
func TestStreamTiledTIFFToJPEG_SameBytesAsWholeImage(t *testing.T) {
	for _, sz := range shortSizes(image.Pt(300, 300), image.Pt(1000, 517), image.Pt(257, 2000)) {
		tiles := []image.Point{{256, 256}, {64, 16}, {16, 112}}
		if testing.Short() {
			tiles = tiles[:1:1] // -race -short: 175 s for the three at a load of 16, mostly making the samples
			tiles = append(tiles, image.Pt(16, 112))
		}
		for _, ts := range tiles {
			for name, data := range tiledSamples(t, sz.X, sz.Y, ts.X, ts.Y, true) {
				t.Run(name, func(t *testing.T) {
					checkGoroutines(t)
					var out bytes.Buffer
					handled, err := runTIFFPipeline(context.Background(), t, data, &out, convert.Options{})
					if err != nil || !handled {
						t.Fatalf("handled %v, err %v", handled, err)
					}
					if want := wholeImage(t, "tiff", "jpeg", data, convert.Options{}); !bytes.Equal(out.Bytes(), want) {
						t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
					}
				})
			}
		}
	}
}

// Cut and corrupted tiled TIFFs fail with a convert.Error on both paths or convert to the
// same pixels (TestStreamTIFFToJPEG_CutAndCorrupt for tiles).
func TestStreamTiledTIFFToJPEG_CutAndCorrupt(t *testing.T) {
	for name, data := range tiledSamples(t, 40, 70, 16, 32, true) {
		var inputs [][]byte
		for n := 0; n < len(data); n += 41 {
			inputs = append(inputs, data[:n])
		}
		for i := 0; i < len(data); i += 41 {
			c := bytes.Clone(data)
			c[i] ^= 0xa5
			inputs = append(inputs, c)
		}
		streamed := 0
		for _, in := range inputs {
			if tiffStreamAgreesWithWhole(t, name, in) {
				streamed++
			}
		}
		// The IFD is at the end of the file: a prefix fails in ReadHeader, so about half
		// the inputs (the flipped bytes) stream.
		if streamed < len(inputs)/3 {
			t.Errorf("%s: %d of %d inputs streamed; the test checks little", name, streamed, len(inputs))
		}
	}
}

// The budget charges a streamed tiled TIFF -> JPEG its strips, its row of tiles, one stored
// tile and the tile offsets.
func TestStreamTiledTIFFToJPEG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h, tw, th = 3000, 2000, 256, 256
	tif, jpg := CodecByID("tiff"), CodecByID("jpeg")
	whole := memoryEstimate(tif, jpg, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamJPEGCost(image.Rect(0, 0, w, h), false, 4) +
		4*w*th + tw*th*3 + 16*12*8 // a row of tiles, a tile, 12x8 offsets and counts
	if stream*2 > whole {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	src := convtest.WriteTemp(t, tiledTIFF(t, testimg.Photo(w, h), tw, th, 8, true)).Name()
	if got := budgetWhileWriting(t, c, "tiff", src, "jpeg", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the stream estimate with a row of tiles %d", got, stream)
	}
}

// A 12 MP RGB TIFF in 256x256 deflate tiles with the predictor, which x/image/tiff decodes
// to a 48 MB RGBA image, converts with under 16 MiB allocated in all: a row of tiles (4 MB)
// and the strips.
func TestStreamTiledTIFFToJPEG_AllocatesTileRowsNotTheImage(t *testing.T) {
	atMostProcs(t, 2)
	if testing.Short() {
		t.Skip("12 MP")
	}
	data := tiledTIFF(t, testimg.Photo(4000, 3000), 256, 256, 8, true)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	handled, err := runTIFFPipeline(context.Background(), t, data, io.Discard, convert.Options{})
	runtime.ReadMemStats(&after)
	if !handled || err != nil {
		t.Fatalf("handled %v, err %v", handled, err)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("4000x3000 in 256x256 tiles: %.1f MiB allocated", float64(got)/(1<<20))
	if got > 16<<20 {
		t.Errorf("4000x3000 in 256x256 tiles: %d MiB allocated, want under 16 MiB", got>>20)
	}
}

// tiffStreamExtra: a tiled file streams charged its row of tiles, one stored tile and the
// offsets; one whose row of tiles is more than half the image does not; a compressed striped
// file streams charged its prefetched strips; files tiffstrip leaves to x/image/tiff stream
// (or not) charged nothing more.
func TestTIFFStreamExtra(t *testing.T) {
	photo := func(w, h int) image.Image { return testimg.Photo(w, h) }
	var striped bytes.Buffer
	if err := encodeTIFF(context.Background(), &striped, testimg.Photo(600, 400), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	// The striped file (tiffenc: 7 deflate strips of 64 rows) is charged the strips tiffstrip's
	// Prefetch inflates ahead, GOMAXPROCS+1 of them with their inflaters (none on one core).
	var prefetched int64
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		prefetched = int64(min(procs+1, 7)) * (3*600*64 + 400<<10)
	}
	for name, tc := range map[string]struct {
		data   []byte
		extra  int64
		stream bool
	}{
		"600x400 in 64x64 tiles":   {tiledTIFF(t, photo(600, 400), 64, 64, 8, true), 4*600*64 + 64*64*3 + 16*10*7, true},
		"600x400 in 128x192 tiles": {tiledTIFF(t, photo(600, 400), 128, 192, 1, false), 4*600*192 + 128*192*3 + 16*5*3, true},
		"600x400 in 256x256 tiles": {tiledTIFF(t, photo(600, 400), 256, 256, 8, true), 0, false},
		"600x400 in one tile":      {tiledTIFF(t, photo(600, 400), 608, 400, 8, true), 0, false},
		"striped":                  {striped.Bytes(), prefetched, true},
		"not tiffstrip's":          {[]byte("II\x2A\x00\x08\x00\x00\x00\x00\x00"), 0, true},
	} {
		extra, stream := tiffStreamExtra(io.NewSectionReader(bytes.NewReader(tc.data), 0, int64(len(tc.data))))
		if extra != tc.extra || stream != tc.stream {
			t.Errorf("%s: extra %d, stream %v; want %d, %v", name, extra, stream, tc.extra, tc.stream)
		}
	}
}
