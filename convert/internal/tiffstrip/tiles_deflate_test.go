package tiffstrip

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"golang.org/x/image/tiff"
)

// tiledWithStreams writes an 8-bit gray deflate TIFF of w x h in tiles of tw x th whose tile
// k's data is streams[k] as given (damaged or not).
func tiledWithStreams(t testing.TB, w, h, tw, th int, streams [][]byte) []byte {
	l := layout{1, 1, 0, 8, 0, 0, false}
	order, out := newTIFF(l)
	var offsets, counts []uint32
	for _, s := range streams {
		offsets = append(offsets, uint32(out.Len()))
		counts = append(counts, uint32(len(s)))
		out.Write(s)
	}
	return finishTIFF(out, order, w, h, l, [][4]uint32{
		{tTileWidth, 4, 1, uint32(tw)},
		{tTileLength, 4, 1, uint32(th)},
		{tTileOffsets, 4, uint32(len(offsets)), writeArray(out, order, offsets)},
		{tTileByteCounts, 4, uint32(len(counts)), writeArray(out, order, counts)},
	})
}

// tileStreams are the zlib streams of the tiles of a gray w x h image in tiles of tw x th
// (padding of edge tiles zero), at the level given.
func tileStreams(t testing.TB, w, h, tw, th, level int) [][]byte {
	pix := pixels(w, h, 1)
	var streams [][]byte
	for j := 0; j < (h+th-1)/th; j++ {
		for i := 0; i < (w+tw-1)/tw; i++ {
			tile := make([]byte, tw*th)
			for y := range th {
				for x := range tw {
					if px, py := i*tw+x, j*th+y; px < w && py < h {
						tile[y*tw+x] = pix[py*w+px]
					}
				}
			}
			streams = append(streams, zlibStream(t, tile, level))
		}
	}
	return streams
}

// sameAsXImageTiles is sameAsXImage for any tiffstrip takes: the same image (type, bounds,
// pixels), or the same error message, in strips of 1, 5 and 64 rows.
func sameAsXImageTiles(t *testing.T, data []byte) (last error) {
	t.Helper()
	want, werr := tiff.Decode(bytes.NewReader(data))
	for _, k := range []int{1, 5, 64} {
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if !ok || err != nil {
			t.Fatalf("NewDecoder: ok %v, err %v", ok, err)
		}
		got, gerr := decodeStrips(d, k)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("strips of %d rows: error %q, x/image/tiff %q", k, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("strips of %d rows: image differs from x/image/tiff's", k)
		}
		last = gerr
	}
	return last
}

// TestDecodeTiles_DeflateErrorsSameAsXImage: a deflate tile broken in every way (first,
// middle or last tile; the tiles before it whole, so the inflater shared by the tiles has
// decoded some) fails with x/image/tiff's message, a corrupt stream's offset included, and
// trailing bytes after a tile's checksum are ignored as x/image/tiff ignores them. Each tile
// is inflated to its end as x/image/tiff reads it: a broken checksum in a whole tile fails.
func TestDecodeTiles_DeflateErrorsSameAsXImage(t *testing.T) {
	const w, h, tw, th = 40, 30, 16, 16
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.BestCompression, zlib.HuffmanOnly} {
		streams := tileStreams(t, w, h, tw, th, level)
		if err := sameAsXImageTiles(t, tiledWithStreams(t, w, h, tw, th, streams)); err != nil {
			t.Fatalf("level %d, whole tiles: %v", level, err)
		}
		for _, k := range []int{0, 4, len(streams) - 1} {
			for name, s := range damaged(streams[k]) {
				t.Run(fmt.Sprintf("level%d/tile%d/%s", level, k, name), func(t *testing.T) {
					bad := append([][]byte(nil), streams...)
					bad[k] = s
					err := sameAsXImageTiles(t, tiledWithStreams(t, w, h, tw, th, bad))
					if (name == "whole" || name == "trailing") != (err == nil) {
						t.Fatalf("error %v", err)
					}
				})
			}
		}
	}
	// A tile with fewer pixels than the image needs of it: x/image/tiff's errNoPixels.
	streams := tileStreams(t, w, h, tw, th, 6)
	streams[3] = zlibStream(t, make([]byte, 5), 6)
	if err := sameAsXImageTiles(t, tiledWithStreams(t, w, h, tw, th, streams)); !errors.Is(err, errNoPixels) {
		t.Fatalf("short tile: %v, want %v", err, errNoPixels)
	}
}

