// Package pngstream decodes common PNG layouts row by row, so an encoder can work on the
// rows already decoded while the rest of the file is still being inflated.
//
// It handles non-interlaced 8-bit gray, RGB, palette (with or without tRNS), gray+alpha and
// RGBA files, and for those returns exactly what image/png's Decode returns: the same image
// type, bounds, Pix, Stride and Palette, and an error wherever image/png reports one (the
// chunk walk, the checks and the error values are image/png's; see reader.go in the Go tree).
// Everything else is left to image/png: NewDecoder says so with ok == false.
//
// Errors are image/png's own values (png.FormatError, png.UnsupportedError, io errors),
// unwrapped, so a caller sees the same message whichever decoder ran; only corrupt deflate
// data can be reported differently, because the inflater is convert/internal/inflate.
package pngstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/convsvc/convsvc/convert/internal/inflate"
)

// Colour types of the PNG specification.
const (
	ctGrayscale      = 0
	ctTrueColor      = 2
	ctPaletted       = 3
	ctGrayscaleAlpha = 4
	ctTrueColorAlpha = 6
)

// Decoding stages, in the order the PNG specification requires the critical chunks.
const (
	dsStart = iota
	dsSeenIHDR
	dsSeenPLTE
	dsSeentRNS
	dsSeenIDAT
	dsSeenIEND
)

const pngHeader = "\x89PNG\r\n\x1a\n"

// progressRows is how many rows Decode unfilters between two progress calls: one call wakes
// another goroutine, so not one per row; 16 is also the height of a 4:2:0 JPEG MCU row.
const progressRows = 16

// maxPixBytes bounds the pixel buffer NewDecoder allocates (4 GiB, a gigapixel of RGBA). The
// caller checks the pixel count against its own, smaller limit first; this only keeps an
// absurd header from reaching the allocator when a caller forgot to.
const maxPixBytes = 1 << 32

var chunkOrderError = png.FormatError("chunk out of order")

