// Package tiffstrip decodes baseline striped and tiled TIFFs a strip of rows at a time, with
// nothing the size of the image allocated: chunky 8-bit gray, RGB and RGBA, uncompressed, LZW
// or deflate, predictor 1 or 2. Strips are decoded row by row; tiles a row of tiles at a time
// (tiles.go), the padding of edge tiles cropped. Every file it accepts decodes to exactly the
// pixels golang.org/x/image/tiff gives it, and fails where x/image/tiff fails: the header is
// read by x/image/tiff's rules (the same tags, types, limits and defaults), each strip or tile
// through the same decompressors and the same LimitReader, read to its end (deflate strips
// and tiles through convert/internal/inflate, with compress/zlib's bytes and errors: see
// openDeflate).
// Prefetch inflates the strips of a compressed striped file ahead, in parallel (prefetch.go).
// A file outside that subset (1- or 16-bit samples, palettes, CCITT or PackBits, anything
// unusual in the header) is left to x/image/tiff: NewDecoder returns ok false.
package tiffstrip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"math"

	"golang.org/x/image/tiff/lzw"
)

// TIFF tags, compressions and photometric interpretations read here (x/image/tiff's names).
const (
	tImageWidth                = 256
	tImageLength               = 257
	tBitsPerSample             = 258
	tCompression               = 259
	tPhotometricInterpretation = 262
	tFillOrder                 = 266
	tStripOffsets              = 273
	tRowsPerStrip              = 278
	tStripByteCounts           = 279
	tPlanarConfiguration       = 284
	tT4Options                 = 292
	tT6Options                 = 293
	tPredictor                 = 317
	tColorMap                  = 320
	tTileWidth                 = 322
	tTileLength                = 323
	tTileOffsets               = 324
	tTileByteCounts            = 325
	tExtraSamples              = 338
	tSampleFormat              = 339

	cNone       = 1
	cLZW        = 5
	cDeflate    = 8
	cDeflateOld = 32946

	pWhiteIsZero = 0
	pBlackIsZero = 1
	pRGB         = 2

	prHorizontal = 2

	ifdLen = 12
	// maxBytesPerPixel is x/image/tiff's bound on the image's size (width*height*8 fits an int).
	maxBytesPerPixel = 8
)

// mode is the layout of the decoded pixels.
type mode int

const (
	mGray       mode = iota // *image.Gray
	mGrayInvert             // *image.Gray, 255-v
	mRGB                    // *image.RGBA, opaque
	mRGBA                   // *image.RGBA, associated alpha
	mNRGBA                  // *image.NRGBA
)

// Decoder reads the rows of a striped or tiled TIFF in order: StripImage, ReadRows until
// every row is read, then Finish.
type Decoder struct {
	r             io.ReaderAt
	size          int64
	order         binary.ByteOrder
	width, height int
	mode          mode
	samples       int // 1, 3 or 4 bytes a pixel in the file
	compression   uint
	predictor     bool
	rowsPerStrip  int
	offsets       []uint
	counts        []uint

	y       int       // the next row to read
	strip   int       // the strip y is in, or -1 before the first
	src     io.Reader // the current strip's decompressed bytes (limited as x/image/tiff limits them)
	closer  io.Closer // the current strip's decompressor, if any
	row     []byte    // one row as stored
	stripY0 int       // the first row of the current strip

	tiles // the tile layout and tile-row buffer of a tiled file (tiles.go)

	pf *prefetch // strips inflated ahead by other goroutines (Prefetch), or nil
}

