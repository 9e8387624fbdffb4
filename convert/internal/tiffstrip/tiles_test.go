package tiffstrip

import (
	"bytes"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/image/tiff"
)

// buildTiledTIFF writes a tiled TIFF of the samples (w x h) in l's layout with tiles of
// tw x th, compressing each tile itself. The padding of edge tiles holds a pattern of its
// own (not zeros, not the edge pixels), so a decoder that shows it fails the comparisons.
func buildTiledTIFF(t testing.TB, w, h int, l layout, tw, th int, samples []byte, extra ...[3]uint32) []byte {
	order, out := newTIFF(l)
	across, down := (w+tw-1)/tw, (h+th-1)/th
	var offsets, counts []uint32
	tile := make([]byte, tw*th*l.samples)
	for j := range down {
		for i := range across {
			for y := range th {
				for x := range tw {
					for s := range l.samples {
						px, py := i*tw+x, j*th+y
						v := byte(px*13 + py*7 + s*101 + 29)
						if px < w && py < h {
							v = samples[(py*w+px)*l.samples+s]
						}
						tile[(y*tw+x)*l.samples+s] = v
					}
				}
			}
			data := encodeBlock(l, tile, tw*l.samples)
			offsets = append(offsets, uint32(out.Len()))
			counts = append(counts, uint32(len(data)))
			out.Write(data)
		}
	}
	return finishTIFF(out, order, w, h, l, [][4]uint32{
		{tTileWidth, 4, 1, uint32(tw)},
		{tTileLength, 4, 1, uint32(th)},
		{tTileOffsets, 4, uint32(len(offsets)), writeArray(out, order, offsets)},
		{tTileByteCounts, 4, uint32(len(counts)), writeArray(out, order, counts)},
	}, extra...)
}

// tileSizes are tiles of the usual multiple of 16, of sizes x/image/tiff permits that are
// not (8, 24x40, 13), and one larger than a small image (padding on both edges).
var tileSizes = []image.Point{{16, 16}, {8, 8}, {24, 40}, {13, 9}, {64, 32}}

// tileLayouts are the sample layouts, compressions and predictors tiffstrip decodes, in
// both byte orders (the rows-per-strip field is unused).
func tileLayouts() []layout {
	var ls []layout
	for _, c := range []struct{ samples, photometric, extra int }{{1, 1, 0}, {1, 0, 0}, {3, 2, 0}, {4, 2, 1}, {4, 2, 2}} {
		for _, comp := range []int{1, 5, 8} {
			for _, pr := range []int{0, 2} {
				ls = append(ls, layout{c.samples, c.photometric, c.extra, comp, pr, 0, comp == 5})
			}
		}
	}
	return ls
}

// Every tiled layout decodes to x/image/tiff's image exactly (type, bounds, pixels) at every
// tile size, image sizes with edge tiles on the right, at the bottom, both and neither, and
// whatever the strip height the caller reads in (inside a row of tiles, across rows of
// tiles, the whole image).
func TestDecodeTiles_SameAsXImage(t *testing.T) {
	for _, l := range tileLayouts() {
		for _, ts := range tileSizes {
			for _, sz := range []image.Point{{1, 1}, {37, 23}, {ts.X * 2, ts.Y * 3}, {ts.X*2 + 1, ts.Y}, {ts.X, ts.Y*2 + 5}} {
				data := buildTiledTIFF(t, sz.X, sz.Y, l, ts.X, ts.Y, pixels(sz.X, sz.Y, l.samples))
				want, err := tiff.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%v tiles %v image %v: x/image/tiff: %v", l, ts, sz, err)
				}
				for _, k := range []int{1, 5, 16, 1000} {
					d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
					if !ok || err != nil {
						t.Fatalf("%v tiles %v image %v: ok %v, err %v", l, ts, sz, ok, err)
					}
					if d.RowsPerStrip() != ts.Y {
						t.Fatalf("RowsPerStrip %d, want the tile height %d", d.RowsPerStrip(), ts.Y)
					}
					got, err := decodeStrips(d, k)
					if err != nil {
						t.Fatalf("%v tiles %v image %v k=%d: %v", l, ts, sz, k, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%v tiles %v image %v k=%d: %T differs from x/image/tiff's %T", l, ts, sz, k, got, want)
					}
				}
			}
		}
	}
}