// newZlib opens the inflater over the IDAT stream: convert/internal/inflate, which reads the
// stream exactly as compress/zlib does (so every check that depends on how much IDAT data was
// read comes out as image/png's) and inflates these photo-like 12 MP PNGs in 0.41-0.44x
// klauspost/compress's time (BenchmarkInflate, TestMeasure, 2026-11-22). klauspost's took 0.64-0.88x
// compress/zlib's. A variable so the benchmarks and the differential tests can swap it.
var newZlib = func(r io.Reader) (io.ReadCloser, error) {
	z, err := inflate.NewReader(r)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// Decoder decodes one PNG.
type Decoder struct {
	r          io.Reader
	crc        uint32
	tmp        [3 * 256]byte
	width      int
	height     int
	depth      int
	colorType  int
	interlace  int
	stage      int
	idatLength uint32
	palette    color.Palette
	// transparent is set by a tRNS chunk on a gray or truecolor image, which image/png
	// decodes to NRGBA: not handled here.
	transparent bool

	img     image.Image
	pix     []byte
	stride  int
	started bool
	strips  bool  // made by NewStripDecoder: no Image, rows come through ReadRows
	rows    *rows // set once the first row is asked for
}

// NewDecoder reads the signature and the chunks before the first IDAT. When the file is a
// layout the fast path does not handle (interlaced, bit depth other than 8, tRNS on a
// truecolor or gray image, ...) it returns ok == false and a nil error: the caller decodes
// with image/png instead (from the start of the file). Malformed files return an error.
func NewDecoder(r io.Reader) (d *Decoder, ok bool, err error) {
	d = &Decoder{r: r}
	if ok, err := d.readToIDAT(); !ok || err != nil {
		return nil, false, err
	}
	if err := d.allocate(); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// Image is the image being filled, allocated by NewDecoder with the type and bounds
// (origin 0,0) image/png would return for the same file: *image.Gray, *image.RGBA (truecolor,
// no alpha), *image.NRGBA (truecolor+alpha, gray+alpha), *image.Paletted.
//
// An *image.Paletted's Palette can grow when Decode has unfiltered the last row: pixel
// indices beyond the PLTE entries decode as opaque black and lengthen the palette, as in
// image/png. Its capacity is always 256 and the entries beyond its length are already those
// opaque blacks, so a reader working while Decode runs should take
// p.Palette[:cap(p.Palette)] before Decode starts, or read Palette only after Decode returns.
func (d *Decoder) Image() image.Image { return d.img }

// Opaque reports whether every pixel of Image will be opaque whatever the rows hold: a gray
// or truecolor file (with a tRNS chunk, NewDecoder leaves those to image/png). A caller can
// skip scanning the alpha of rows it gets.
func (d *Decoder) Opaque() bool { return d.colorType == ctGrayscale || d.colorType == ctTrueColor }

// Decode inflates and unfilters every row into Image. After each batch of rows it calls
// progress(rowsDone) (monotonic, rowsDone counted from the top; the last call is with the
// full height) from the decoding goroutine; rows below rowsDone are final and never written
// again. It verifies CRCs and the rest of the file the way image/png does and returns the
// same kind of errors (a FormatError-like message). progress may be nil.
//
// The last progress call comes as soon as the last row is final, before the zlib checksum
// and the chunks after the image data are checked: only a nil error from Decode says the
// file was sound. Decode may be called once.
func (d *Decoder) Decode(progress func(rowsDone int)) error {
	if d.started || d.strips {
		return fmt.Errorf("pngstream: Decode called twice, or on a decoder made by NewStripDecoder")
	}
	d.started = true
	if err := d.decodeIDAT(progress); err != nil {
		return eofUnexpected(err)
	}
	if err := d.verifyChecksum(); err != nil {
		return eofUnexpected(err)
	}
	for d.stage != dsSeenIEND {
		if _, err := d.parseChunk(); err != nil {
			return eofUnexpected(err)
		}
	}
	return nil
}

// eofUnexpected turns a bare io.EOF into io.ErrUnexpectedEOF, as image/png's Decode does:
// a PNG never ends before its IEND chunk.
func eofUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *Decoder) checkHeader() error {
	if _, err := io.ReadFull(d.r, d.tmp[:len(pngHeader)]); err != nil {
		return err
	}
	if string(d.tmp[:len(pngHeader)]) != pngHeader {
		return png.FormatError("not a PNG file")
	}
	return nil
}

// parseChunk reads one chunk the way image/png's parseChunk does. Reaching the first IDAT it
// stops after the chunk's type, with idatLength set. supported is false when the chunk
// shows a layout this package leaves to image/png.
func (d *Decoder) parseChunk() (supported bool, err error) {
	if _, err := io.ReadFull(d.r, d.tmp[:8]); err != nil {
		return true, err
	}
	length := binary.BigEndian.Uint32(d.tmp[:4])
	d.crc = crc32.Update(0, crc32.IEEETable, d.tmp[4:8])
	switch string(d.tmp[4:8]) {
	case "IHDR":
		if d.stage != dsStart {
			return true, chunkOrderError
		}
		d.stage = dsSeenIHDR
		if err := d.parseIHDR(length); err != nil {
			return true, err
		}
		return d.depth == 8 && d.interlace == 0, nil
	case "PLTE":
		if d.stage != dsSeenIHDR {
			return true, chunkOrderError
		}
		d.stage = dsSeenPLTE
		return true, d.parsePLTE(length)
	case "tRNS":
		switch d.colorType {
		case ctPaletted:
			if d.stage != dsSeenPLTE {
				return true, chunkOrderError
			}
		case ctTrueColor:
			if d.stage != dsSeenIHDR && d.stage != dsSeenPLTE {
				return true, chunkOrderError
			}
		default:
			if d.stage != dsSeenIHDR {
				return true, chunkOrderError
			}
		}
		d.stage = dsSeentRNS
		return true, d.parsetRNS(length)
	case "IDAT":
		if d.stage < dsSeenIHDR || d.stage > dsSeenIDAT || (d.stage == dsSeenIHDR && d.colorType == ctPaletted) {
			return true, chunkOrderError
		}
		if d.stage != dsSeenIDAT {
			d.stage = dsSeenIDAT
			d.idatLength = length
			return true, nil
		}
		// Trailing IDAT chunks after the image data are skipped, as image/png does.
	case "IEND":
		if d.stage != dsSeenIDAT {
			return true, chunkOrderError
		}
		d.stage = dsSeenIEND
		if length != 0 {
			return true, png.FormatError("bad IEND length")
		}
		return true, d.verifyChecksum()
	}
	if length > 0x7fffffff {
		return true, png.FormatError(fmt.Sprintf("Bad chunk length: %d", length))
	}
	// Skip the chunk, checking its CRC.
	var ignored [4096]byte
	for length > 0 {
		n, err := io.ReadFull(d.r, ignored[:min(len(ignored), int(length))])
		if err != nil {
			return true, err
		}
		d.crc = crc32.Update(d.crc, crc32.IEEETable, ignored[:n])
		length -= uint32(n)
	}
	return true, d.verifyChecksum()
}

func (d *Decoder) parseIHDR(length uint32) error {
	if length != 13 {
		return png.FormatError("bad IHDR length")
	}
	if _, err := io.ReadFull(d.r, d.tmp[:13]); err != nil {
		return err
	}
	d.crc = crc32.Update(d.crc, crc32.IEEETable, d.tmp[:13])
	if d.tmp[10] != 0 {
		return png.UnsupportedError("compression method")
	}
	if d.tmp[11] != 0 {
		return png.UnsupportedError("filter method")
	}
	if d.tmp[12] != 0 && d.tmp[12] != 1 {
		return png.FormatError("invalid interlace method")
	}
	d.interlace = int(d.tmp[12])
	w := int32(binary.BigEndian.Uint32(d.tmp[0:4]))
	h := int32(binary.BigEndian.Uint32(d.tmp[4:8]))
	if w <= 0 || h <= 0 {
		return png.FormatError("non-positive dimension")
	}
	nPixels64 := int64(w) * int64(h)
	nPixels := int(nPixels64)
	if nPixels64 != int64(nPixels) || nPixels != (nPixels*8)/8 {
		return png.UnsupportedError("dimension overflow")
	}
	depth, ct := int(d.tmp[8]), int(d.tmp[9])
	valid := false
	switch depth {
	case 1, 2, 4:
		valid = ct == ctGrayscale || ct == ctPaletted
	case 8:
		valid = ct == ctGrayscale || ct == ctTrueColor || ct == ctPaletted || ct == ctGrayscaleAlpha || ct == ctTrueColorAlpha
	case 16:
		valid = ct == ctGrayscale || ct == ctTrueColor || ct == ctGrayscaleAlpha || ct == ctTrueColorAlpha
	}
	if !valid {
		return png.UnsupportedError(fmt.Sprintf("bit depth %d, color type %d", depth, ct))
	}
	d.depth, d.colorType = depth, ct
	d.width, d.height = int(w), int(h)
	return d.verifyChecksum()
}

func (d *Decoder) parsePLTE(length uint32) error {
	np := int(length / 3)
	if length%3 != 0 || np <= 0 || np > 256 || np > 1<<uint(d.depth) {
		return png.FormatError("bad PLTE length")
	}
	n, err := io.ReadFull(d.r, d.tmp[:3*np])
	if err != nil {
		return err
	}
	d.crc = crc32.Update(d.crc, crc32.IEEETable, d.tmp[:n])
	switch d.colorType {
	case ctPaletted:
		// Entries past the PLTE ones are opaque black, which is what image/png (and libpng)
		// give pixels whose index is out of range.
		d.palette = make(color.Palette, 256)
		for i := range np {
			d.palette[i] = color.RGBA{d.tmp[3*i+0], d.tmp[3*i+1], d.tmp[3*i+2], 0xff}
		}
		for i := np; i < 256; i++ {
			d.palette[i] = color.RGBA{0x00, 0x00, 0x00, 0xff}
		}
		d.palette = d.palette[:np]
	case ctTrueColor, ctTrueColorAlpha:
		// Optional and ignorable for truecolor images (PNG spec 4.1.2).
	default:
		return png.FormatError("PLTE, color type mismatch")
	}
	return d.verifyChecksum()
}

func (d *Decoder) parsetRNS(length uint32) error {
	switch d.colorType {
	case ctGrayscale, ctTrueColor:
		want := uint32(2)
		if d.colorType == ctTrueColor {
			want = 6
		}
		if length != want {
			return png.FormatError("bad tRNS length")
		}
		n, err := io.ReadFull(d.r, d.tmp[:length])
		if err != nil {
			return err
		}
		d.crc = crc32.Update(d.crc, crc32.IEEETable, d.tmp[:n])
		d.transparent = true
	case ctPaletted:
		if length > 256 {
			return png.FormatError("bad tRNS length")
		}
		n, err := io.ReadFull(d.r, d.tmp[:length])
		if err != nil {
			return err
		}
		d.crc = crc32.Update(d.crc, crc32.IEEETable, d.tmp[:n])
		if len(d.palette) < n {
			d.palette = d.palette[:n]
		}
		for i := range n {
			rgba := d.palette[i].(color.RGBA)
			d.palette[i] = color.NRGBA{rgba.R, rgba.G, rgba.B, d.tmp[i]}
		}
	default:
		return png.FormatError("tRNS, color type mismatch")
	}
	return d.verifyChecksum()
}

func (d *Decoder) verifyChecksum() error {
	if _, err := io.ReadFull(d.r, d.tmp[:4]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(d.tmp[:4]) != d.crc {
		return png.FormatError("invalid checksum")
	}
	return nil
}

// allocate makes the image image/png would return, once; the bytes per pixel of each type
// are at most 4, which the IHDR check keeps from overflowing int.
func (d *Decoder) allocate() error {
	if int64(d.width)*int64(d.height)*4 > maxPixBytes {
		return png.UnsupportedError(fmt.Sprintf("%dx%d image too large for the streaming decoder", d.width, d.height))
	}
	r := image.Rect(0, 0, d.width, d.height)
	switch d.colorType {
	case ctGrayscale:
		m := image.NewGray(r)
		d.img, d.pix, d.stride = m, m.Pix, m.Stride
	case ctTrueColor:
		m := image.NewRGBA(r)
		d.img, d.pix, d.stride = m, m.Pix, m.Stride
	case ctPaletted:
		m := image.NewPaletted(r, d.palette)
		d.img, d.pix, d.stride = m, m.Pix, m.Stride
	case ctGrayscaleAlpha, ctTrueColorAlpha:
		m := image.NewNRGBA(r)
		d.img, d.pix, d.stride = m, m.Pix, m.Stride
	}
	return nil
}

// idatReader presents the data of consecutive IDAT chunks as one stream, checking each
// chunk's CRC as it ends, exactly like image/png's decoder.Read: it returns at most the rest
// of the current chunk per call and implements no ReadByte, so the inflater wraps it in the
// same 4096-byte bufio.Reader as image/png's and consumes the file identically (which
// decides, for example, whether stray bytes after the zlib stream are noticed).
type idatReader struct{ d *Decoder }

func (ir idatReader) Read(p []byte) (int, error) {
	d := ir.d
	if len(p) == 0 {
		return 0, nil
	}
	for d.idatLength == 0 {
		// This IDAT chunk is exhausted: verify its checksum; the next chunk must be IDAT.
		if err := d.verifyChecksum(); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(d.r, d.tmp[:8]); err != nil {
			return 0, err
		}
		d.idatLength = binary.BigEndian.Uint32(d.tmp[:4])
		if string(d.tmp[4:8]) != "IDAT" {
			return 0, png.FormatError("not enough pixel data")
		}
		d.crc = crc32.Update(0, crc32.IEEETable, d.tmp[4:8])
	}
	if int(d.idatLength) < 0 {
		return 0, png.UnsupportedError("IDAT chunk length overflow")
	}
	n, err := d.r.Read(p[:min(len(p), int(d.idatLength))])
	d.crc = crc32.Update(d.crc, crc32.IEEETable, p[:n])
	d.idatLength -= uint32(n)
	return n, err
}

// rows is the state of the row-by-row inflate and unfilter, shared by Decode and ReadRows.
type rows struct {
	zr         io.ReadCloser
	cr         []byte // the filter byte and the filtered row as inflated
	prev       []byte // the row above the next one: zero before the first row, then a copy or a view
	prevCopy   []byte // ReadRows' own copy of the last row it unfiltered (strips are the caller's)
	srcBpp     int
	dstBpp     int
	y          int // rows unfiltered so far
	maxIndex   int
	checkIndex bool
}

// startRows opens the inflater over the IDAT data.
func (d *Decoder) startRows() error {
	zr, err := newZlib(idatReader{d})
	if err != nil {
		return err
	}
	rs := &rows{zr: zr, maxIndex: -1, checkIndex: d.colorType == ctPaletted && len(d.palette) != 256}
	switch d.colorType {
	case ctGrayscale, ctPaletted:
		rs.srcBpp, rs.dstBpp = 1, 1
	case ctGrayscaleAlpha:
		rs.srcBpp, rs.dstBpp = 2, 4
	case ctTrueColor:
		rs.srcBpp, rs.dstBpp = 3, 4
	case ctTrueColorAlpha:
		rs.srcBpp, rs.dstBpp = 4, 4
	}
	rs.cr = make([]byte, 1+rs.srcBpp*d.width)
	rs.prev = make([]byte, rs.dstBpp*d.width)
	d.rows = rs
	return nil
}

// nextRow inflates the next row and unfilters it into dst (dstBpp*width bytes), which then
// is the row above the one after.
func (d *Decoder) nextRow(dst []byte) error {
	rs := d.rows
	if _, err := io.ReadFull(rs.zr, rs.cr); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return png.FormatError("not enough pixel data")
		}
		return err
	}
	ft := rs.cr[0]
	if ft > ftPaeth {
		return png.FormatError("bad filter type")
	}
	cur := rs.cr[1:]
	switch rs.srcBpp {
	case 1:
		unfilter1(ft, dst, cur, rs.prev)
		if rs.checkIndex {
			rs.maxIndex = max(rs.maxIndex, int(maxByte(dst)))
		}
	case 2:
		unfilterGA(ft, dst, cur, rs.prev)
	case 3:
		unfilterRGB(ft, dst, cur, rs.prev)
	case 4:
		unfilter4(ft, dst, cur, rs.prev)
	}
	rs.prev = dst
	rs.y++
	return nil
}