// NewDecoder reads the first IFD of the TIFF in r (size bytes). ok is false, with a nil
// error, when the file is not one this package decodes: the caller then uses x/image/tiff.
// A non-nil error is one x/image/tiff would report too.
func NewDecoder(r io.ReaderAt, size int64) (d *Decoder, ok bool, err error) {
	h := make([]byte, 8)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, false, nil
	}
	d = &Decoder{r: r, size: size, strip: -1}
	switch string(h[:4]) {
	case "II\x2A\x00":
		d.order = binary.LittleEndian
	case "MM\x00\x2A":
		d.order = binary.BigEndian
	default:
		return nil, false, nil
	}
	ifdOff := int64(d.order.Uint32(h[4:8]))
	if _, err := r.ReadAt(h[:2], ifdOff); err != nil {
		return nil, false, nil
	}
	n := int(d.order.Uint16(h[:2]))
	if n == 0 || int64(n)*ifdLen > size {
		return nil, false, nil
	}
	p := make([]byte, n*ifdLen)
	if _, err := r.ReadAt(p, ifdOff+2); err != nil {
		return nil, false, nil
	}
	features := map[int][]uint{}
	entries := map[int][]byte{}
	prev := -1
	for i := 0; i < len(p); i += ifdLen {
		e := p[i : i+ifdLen]
		tag := int(d.order.Uint16(e[:2]))
		if tag <= prev {
			return nil, false, nil
		}
		prev = tag
		switch tag {
		case tBitsPerSample, tExtraSamples, tPhotometricInterpretation, tCompression, tPredictor,
			tRowsPerStrip, tTileWidth, tTileLength, tImageLength, tImageWidth, tFillOrder, tT4Options,
			tT6Options, tSampleFormat:
			v, ok := d.values(e, 16)
			if !ok {
				return nil, false, nil
			}
			features[tag] = v
		case tStripOffsets, tStripByteCounts, tTileOffsets, tTileByteCounts:
			entries[tag] = e
		case tColorMap:
			return nil, false, nil
		case tPlanarConfiguration:
			if v, ok := d.values(e, 1); !ok || len(v) != 1 || v[0] != 1 {
				return nil, false, nil
			}
		}
	}
	first := func(tag int) uint {
		if v := features[tag]; len(v) > 0 {
			return v[0]
		}
		return 0
	}
	for _, v := range features[tSampleFormat] {
		if v != 1 {
			return nil, false, nil
		}
	}
	w, ht := first(tImageWidth), first(tImageLength)
	if w == 0 || ht == 0 || w > math.MaxInt32 || ht > math.MaxInt32 || int64(w)*int64(ht) > math.MaxInt64/maxBytesPerPixel/2 {
		return nil, false, nil
	}
	d.width, d.height = int(w), int(ht)
	bps, ok := features[tBitsPerSample]
	if !ok || len(bps) == 0 {
		return nil, false, nil
	}
	for _, b := range bps {
		if b != 8 {
			return nil, false, nil
		}
	}
	d.samples = len(bps)
	switch photo := first(tPhotometricInterpretation); {
	case photo == pBlackIsZero && d.samples == 1:
		d.mode = mGray
	case photo == pWhiteIsZero && d.samples == 1:
		d.mode = mGrayInvert
	case photo == pRGB && d.samples == 3:
		d.mode = mRGB
	case photo == pRGB && d.samples == 4 && first(tExtraSamples) == 1:
		d.mode = mRGBA
	case photo == pRGB && d.samples == 4 && first(tExtraSamples) == 2:
		d.mode = mNRGBA
	default:
		return nil, false, nil
	}
	switch d.compression = first(tCompression); d.compression {
	case 0, cNone, cLZW, cDeflate, cDeflateOld:
	default:
		return nil, false, nil
	}
	switch pr := first(tPredictor); pr {
	case 0, 1:
	case prHorizontal:
		d.predictor = true
	default:
		return nil, false, nil
	}
	if first(tTileWidth) != 0 { // x/image/tiff's test for a tiled file
		if !d.initTiles(first(tTileWidth), first(tTileLength), entries) {
			return nil, false, nil
		}
		return d, true, nil
	}
	_, tw := features[tTileWidth]
	_, tl := features[tTileLength]
	_, to := entries[tTileOffsets]
	_, tc := entries[tTileByteCounts]
	if tw || tl || to || tc {
		// Tile tags in a file x/image/tiff reads as striped (TileWidth 0): left to it.
		return nil, false, nil
	}
	d.rowsPerStrip = d.height
	if v := first(tRowsPerStrip); v > 0 && v < uint(d.height) {
		d.rowsPerStrip = int(v)
	}
	strips := (d.height + d.rowsPerStrip - 1) / d.rowsPerStrip
	for tag, dst := range map[int]*[]uint{tStripOffsets: &d.offsets, tStripByteCounts: &d.counts} {
		e, ok := entries[tag]
		if !ok {
			return nil, false, nil
		}
		v, ok := d.values(e, strips)
		if !ok {
			return nil, false, nil
		}
		*dst = v
	}
	if len(d.offsets) < strips || len(d.counts) < strips {
		return nil, false, nil
	}
	return d, true, nil
}