// Tiled files x/image/tiff refuses, or reads by rules tiffstrip does not follow, are left to
// it: ok false, no error (x/image/tiff then reports its error).
func TestNewDecoderTiles_LeavesOthersToXImage(t *testing.T) {
	rgb := layout{3, 2, 0, 8, 0, 0, false}
	px := pixels(40, 30, 3)
	good := buildTiledTIFF(t, 40, 30, rgb, 16, 16, px)
	cases := map[string][]byte{
		"tile-7":          buildTiledTIFF(t, 40, 30, rgb, 7, 16, px),
		"tile-height-4":   buildTiledTIFF(t, 40, 30, rgb, 16, 4, px),
		"tile-1040-big":   buildTiledTIFF(t, 20, 20, layout{1, 1, 0, 8, 0, 0, false}, 1040, 16, pixels(20, 20, 1)),
		"tile-width-only": buildTIFF(t, 8, 8, rgb, pixels(8, 8, 3), [3]uint32{tTileWidth, 3, 16}),
		"tile-width-zero": buildTIFF(t, 8, 8, rgb, pixels(8, 8, 3), [3]uint32{tTileWidth, 3, 0}),
		"too-few-offsets": setEntryCount(t, bytes.Clone(good), tTileOffsets, 5),
		"too-few-counts":  setEntryCount(t, bytes.Clone(good), tTileByteCounts, 1),
	}
	for name, data := range cases {
		if _, err := tiff.Decode(bytes.NewReader(data)); err == nil && name != "tile-width-zero" {
			t.Errorf("%s: x/image/tiff decodes it; the case tests nothing", name)
		}
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if ok || err != nil || d != nil {
			t.Errorf("%s: ok %v, err %v; want it left to x/image/tiff", name, ok, err)
		}
	}
	if d, ok, err := NewDecoder(bytes.NewReader(good), int64(len(good))); !ok || err != nil || d == nil {
		t.Fatalf("the file the cases are cut from: ok %v, err %v", ok, err)
	}
}