// endRows checks that the zlib stream and the IDAT data end with the last row.
func (d *Decoder) endRows() error {
	zr := d.rows.zr
	defer zr.Close()
	// Read to EOF, to verify the zlib checksum; any more data is too much.
	var err error
	n := 0
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 {
			return io.ErrNoProgress
		}
		n, err = zr.Read(d.tmp[:1])
	}
	if err != nil && err != io.EOF {
		return png.FormatError(err.Error())
	}
	if n != 0 || d.idatLength != 0 {
		return png.FormatError("too much pixel data")
	}
	return nil
}

// decodeIDAT inflates and unfilters the rows, then checks that the zlib stream and the IDAT
// data end with the last row.
func (d *Decoder) decodeIDAT(progress func(int)) error {
	if err := d.startRows(); err != nil {
		return err
	}
	rowLen := d.rows.dstBpp * d.width
	for y := 0; y < d.height; y++ {
		if err := d.nextRow(d.pix[y*d.stride : y*d.stride+rowLen]); err != nil {
			d.rows.zr.Close()
			return err
		}
		if progress != nil && (y+1)%progressRows == 0 && y+1 < d.height {
			progress(y + 1)
		}
	}
	if m, ok := d.img.(*image.Paletted); ok && d.rows.maxIndex >= len(m.Palette) {
		m.Palette = m.Palette[:d.rows.maxIndex+1]
	}
	if progress != nil {
		progress(d.height)
	}
	return d.endRows()
}