// values reads the values of an IFD entry as x/image/tiff's ifdUint does (at most maxCount of
// them; BYTE, SHORT or LONG), with ok false where it would fail. The values are read from the
// file only up to what maxCount needs, so a lying count allocates nothing.
func (d *Decoder) values(e []byte, maxCount int) (u []uint, ok bool) {
	lengths := [...]uint32{0, 1, 1, 2, 4, 8}
	dt := int(d.order.Uint16(e[2:4]))
	if dt != 1 && dt != 3 && dt != 4 {
		return nil, false
	}
	count := d.order.Uint32(e[4:8])
	if count > math.MaxInt32/lengths[dt] {
		return nil, false
	}
	n := min(int(count), maxCount)
	raw := e[8:12]
	if lengths[dt]*count > 4 {
		size := int64(lengths[dt]) * int64(n)
		off := int64(d.order.Uint32(e[8:12]))
		if off+size > d.size {
			return nil, false
		}
		raw = make([]byte, size)
		if _, err := d.r.ReadAt(raw, off); err != nil && (err != io.EOF || size > 0) {
			return nil, false
		}
	}
	u = make([]uint, n)
	for i := range u {
		switch dt {
		case 1:
			u[i] = uint(raw[i])
		case 3:
			u[i] = uint(d.order.Uint16(raw[2*i:]))
		case 4:
			u[i] = uint(d.order.Uint32(raw[4*i:]))
		}
	}
	return u, true
}

// Bounds is the image's bounds, with origin 0,0.
func (d *Decoder) Bounds() image.Rectangle { return image.Rect(0, 0, d.width, d.height) }

// Opaque says the decoded pixels are all opaque (gray and RGB).
func (d *Decoder) Opaque() bool { return d.mode == mGray || d.mode == mGrayInvert || d.mode == mRGB }

// BytesPerPixel is 1 for gray (*image.Gray), 4 otherwise (*image.RGBA, *image.NRGBA).
func (d *Decoder) BytesPerPixel() int {
	if d.samples == 1 {
		return 1
	}
	return 4
}

// RowsPerStrip is the height of the file's strips or of its rows of tiles (the last may be
// shorter).
func (d *Decoder) RowsPerStrip() int {
	if d.tiled {
		return d.tileH
	}
	return d.rowsPerStrip
}

// StripImage returns an image of the type x/image/tiff decodes the file to, with bounds r
// (full-width rows) over pix, which holds at least BytesPerPixel()*width*r.Dy() bytes.
func (d *Decoder) StripImage(pix []byte, r image.Rectangle) image.Image {
	stride := d.BytesPerPixel() * d.width
	pix = pix[:stride*r.Dy()]
	switch d.mode {
	case mGray, mGrayInvert:
		return &image.Gray{Pix: pix, Stride: stride, Rect: r}
	case mNRGBA:
		return &image.NRGBA{Pix: pix, Stride: stride, Rect: r}
	}
	return &image.RGBA{Pix: pix, Stride: stride, Rect: r}
}

// errNoPixels is x/image/tiff's error for a strip with too few bytes.
var errNoPixels = errors.New("tiff: invalid format: not enough pixel data")

// ReadRows decodes the next rows into m, an image StripImage made whose bounds start at the
// first row not yet read: afterwards its rows hold exactly what x/image/tiff's image holds.
// A TIFF strip is read to its end (as x/image/tiff reads it) once its last row is decoded.
func (d *Decoder) ReadRows(m image.Image) error {
	r := m.Bounds()
	var pix []byte
	var stride int
	switch m := m.(type) {
	case *image.Gray:
		pix, stride = m.Pix, m.Stride
	case *image.RGBA:
		pix, stride = m.Pix, m.Stride
	case *image.NRGBA:
		pix, stride = m.Pix, m.Stride
	}
	rowLen := d.BytesPerPixel() * d.width
	if pix == nil || r.Min.X != 0 || r.Max.X != d.width || r.Min.Y != d.y || r.Max.Y > d.height || stride < rowLen || len(pix) < stride*(r.Dy()-1)+rowLen {
		return fmt.Errorf("tiffstrip: ReadRows into %T %v, want rows from %d of a %dx%d image", m, r, d.y, d.width, d.height)
	}
	if d.tiled {
		return d.readTileRows(pix, stride, rowLen, r.Dy())
	}
	if d.row == nil {
		d.row = make([]byte, d.samples*d.width)
	}
	for i := range r.Dy() {
		if err := d.nextRow(pix[i*stride : i*stride+rowLen]); err != nil {
			d.closeStrip()
			d.stopPrefetch()
			return err
		}
	}
	return nil
}