// setEntryCount sets the count of the little-endian IFD entry tag in data to n.
func setEntryCount(t testing.TB, data []byte, tag uint16, n uint32) []byte {
	ifd := int(le32(data[4:]))
	entries := int(uint16(data[ifd]) | uint16(data[ifd+1])<<8)
	for i := range entries {
		e := data[ifd+2+12*i:]
		if uint16(e[0])|uint16(e[1])<<8 == tag {
			e[4], e[5], e[6], e[7] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
			return data
		}
	}
	t.Fatalf("no entry %d", tag)
	return nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Short, empty, missing and oversized tiles fail exactly where x/image/tiff fails, by its
// bounds checks: a tile cut inside the image's pixels fails, one cut inside the padding of
// an edge tile decodes (for gray and RGB without the predictor; RGBA needs whole rows, the
// predictor the whole tile), and uncompressed tiles past the end of the file or larger than
// 8 bytes a pixel fail.
func TestDecodeTiles_ShortAndLyingTiles(t *testing.T) {
	for _, l := range tileLayouts() {
		const w, h, tw, th = 40, 30, 16, 16 // the last column of tiles 8 wide, the last row 14 high
		full := buildTiledTIFF(t, w, h, l, tw, th, pixels(w, h, l.samples))
		d, ok, _ := NewDecoder(bytes.NewReader(full), int64(len(full)))
		if !ok {
			t.Fatalf("%v: not decoded", l)
		}
		last := len(d.counts) - 1
		for _, k := range []int{0, 2, last} {
			for _, n := range []uint{0, 1, d.counts[k] / 2, d.counts[k] - 1, d.counts[k] + 1, 1 << 20, 1 << 31} {
				checkSameTiles(t, withTileCount(full, d, k, n), fmt.Sprintf("%v tile %d count %d", l, k, n))
			}
			checkSameTiles(t, withTileOffset(full, d, k, uint(len(full))), fmt.Sprintf("%v tile %d past the end", l, k))
			checkSameTiles(t, withTileOffset(full, d, k, uint(len(full)-1)), fmt.Sprintf("%v tile %d at the last byte", l, k))
			checkSameTiles(t, withTileOffset(full, d, k, 0), fmt.Sprintf("%v tile %d at the header", l, k))
		}
		if l.compression == 1 {
			// Uncompressed, the bounds checks are exact: the bottom-right tile (8x14 of
			// the image in 16x16) cut at every length.
			for n := uint(0); n <= d.counts[last]; n++ {
				checkSameTiles(t, withTileCount(full, d, last, n), fmt.Sprintf("%v last tile cut to %d", l, n))
			}
		}
	}
}

// The same but for the bounds: the cut bottom-right tile of an uncompressed gray file
// decodes when it holds up to the image's last pixel and fails one byte short, and the same
// for RGBA at the image's last row, as x/image/tiff decides (checked against it, and
// against these exact lengths so the test cannot pass by both failing).
func TestDecodeTiles_EdgeTileBounds(t *testing.T) {
	const w, h, tw, th = 40, 30, 16, 16
	for _, tc := range []struct {
		l    layout
		need uint // bytes of the bottom-right tile (8x14 of it in the image) x/image/tiff needs
	}{
		{layout{1, 1, 0, 1, 0, 0, false}, 13*16 + 8},
		{layout{3, 2, 0, 1, 0, 0, false}, (13*16 + 8) * 3},
		{layout{4, 2, 2, 1, 0, 0, false}, 14 * 16 * 4},
		{layout{4, 2, 1, 1, 0, 0, false}, 14 * 16 * 4},
		{layout{3, 2, 0, 1, 2, 0, false}, 16 * 16 * 3},
	} {
		full := buildTiledTIFF(t, w, h, tc.l, tw, th, pixels(w, h, tc.l.samples))
		d, _, _ := NewDecoder(bytes.NewReader(full), int64(len(full)))
		last := len(d.counts) - 1
		for _, n := range []uint{tc.need - 1, tc.need} {
			data := withTileCount(full, d, last, n)
			want, wantErr := tiff.Decode(bytes.NewReader(data))
			d, _, _ := NewDecoder(bytes.NewReader(data), int64(len(data)))
			got, err := decodeStrips(d, 7)
			if (err == nil) != (n == tc.need) || (wantErr == nil) != (n == tc.need) {
				t.Fatalf("%v: last tile of %d bytes: tiffstrip err %v, x/image/tiff err %v; want success only at %d", tc.l, n, err, wantErr, tc.need)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%v: last tile of %d bytes: pixels differ", tc.l, n)
			}
		}
	}
}

// withTileCount returns a copy of data with tile k's byte count set to n.
func withTileCount(data []byte, d *Decoder, k int, n uint) []byte {
	return withTileEntry(data, d, tTileByteCounts, k, n)
}

// withTileOffset returns a copy of data with tile k's offset set to off.
func withTileOffset(data []byte, d *Decoder, k int, off uint) []byte {
	return withTileEntry(data, d, tTileOffsets, k, off)
}

func withTileEntry(data []byte, d *Decoder, tag, k int, v uint) []byte {
	c := bytes.Clone(data)
	ifd := int64(d.order.Uint32(c[4:]))
	n := int(d.order.Uint16(c[ifd:]))
	for i := range n {
		e := c[int(ifd)+2+12*i:]
		if int(d.order.Uint16(e)) == tag {
			d.order.PutUint32(c[d.order.Uint32(e[8:])+uint32(4*k):], uint32(v))
			return c
		}
	}
	panic("no tile entry")
}

// checkSameTiles is checkSame for a file that must be one tiffstrip takes.
func checkSameTiles(t *testing.T, data []byte, what string) {
	t.Helper()
	if _, ok, _ := NewDecoder(bytes.NewReader(data), int64(len(data))); !ok {
		t.Fatalf("%s: not taken", what)
	}
	checkSame(t, data)
}

// Truncated and corrupted tiled files fail where x/image/tiff fails, and never decode to
// other pixels: every prefix, a byte flipped every 13 bytes.
func TestDecodeTiles_TruncatedAndCorrupt(t *testing.T) {
	for _, l := range []layout{{3, 2, 0, 1, 2, 0, false}, {4, 2, 2, 5, 0, 0, true}, {1, 1, 0, 8, 2, 0, false}, {4, 2, 1, 8, 0, 0, true}, {1, 0, 0, 8, 0, 0, false}} {
		full := buildTiledTIFF(t, 40, 30, l, 16, 16, pixels(40, 30, l.samples))
		for n := 0; n < len(full); n += 3 {
			checkSame(t, full[:n])
		}
		for i := 0; i < len(full); i += 13 {
			c := bytes.Clone(full)
			c[i] ^= 0x5a
			checkSame(t, c)
		}
	}
}

// FuzzTileDecode is FuzzStripDecode for tiled files: tiffstrip (when it takes the input)
// and x/image/tiff give the same image or both fail. Seeds: testdata/fuzz/FuzzTileDecode
// (TIFFSTRIP_WRITE_SEEDS=1 go test -run TestWriteTileSeeds rewrites them) and every layout
// with 8x8 tiles over a 13x9 image, and TestWriteTiledDeflateSeeds' deflate files (whole
// and with a tile damaged). Deflate files must give x/image/tiff's error message too
// (sameDeflateMessage), as their tiles go through convert/internal/inflate.
func FuzzTileDecode(f *testing.F) {
	for _, l := range tileLayouts() {
		f.Add(buildTiledTIFF(f, 13, 9, l, 8, 8, pixels(13, 9, l.samples)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame(t, data)
		sameDeflateMessage(t, data)
	})
}

// TestWriteTileSeeds writes the fuzz seeds of a few tiled layouts to
// testdata/fuzz/FuzzTileDecode.
func TestWriteTileSeeds(t *testing.T) {
	if os.Getenv("TIFFSTRIP_WRITE_SEEDS") == "" {
		t.Skip("set TIFFSTRIP_WRITE_SEEDS=1 to rewrite the seeds")
	}
	for i, l := range tileLayouts() {
		if i%2 == 0 {
			writeSeed(t, "FuzzTileDecode", "seed-tiled-"+l.String(), buildTiledTIFF(t, 10, 9, l, 8, 8, pixels(10, 9, l.samples)))
		}
	}
}

// Tiled files written by libvips 8.14 and ImageMagick 6 (testdata/tiled, 72x40 crops of a
// plasma fractal: RGB, RGBA and gray; deflate, LZW and none; with and without the
// predictor; tiles of 16 to 64 with padding on the right and at the bottom) are taken and
// decode to x/image/tiff's image exactly.
func TestDecodeTiles_LibvipsAndImageMagickFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "tiled", "*.tif"))
	if err != nil || len(files) < 6 {
		t.Fatalf("%d files, err %v", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tiff.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: x/image/tiff: %v", f, err)
		}
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if !ok || err != nil || !d.tiled {
			t.Fatalf("%s: ok %v, err %v; want it decoded as tiles", f, ok, err)
		}
		got, err := decodeStrips(d, 8)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %T differs from x/image/tiff's %T", f, got, want)
		}
		t.Logf("%s: %T %v, tiles %dx%d, compression %d, predictor %v", filepath.Base(f), got, got.Bounds(), d.tileW, d.tileH, d.compression, d.predictor)
	}
}