// readToIDAT reads the signature and the chunks before the first IDAT; ok is false, with no
// error, for a layout this package leaves to image/png.
func (d *Decoder) readToIDAT() (ok bool, err error) {
	if err := d.checkHeader(); err != nil {
		return false, eofUnexpected(err)
	}
	for d.stage != dsSeenIDAT {
		supported, err := d.parseChunk()
		if err != nil {
			return false, eofUnexpected(err)
		}
		if !supported {
			return false, nil
		}
	}
	if d.transparent {
		return false, nil
	}
	return true, nil
}

// NewStripDecoder is NewDecoder for a caller that takes the rows a strip at a time (ReadRows,
// then Finish) instead of as one Image: nothing the size of the image is allocated, so the
// memory is that of the strips the caller keeps. It accepts and refuses the same files as
// NewDecoder, with the same errors.
func NewStripDecoder(r io.Reader) (d *Decoder, ok bool, err error) {
	d = &Decoder{r: r, strips: true}
	if ok, err := d.readToIDAT(); !ok || err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// Bounds is the image's bounds, with origin 0,0.
func (d *Decoder) Bounds() image.Rectangle { return image.Rect(0, 0, d.width, d.height) }

// BytesPerPixel is the size of a pixel in the images Image and StripImage return: 1 for
// *image.Gray and *image.Paletted, 4 for *image.RGBA and *image.NRGBA.
func (d *Decoder) BytesPerPixel() int {
	if d.colorType == ctGrayscale || d.colorType == ctPaletted {
		return 1
	}
	return 4
}

// StripImage returns an image of the type Image would have, with bounds r (rows of the full
// width) over pix, which holds at least BytesPerPixel()*width*r.Dy() bytes, with a stride of
// BytesPerPixel()*width. An *image.Paletted strip has all 256 palette entries, those past the
// PLTE ones opaque black: the colours the whole image's pixels have once Decode returned.
func (d *Decoder) StripImage(pix []byte, r image.Rectangle) image.Image {
	stride := d.BytesPerPixel() * d.width
	pix = pix[:stride*r.Dy()]
	switch d.colorType {
	case ctGrayscale:
		return &image.Gray{Pix: pix, Stride: stride, Rect: r}
	case ctTrueColor:
		return &image.RGBA{Pix: pix, Stride: stride, Rect: r}
	case ctPaletted:
		return &image.Paletted{Pix: pix, Stride: stride, Rect: r, Palette: d.palette[:cap(d.palette)]}
	}
	return &image.NRGBA{Pix: pix, Stride: stride, Rect: r}
}

// ReadRows decodes the next rows into m, an image StripImage made whose bounds start at the
// first row not yet read: afterwards its rows hold exactly what Image's rows would. The
// errors are those Decode would return for the same file at the same row. After the last
// row, call Finish. A decoder from NewDecoder cannot read rows this way.
func (d *Decoder) ReadRows(m image.Image) error {
	if !d.strips {
		return fmt.Errorf("pngstream: ReadRows on a decoder made by NewDecoder")
	}
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
	case *image.Paletted:
		pix, stride = m.Pix, m.Stride
	}
	if d.rows == nil {
		d.started = true
		if err := d.startRows(); err != nil {
			return eofUnexpected(err)
		}
	}
	rs := d.rows
	rowLen := rs.dstBpp * d.width
	if r.Min.X != 0 || r.Max.X != d.width || r.Min.Y != rs.y || r.Max.Y > d.height || stride < rowLen || len(pix) < stride*(r.Dy()-1)+rowLen {
		return fmt.Errorf("pngstream: ReadRows into %T %v, want rows from %d of a %dx%d image", m, r, rs.y, d.width, d.height)
	}
	for i := range r.Dy() {
		if err := d.nextRow(pix[i*stride : i*stride+rowLen]); err != nil {
			return eofUnexpected(err)
		}
	}
	if r.Dy() > 0 {
		// The caller may reuse the strip for later rows: keep the row above the next one.
		if rs.prevCopy == nil {
			rs.prevCopy = make([]byte, rowLen)
		}
		copy(rs.prevCopy, rs.prev)
		rs.prev = rs.prevCopy
	}
	return nil
}

// Finish checks, once ReadRows has read every row, the end of the image data and the
// chunks up to IEND, as Decode does after its last row: only a nil error from Finish says
// the file was sound.
func (d *Decoder) Finish() error {
	if d.rows == nil || d.rows.y != d.height {
		return fmt.Errorf("pngstream: Finish before the last row")
	}
	if err := d.endRows(); err != nil {
		return eofUnexpected(err)
	}
	if err := d.verifyChecksum(); err != nil {
		return eofUnexpected(err)
	}
	for d.stage != dsSeenIEND {
		if _, err := d.parseChunk(); err != nil {
			return eofUnexpected(err)
		}
	}
	return nil
}
