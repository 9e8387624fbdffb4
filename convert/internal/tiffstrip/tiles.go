package tiffstrip

import (
	"bufio"
	"compress/zlib"
	"errors"
	"io"
	"math"

	"github.com/convsvc/convsvc/convert/internal/inflate"
	"golang.org/x/image/tiff/lzw"
)

// tiles is the state of a tiled file: its tile layout, the tile being decompressed and the
// decoded pixels of the current row of tiles.
//
// A row of tiles is decoded in one go, left to right, into rowPix (full-width rows, the
// padding of the right-hand tile cropped), and ReadRows copies rows out of it: whatever the
// strip height the caller reads in, one row of tiles is held (width x TileLength pixels)
// plus one tile as stored.
type tiles struct {
	tiled        bool
	tileW, tileH int
	across, down int // tiles across and down

	tile    []byte // one tile as stored (tileW*tileH*samples bytes), reused
	rowPix  []byte // the current row of tiles, decoded: BytesPerPixel()*width a row
	rowY0   int    // the first image row in rowPix
	rowRows int    // image rows in rowPix (0: none decoded yet)

	// Deflate strips and tiles: openDeflate's reader over one inflater, Reset for each.
	sr  io.SectionReader // the current deflate block's compressed bytes
	br  *bufio.Reader    // sr in reads of deflateReadSize (nil until the first block)
	inf *inflate.Reader  // the inflater of every deflate block (nil until the first)
	ds  deflateStrip     // the current deflate block's reader
}

// initTiles sets up a tiled file of tiles tw x th as x/image/tiff's Decode does, with ok
// false where it would fail (the caller then leaves the file to x/image/tiff, which reports
// it): tiles under 8 pixels, larger than 8*tw*th bytes can count, or larger than the image
// by more than padding (16 pixels) when over 1024, and offsets or byte counts missing, of
// another type or fewer than the tiles.
func (d *Decoder) initTiles(tw, th uint, entries map[int][]byte) bool {
	if tw > math.MaxInt32 || th > math.MaxInt32 || tw < 8 || th < 8 {
		return false
	}
	w, h := int(tw), int(th)
	if int64(w)*int64(h) > math.MaxInt64/maxBytesPerPixel/2 {
		return false
	}
	if (w-d.width > 16 || h-d.height > 16) && (w > 1024 || h > 1024) {
		return false
	}
	d.tiled, d.tileW, d.tileH = true, w, h
	d.across = (d.width + w - 1) / w
	d.down = (d.height + h - 1) / h
	n := d.across * d.down
	for tag, dst := range map[int]*[]uint{tTileOffsets: &d.offsets, tTileByteCounts: &d.counts} {
		e, ok := entries[tag]
		if !ok {
			return false
		}
		v, ok := d.values(e, n)
		if !ok {
			return false
		}
		*dst = v
	}
	return len(d.offsets) >= n && len(d.counts) >= n
}

// readTileRows decodes the next n rows into pix (stride bytes a row, rowLen of them
// pixels), decoding each row of tiles when its first row is reached.
func (d *Decoder) readTileRows(pix []byte, stride, rowLen, n int) error {
	for i := range n {
		if d.y >= d.rowY0+d.rowRows {
			if err := d.decodeTileRow(d.y / d.tileH); err != nil {
				return err
			}
		}
		off := (d.y - d.rowY0) * rowLen
		copy(pix[i*stride:i*stride+rowLen], d.rowPix[off:off+rowLen])
		d.y++
	}
	return nil
}

// decodeTileRow decodes row j of tiles into rowPix, left to right.
func (d *Decoder) decodeTileRow(j int) error {
	y0 := j * d.tileH
	rows := min(d.tileH, d.height-y0)
	rowLen := d.BytesPerPixel() * d.width
	if d.rowPix == nil {
		d.rowPix = make([]byte, rowLen*min(d.tileH, d.height))
		d.tile = make([]byte, d.tileW*d.tileH*d.samples)
	}
	d.rowY0, d.rowRows = y0, 0
	for i := range d.across {
		if err := d.decodeTile(i, j, rows, rowLen); err != nil {
			return d.firstTileError(i, j, err)
		}
	}
	d.rowRows = rows
	return nil
}