// TestDecodeTiles_DeflateBadChecksumAtTheLimit: a tile that inflates to exactly x/image/tiff's
// limit (8 bytes a tile pixel) with a wrong Adler-32 fails or not as x/image/tiff does (as
// for strips, TestDecode_DeflateBadChecksumAtTheLimit: it depends on where compress/flate's
// window hands over output, so an inflater that trusts its own verdict fails this).
func TestDecodeTiles_DeflateBadChecksumAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		tw, th int
		fail   bool
	}{{8, 8, true}, {64, 64, false}, {16, 8, true}} {
		w, h := tc.tw*2, tc.th
		streams := tileStreams(t, w, h, tc.tw, tc.th, zlib.BestSpeed)
		s := zlibStream(t, pixels(tc.tw*tc.th*8, 1, 1), zlib.BestSpeed)
		s[len(s)-1] ^= 1
		streams[1] = s
		err := sameAsXImageTiles(t, tiledWithStreams(t, w, h, tc.tw, tc.th, streams))
		if (err != nil) != tc.fail {
			t.Errorf("tiles %dx%d: error %v, want failure %v", tc.tw, tc.th, err, tc.fail)
		}
	}
}

// A tiled deflate file whose first tile's header is broken, then whole tiles: the shared
// inflater (never made, or made and Reset to a broken header) reads the later files' tiles as
// a new one would. One Decoder a file, but tiles of every kind in turn through each.
func TestDecodeTiles_DeflateReuseAfterHeaderError(t *testing.T) {
	const w, h, tw, th = 48, 16, 16, 16
	for _, first := range []int{0, 1} {
		streams := tileStreams(t, w, h, tw, th, 6)
		streams[first] = append([]byte{0x79}, streams[first][1:]...)
		// x/image/tiff fails at the broken tile; tiffstrip too, with its message.
		sameAsXImageTiles(t, tiledWithStreams(t, w, h, tw, th, streams))
	}
	// Stored, fixed-code and dynamic tiles in one file, each tile Reset from the one before.
	var streams [][]byte
	for i, level := range []int{zlib.NoCompression, zlib.HuffmanOnly, zlib.BestSpeed, zlib.BestCompression} {
		streams = append(streams, tileStreams(t, 64, 16, tw, th, level)[i])
	}
	if err := sameAsXImageTiles(t, tiledWithStreams(t, 64, 16, tw, th, streams)); err != nil {
		t.Fatal(err)
	}
}

// tiledDeflateSeeds are small tiled deflate files for FuzzDeflateTIFF and FuzzTileDecode:
// every layout with deflate (8x8 tiles over 13x9, both predictors) and a gray file whose
// second tile is damaged in each of damaged's ways.
func tiledDeflateSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for _, l := range tileLayouts() {
		if l.compression == cDeflate {
			seeds["tiled-"+l.String()] = buildTiledTIFF(t, 13, 9, l, 8, 8, pixels(13, 9, l.samples))
		}
	}
	streams := tileStreams(t, 20, 9, 8, 8, zlib.BestSpeed)
	for name, s := range damaged(streams[1]) {
		bad := append([][]byte(nil), streams...)
		bad[1] = s
		seeds["tiled-gray-"+name] = tiledWithStreams(t, 20, 9, 8, 8, bad)
	}
	return seeds
}

// The tiled seeds are what tiffstrip takes, and decode as x/image/tiff does (so the fuzzers
// start from files that exercise the tile paths, not from ones left to x/image/tiff).
func TestTiledDeflateSeeds(t *testing.T) {
	for name, data := range tiledDeflateSeeds(t) {
		t.Run(name, func(t *testing.T) {
			d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
			if !ok || err != nil || !d.tiled {
				t.Fatalf("ok %v, err %v: not taken as tiled", ok, err)
			}
			sameAsXImageTiles(t, data)
			sameDeflateMessage(t, data)
		})
	}
}

// fuzzSeedFile is a go test fuzz v1 corpus file of one []byte.
func fuzzSeedFile(data []byte) []byte {
	return []byte("go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n")
}

// sameDeflateMessage: for a tiled deflate file tiffstrip takes (small), tiffstrip and
// x/image/tiff give the same image or the same error message (checkSame asks only that
// both fail).
func sameDeflateMessage(t *testing.T, data []byte) {
	t.Helper()
	cfg, err := tiff.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width*cfg.Height > 1<<16 {
		return
	}
	d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
	if !ok || err != nil || !d.tiled || (d.compression != cDeflate && d.compression != cDeflateOld) {
		return
	}
	want, werr := tiff.Decode(bytes.NewReader(data))
	got, gerr := decodeStrips(d, 3)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("error %q, x/image/tiff %q", gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatal("pixels differ from x/image/tiff's")
	}
}

