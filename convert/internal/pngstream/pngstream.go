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

	// ring, when set (NewRingDecoder), is how many rows Image holds: row y goes to row
	// y%ring, and wait(y) is called before a row is overwritten.
	ring int
	wait func(y int) error
}

// NewDecoder reads the signature and the chunks before the first IDAT. When the file is a
// layout the fast path does not handle (interlaced, bit depth other than 8, tRNS on a
// truecolor or gray image, ...) it returns ok == false and a nil error: the caller decodes
// with image/png instead (from the start of the file). Malformed files return an error.
func NewDecoder(r io.Reader) (d *Decoder, ok bool, err error) {
	return newDecoder(&Decoder{r: r})
}

// NewRingDecoder is NewDecoder for a caller that takes the rows as they come and lets them
// go, so that an image of any height is decoded in the memory of ring rows: Image is then
// ring rows high (or the image's height, if less), row y of the file going to row y%ring,
// and Decode, before it writes row y over row y-ring, reports progress(y) and then calls
// wait(y), which must return only once the caller is done with rows below y-ring+1 (or with
// an error, which Decode returns). ring must be at least 2.
func NewRingDecoder(r io.Reader, ring int, wait func(y int) error) (d *Decoder, ok bool, err error) {
	if ring < 2 {
		return nil, false, fmt.Errorf("pngstream: a ring of %d rows", ring)
	}
	return newDecoder(&Decoder{r: r, ring: ring, wait: wait})
}

func newDecoder(d *Decoder) (_ *Decoder, ok bool, err error) {
	if err := d.checkHeader(); err != nil {
		return nil, false, eofUnexpected(err)
	}
	for d.stage != dsSeenIDAT {
		supported, err := d.parseChunk()
		if err != nil {
			return nil, false, eofUnexpected(err)
		}
		if !supported {
			return nil, false, nil
		}
	}
	if d.transparent {
		return nil, false, nil
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

// Ring is how many rows Image holds when they are reused (NewRingDecoder on an image taller
// than its ring), or 0 when Image is the whole image.
func (d *Decoder) Ring() int { return d.ring }

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
	if d.started {
		return fmt.Errorf("pngstream: Decode called twice")
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
	r := image.Rect(0, 0, d.width, d.height)
	if d.ring > 0 && d.ring < d.height {
		r.Max.Y = d.ring
	} else {
		d.ring = 0 // the whole image fits: an ordinary decode
	}
	if int64(d.width)*int64(r.Dy())*4 > maxPixBytes {
		return png.UnsupportedError(fmt.Sprintf("%dx%d image too large for the streaming decoder", d.width, d.height))
	}
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

// decodeIDAT inflates and unfilters the rows, then checks that the zlib stream and the IDAT
// data end with the last row.
func (d *Decoder) decodeIDAT(progress func(int)) error {
	zr, err := newZlib(idatReader{d})
	if err != nil {
		return err
	}
	defer zr.Close()

	var srcBpp, dstBpp int
	switch d.colorType {
	case ctGrayscale, ctPaletted:
		srcBpp, dstBpp = 1, 1
	case ctGrayscaleAlpha:
		srcBpp, dstBpp = 2, 4
	case ctTrueColor:
		srcBpp, dstBpp = 3, 4
	case ctTrueColorAlpha:
		srcBpp, dstBpp = 4, 4
	}
	rowBytes := srcBpp * d.width
	// cr is the filter byte and the filtered row as inflated; zero is the row above the first.
	cr := make([]byte, 1+rowBytes)
	zero := make([]byte, dstBpp*d.width)
	maxIndex := -1
	checkIndex := d.colorType == ctPaletted && len(d.palette) != 256

	prev := zero
	for y := 0; y < d.height; y++ {
		if _, err := io.ReadFull(zr, cr); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return png.FormatError("not enough pixel data")
			}
			return err
		}
		ft := cr[0]
		if ft > ftPaeth {
			return png.FormatError("bad filter type")
		}
		row := y
		if d.ring > 0 {
			if y >= d.ring {
				// Row y replaces row y-ring: publish what is final, then wait for the
				// caller to let it go.
				if progress != nil {
					progress(y)
				}
				if err := d.wait(y); err != nil {
					return err
				}
			}
			row = y % d.ring
		}
		dst := d.pix[row*d.stride : row*d.stride+dstBpp*d.width]
		cur := cr[1:]
		switch srcBpp {
		case 1:
			unfilter1(ft, dst, cur, prev)
			if checkIndex {
				maxIndex = max(maxIndex, int(maxByte(dst)))
			}
		case 2:
			unfilterGA(ft, dst, cur, prev)
		case 3:
			unfilterRGB(ft, dst, cur, prev)
		case 4:
			unfilter4(ft, dst, cur, prev)
		}
		prev = dst
		if progress != nil && (y+1)%progressRows == 0 && y+1 < d.height {
			progress(y + 1)
		}
	}
	if m, ok := d.img.(*image.Paletted); ok && maxIndex >= len(m.Palette) {
		m.Palette = m.Palette[:maxIndex+1]
	}
	if progress != nil {
		progress(d.height)
	}

	// Read to EOF, to verify the zlib checksum; any more data is too much.
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