// firstTileError is the error x/image/tiff reports for a file whose tile i0 of row j0 fails
// with err, every tile before it in row order having decoded: x/image/tiff decodes the tiles
// column by column, so a tile of an earlier column further down that fails is the one it
// reports (a file with two broken tiles failed with "unexpected EOF" here and "zlib: invalid
// header" there, FuzzTileDecode). Those tiles are read and checked in its order, not decoded;
// a broken file costs at most the tiles x/image/tiff reads.
func (d *Decoder) firstTileError(i0, j0 int, err error) error {
	for i := range i0 {
		for j := j0 + 1; j < d.down; j++ {
			if e := d.checkTile(i, j); e != nil {
				return e
			}
		}
	}
	return err
}

// checkTile reads tile i of row j into d.tile and checks that it holds the pixels
// x/image/tiff needs of it (see decodeTile).
func (d *Decoder) checkTile(i, j int) error {
	rows := min(d.tileH, d.height-j*d.tileH)
	k := j*d.across + i
	got, err := d.readTile(int64(d.offsets[k]), int64(d.counts[k]))
	if err != nil {
		return err
	}
	tileRow := d.tileW * d.samples
	cols := min(d.tileW, d.width-i*d.tileW)
	need := (rows-1)*tileRow + cols*d.samples
	switch {
	case d.predictor:
		need = len(d.tile)
	case d.mode == mRGBA || d.mode == mNRGBA:
		need = rows * tileRow
	}
	if got < need {
		return errNoPixels
	}
	return nil
}

// decodeTile decodes tile i of row j, whose first rows image rows are in the image, into
// rowPix (rowLen bytes a row), as x/image/tiff decodes a padded tile: the whole tile read
// through the decompressor and a LimitReader of 8*tileW*tileH bytes to its end, the
// predictor undone over the whole tile (which must then be complete), and the pixels in the
// image copied when the tile holds them (x/image/tiff's bounds checks: up to the last pixel
// in the image for gray and RGB, the whole last row in the image for RGBA).
func (d *Decoder) decodeTile(i, j, rows, rowLen int) error {
	if err := d.checkTile(i, j); err != nil {
		return err
	}
	s := d.samples
	tileRow := d.tileW * s
	x0 := i * d.tileW
	cols := min(d.tileW, d.width-x0)
	if d.predictor {
		for r := 0; r < len(d.tile); r += tileRow {
			row := d.tile[r : r+tileRow]
			for x := s; x < len(row); x++ {
				row[x] += row[x-s]
			}
		}
	}
	bpp := d.BytesPerPixel()
	for y := range rows {
		src := d.tile[y*tileRow : y*tileRow+cols*s]
		dst := d.rowPix[y*rowLen+x0*bpp : y*rowLen+(x0+cols)*bpp]
		switch d.mode {
		case mGrayInvert:
			for x, v := range src {
				dst[x] = 0xff - v
			}
		case mRGB:
			for x := range cols {
				dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = src[3*x], src[3*x+1], src[3*x+2], 0xff
			}
		default:
			copy(dst, src)
		}
	}
	return nil
}