// TestWriteTiledDeflateSeeds writes tiledDeflateSeeds to testdata/fuzz/FuzzTileDecode and
// testdata/fuzz/FuzzDeflateTIFF (both fuzzers take one []byte).
func TestWriteTiledDeflateSeeds(t *testing.T) {
	if os.Getenv("TIFFSTRIP_WRITE_SEEDS") == "" {
		t.Skip("set TIFFSTRIP_WRITE_SEEDS=1 to rewrite the seeds")
	}
	for _, fuzzer := range []string{"FuzzTileDecode", "FuzzDeflateTIFF"} {
		dir := filepath.Join("testdata", "fuzz", fuzzer)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range tiledDeflateSeeds(t) {
			if err := os.WriteFile(filepath.Join(dir, "seed-"+name), fuzzSeedFile(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Two broken tiles: x/image/tiff decodes the tiles column by column and reports the first
// failure in that order, so a broken tile further down an earlier column is the one whose
// error counts, not the first broken one in row order (FuzzTileDecode found it). Every pair
// of damages, either order.
func TestDecodeTiles_ErrorOfTheFirstTileInColumnOrder(t *testing.T) {
	const w, h, tw, th = 48, 40, 16, 16 // 3 x 3 tiles
	streams := tileStreams(t, w, h, tw, th, zlib.BestSpeed)
	damages := []string{"header", "cut-half", "adler", "flip-mid", "cut-0"}
	for _, pair := range [][2]int{{2, 3}, {1, 6}, {2, 7}, {5, 7}, {1, 3}} { // row-major index
		for _, a := range damages {
			for _, b := range damages {
				if a == b {
					continue
				}
				bad := append([][]byte(nil), streams...)
				bad[pair[0]] = damaged(streams[pair[0]])[a]
				bad[pair[1]] = damaged(streams[pair[1]])[b]
				t.Run(fmt.Sprintf("tiles%d-%d/%s-%s", pair[0], pair[1], a, b), func(t *testing.T) {
					if err := sameAsXImageTiles(t, tiledWithStreams(t, w, h, tw, th, bad)); err == nil {
						t.Fatal("no error")
					}
				})
			}
		}
	}
	// Uncompressed tiles too: a tile past the end of the file and a short one.
	l := layout{1, 1, 0, 1, 0, 0, false}
	data := buildTiledTIFF(t, w, h, l, tw, th, pixels(w, h, 1))
	d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	data = withTileOffset(data, d, 2, uint(len(data)))
	data = withTileCount(data, d, 3, 5)
	if err := sameAsXImageTiles(t, data); err == nil {
		t.Fatal("uncompressed: no error")
	}
}

// benchTiledTIFF is a 12 MP (4000x3000) photo-like RGB TIFF in 256x256 deflate tiles with the
// horizontal predictor (docs/benchmarks.md, "Tiled TIFF sources").
var benchTiledTIFF = sync.OnceValue(func() []byte {
	src := testimg.Photo(4000, 3000)
	px := make([]byte, 0, 4000*3000*3)
	for i := 0; i < len(src.Pix); i += 4 {
		px = append(px, src.Pix[i:i+3]...)
	}
	return buildTiledTIFF(nil, 4000, 3000, layout{3, 2, 0, 8, 2, 0, false}, 256, 256, px)
})

// BenchmarkDeflateTiles decodes benchTiledTIFF in 64-row strips, as the TIFF -> JPEG pipeline
// does, with the shipped tile inflater (one inflate.Reader, Reset a tile), with openDeflate
// (a new inflate.Reader a tile) and with compress/zlib (a new reader a tile, as x/image/tiff).
//
//	go test ./convert/internal/tiffstrip -run XXX -bench DeflateTiles -benchmem -count 5
func BenchmarkDeflateTiles(b *testing.B) {
	data := benchTiledTIFF()
	for _, v := range []struct {
		name string
		open func(*Decoder, int64, int64, int64) (io.ReadCloser, error)
	}{
		{"inflate", (*Decoder).openDeflateReused},
		{"inflate-new-reader", func(d *Decoder, off, n, limit int64) (io.ReadCloser, error) { return openDeflate(d.r, off, n, limit) }},
		{"compress-zlib", func(d *Decoder, off, n, limit int64) (io.ReadCloser, error) { return openZlib(d.r, off, n, limit) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			defer func(old func(*Decoder, int64, int64, int64) (io.ReadCloser, error)) { openDeflateBlock = old }(openDeflateBlock)
			openDeflateBlock = v.open
			b.SetBytes(4000 * 3000 * 3)
			b.ReportAllocs()
			buf := make([]byte, 4*4000*64)
			for b.Loop() {
				d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
				if !ok || err != nil || !d.tiled {
					b.Fatalf("NewDecoder: %v %v", ok, err)
				}
				for y := 0; y < 3000; y += 64 {
					if err := d.ReadRows(d.StripImage(buf, image.Rect(0, y, 4000, min(y+64, 3000)))); err != nil {
						b.Fatal(err)
					}
				}
				if err := d.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