// TileBufferBytes is the decoded row of tiles, one stored tile and the offsets and counts a
// tiled file's decoder holds (here 1000 RGBA-decoded pixels by 64 rows, a 48x64 RGB tile, 21
// by 2 tiles); 0 for strips.
func TestTileBufferBytes(t *testing.T) {
	l := layout{3, 2, 0, 8, 2, 0, false}
	data := buildTiledTIFF(t, 1000, 100, l, 48, 64, pixels(1000, 100, 3))
	d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got, want := d.TileBufferBytes(), int64(4*1000*64+48*64*3+16*21*2); got != want {
		t.Errorf("tiled: %d, want %d", got, want)
	}
	if _, err := decodeStrips(d, 16); err != nil {
		t.Fatal(err)
	}
	if got := int64(len(d.rowPix) + len(d.tile) + 8*len(d.offsets) + 8*len(d.counts)); got != d.TileBufferBytes() {
		t.Errorf("the decoder holds %d bytes, TileBufferBytes says %d", got, d.TileBufferBytes())
	}
	strips := buildTIFF(t, 1000, 100, l, pixels(1000, 100, 3))
	if d, _, _ := NewDecoder(bytes.NewReader(strips), int64(len(strips))); d.TileBufferBytes() != 0 {
		t.Errorf("striped: %d, want 0", d.TileBufferBytes())
	}
}