// readTile reads the tile of n bytes at off into d.tile as x/image/tiff reads it, returning
// how many bytes it holds (at most len(d.tile); the rest of the tile's data is read and
// dropped): uncompressed data of at most 8*tileW*tileH bytes that must all be in the file,
// or a decompressor's output up to that, read to its end, any error in it failing the tile.
func (d *Decoder) readTile(off, n int64) (int, error) {
	limit := int64(d.tileW) * int64(d.tileH) * 8
	sr := io.NewSectionReader(d.r, off, n)
	var z io.ReadCloser
	switch d.compression {
	case 0, cNone:
		if n > limit {
			return 0, errors.New("tiff: invalid format: block data size too large")
		}
		if n > 0 && off+n > d.size {
			return 0, io.ErrUnexpectedEOF
		}
		m := int(min(n, int64(len(d.tile))))
		if _, err := sr.ReadAt(d.tile[:m], 0); err != nil && (err != io.EOF || m > 0) {
			return 0, err
		}
		return m, nil
	case cLZW:
		z = lzw.NewReader(sr, lzw.MSB, 8)
	default:
		zs, err := openDeflateBlock(d, off, n, limit)
		if err != nil {
			return 0, err
		}
		z = zs
	}
	defer z.Close()
	src := io.Reader(z)
	if d.compression == cLZW {
		src = io.LimitReader(z, limit)
	}
	got := 0
	for got < len(d.tile) {
		m, err := src.Read(d.tile[got:])
		got += m
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return 0, err
		}
	}
	// x/image/tiff reads the tile to its end (or the limit): errors past the pixels count.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return 0, err
	}
	return got, nil
}

// deflateReadSize is how much of a deflate strip or tile one read of the file takes: inflate
// reads its source 4 KiB at a time (compress/zlib's unit), which through io.SectionReader
// was a pread each, 6,600 system calls and 6-9% of the CPU of a 12 MP deflate TIFF -> JPEG
// (docs/benchmarks.md). What inflate is given, and every outcome, is the same: a read error
// comes after the bytes before it, and a stream that fails is inflated again by
// compress/zlib from the file (deflateStrip).
const deflateReadSize = 64 << 10

// openDeflateBlock opens the deflate strip or tile of n bytes at off: openDeflateReused; a
// variable so the benchmarks can compare compress/zlib.
var openDeflateBlock = (*Decoder).openDeflateReused

// openDeflateReused is openDeflate for the strips or tiles of d: x/image/tiff's
// io.LimitReader(zlib.NewReader(block), limit), the same bytes and errors, inflated with
// convert/internal/inflate (compress/zlib after a broken stream), but with one inflater and
// one reader for all the blocks, Reset for each: a 12 MP file in 256x256 tiles has 192 of
// them, and a new inflate.Reader (about 40 KB) a tile would double what a tiled TIFF -> JPEG
// allocates. A reset inflater reads as a new one (TestReader_ResetSameAsNew).
func (d *Decoder) openDeflateReused(off, n, limit int64) (io.ReadCloser, error) {
	d.sr = *io.NewSectionReader(d.r, off, n)
	if d.br == nil {
		d.br = bufio.NewReaderSize(&d.sr, deflateReadSize)
	} else {
		d.br.Reset(&d.sr)
	}
	var err error
	if d.inf == nil {
		d.inf, err = inflate.NewReader(d.br)
	} else {
		err = d.inf.Reset(d.br)
	}
	if err != nil {
		// (A Reset that fails leaves d.inf closed, to be Reset again.) compress/zlib's own verdict on the header, as openDeflate asks for it.
		zr, err := zlib.NewReader(io.NewSectionReader(d.r, off, n))
		if err != nil {
			return nil, err
		}
		d.ds = deflateStrip{zr: zr, rest: io.LimitReader(zr, limit)}
		return &d.ds, nil
	}
	d.ds = deflateStrip{r: d.r, off: off, n: n, limit: limit, z: d.inf}
	return &d.ds, nil
}

// TileBufferBytes is what the decoder of a tiled file holds for its own buffers once it
// decodes (not the decompressor's state): a decoded row of tiles (BytesPerPixel()*width bytes
// a row), one tile as stored, and the tiles' offsets and byte counts. It is 0 for a striped
// file (one row as stored).
func (d *Decoder) TileBufferBytes() int64 {
	if !d.tiled {
		return 0
	}
	return int64(d.BytesPerPixel())*int64(d.width)*int64(min(d.tileH, d.height)) +
		int64(d.tileW)*int64(d.tileH)*int64(d.samples) + 16*int64(len(d.offsets))
}