// nextRow decodes row d.y into dst, opening its strip first and finishing the strip after
// its last row.
func (d *Decoder) nextRow(dst []byte) error {
	if d.pf != nil {
		return d.nextPrefetchedRow(dst)
	}
	if d.src == nil {
		if err := d.openStrip(d.y / d.rowsPerStrip); err != nil {
			return err
		}
	}
	row := d.row
	if err := readRow(d.src, row); err != nil {
		return err
	}
	d.convertRow(dst, row)
	d.y++
	if d.y == d.height || d.y-d.stripY0 == d.rowsPerStrip {
		// The rest of the strip, as x/image/tiff reads it: errors past the rows count too.
		_, err := io.Copy(io.Discard, d.src)
		d.closeStrip()
		if err != nil {
			return err
		}
	}
	return nil
}

// readRow reads the next row of a strip from src into row, with x/image/tiff's outcome: a
// strip that ends early is read to its end (an error there is its error) and is then
// errNoPixels.
func readRow(src io.Reader, row []byte) error {
	if _, err := io.ReadFull(src, row); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if _, derr := io.Copy(io.Discard, src); derr != nil {
				return derr
			}
			return errNoPixels
		}
		return err
	}
	return nil
}

// convertRow writes row, as stored (undone in place when there is a predictor), to dst in
// StripImage's layout.
func (d *Decoder) convertRow(dst, row []byte) {
	if d.predictor && d.mode == mRGB {
		predictRGB(dst, row)
	} else if d.predictor {
		n := d.samples
		for i := n; i < len(row); i++ {
			row[i] += row[i-n]
		}
	}
	switch d.mode {
	case mGray:
		copy(dst, row)
	case mGrayInvert:
		for i, v := range row {
			dst[i] = 0xff - v
		}
	case mRGB:
		if d.predictor {
			break // predictRGB wrote dst
		}
		for x := range d.width {
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = row[3*x], row[3*x+1], row[3*x+2], 0xff
		}
	default:
		copy(dst, row)
	}
}

// openStrip starts reading strip j as x/image/tiff reads it: uncompressed bytes of at most
// width*rowsPerStrip*8 that must all be in the file, or a decompressor's output up to that.
func (d *Decoder) openStrip(j int) error {
	d.stripY0 = j * d.rowsPerStrip
	src, closer, err := d.stripReader(j)
	if err != nil {
		return err
	}
	d.src, d.closer = src, closer
	d.strip = j
	return nil
}

// stripReader opens strip j (see openStrip): its bytes, and the decompressor to close after
// them, if any.
func (d *Decoder) stripReader(j int) (io.Reader, io.Closer, error) {
	off, n := int64(d.offsets[j]), int64(d.counts[j])
	limit := int64(d.width) * int64(d.rowsPerStrip) * 8
	sr := io.NewSectionReader(d.r, off, n)
	switch d.compression {
	case 0, cNone:
		if n > limit {
			return nil, nil, errors.New("tiff: invalid format: block data size too large")
		}
		if n > 0 && off+n > d.size {
			return nil, nil, io.ErrUnexpectedEOF
		}
		return sr, nil, nil
	case cLZW:
		z := lzw.NewReader(sr, lzw.MSB, 8)
		return io.LimitReader(z, limit), z, nil
	default:
		z, err := openDeflateBlock(d, off, n, limit)
		if err != nil {
			return nil, nil, err
		}
		return z, z, nil
	}
}

func (d *Decoder) closeStrip() {
	if d.closer != nil {
		d.closer.Close()
	}
	d.src, d.closer = nil, nil
}

// Finish checks that every row was read (the strips are read to their ends as the rows are).
func (d *Decoder) Finish() error {
	if d.y != d.height {
		d.stopPrefetch()
		return fmt.Errorf("tiffstrip: Finish after %d of %d rows", d.y, d.height)
	}
	return nil
}
