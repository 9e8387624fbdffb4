package convert

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"strconv"
	"sync"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// JPEGQuality is the quality every JPEG output is written with.
const JPEGQuality = 85

// PNGCompression is the zlib level of every PNG output. BestSpeed was chosen by measurement
// (BenchmarkPNGCompression, 1000x1000): on a JPEG-decoded photo it encodes in 110 ms instead
// of 185 ms for output 7% larger (1.76 MB vs 1.65 MB); on a noisy one it is faster and no larger.
const PNGCompression = png.BestSpeed

// imageCodec reads and, unless encode is nil, writes one raster format.
type imageCodec struct {
	id           string
	name         string // as shown to users: "PNG"
	decodeConfig func(io.Reader) (image.Config, error)
	decode       func(ctx context.Context, r io.Reader, cfg image.Config) (image.Image, error)
	encode       func(ctx context.Context, w io.Writer, img image.Image, opts Options) error
	lossy        bool // writing this format can lose information
}

// imageCodecs lists the raster formats in registration order.
var imageCodecs = []imageCodec{
	{id: "png", name: "PNG", decodeConfig: png.DecodeConfig, decode: plainDecode(png.Decode), encode: encodePNG},
	{id: "jpeg", name: "JPEG", decodeConfig: jpeg.DecodeConfig, decode: plainDecode(jpeg.Decode), encode: encodeJPEG, lossy: true},
	{id: "gif", name: "GIF", decodeConfig: gif.DecodeConfig, decode: decodeGIF, encode: encodeGIF, lossy: true},
	{id: "bmp", name: "BMP", decodeConfig: bmp.DecodeConfig, decode: plainDecode(bmp.Decode), encode: encodeBMP},
	{id: "tiff", name: "TIFF", decodeConfig: tiff.DecodeConfig, decode: plainDecode(tiff.Decode), encode: encodeTIFF},
	{id: "webp", name: "WebP", decodeConfig: webp.DecodeConfig, decode: plainDecode(webp.Decode)},
}

func plainDecode(f func(io.Reader) (image.Image, error)) func(context.Context, io.Reader, image.Config) (image.Image, error) {
	return func(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) { return f(r) }
}

// registerImageConverters adds a direct converter for every readable raster format to every
// writable one: decoding once and encoding once beats chaining through an intermediate file.
func registerImageConverters(c *Catalog) {
	for i := range imageCodecs {
		src := &imageCodecs[i]
		for j := range imageCodecs {
			dst := &imageCodecs[j]
			if src.id == dst.id || dst.encode == nil {
				continue
			}
			c.AddConverter(Converter{From: src.id, To: dst.id, Lossy: dst.lossy, Run: imageRun(src, dst)})
		}
	}
}

func imageRun(src, dst *imageCodec) func(context.Context, *io.SectionReader, io.Writer, Params) error {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p Params) error {
		img, err := decodeImage(ctx, in, src, p.Limits.normalized())
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if img, err = resize(ctx, img, p.Options, p.Limits.normalized()); err != nil {
			return err
		}
		return dst.encode(ctx, out, img, p.Options)
	}
}

// decodeImageAs reads an image of the given format id the way every image converter does: it
// sniffs the magic bytes, reads the header and checks the pixel limit before decoding anything.
// Failures the user can act on are *Error.
func decodeImageAs(ctx context.Context, in *io.SectionReader, format string, lim Limits) (image.Image, error) {
	for i := range imageCodecs {
		if imageCodecs[i].id == format {
			return decodeImage(ctx, in, &imageCodecs[i], lim.normalized())
		}
	}
	return nil, errorf(ErrUnsupported, "%s is not a readable image format", format)
}

func decodeImage(ctx context.Context, in *io.SectionReader, codec *imageCodec, lim Limits) (image.Image, error) {
	head := make([]byte, sniffLen)
	n, err := in.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errorf(err, "could not read the input")
	}
	head = head[:n]
	if n == 0 {
		return nil, errorf(nil, "input is empty")
	}
	if id, name := sniff(head); id != codec.id {
		if name == "unrecognised data" {
			return nil, errorf(nil, "input is not a valid %s file (unrecognised data)", codec.name)
		}
		return nil, errorf(nil, "input is not a valid %s file (it looks like %s)", codec.name, name)
	}

	cfgSrc := newInputReader(ctx, in)
	cfg, err := codec.decodeConfig(cfgSrc)
	if err != nil {
		return nil, decodeError(ctx, codec, cfgSrc, err)
	}
	if err := checkPixels(cfg.Width, cfg.Height, lim); err != nil {
		return nil, err
	}
	if codec.id == "tiff" {
		if err := checkTIFFTiles(in, cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	src := newInputReader(ctx, in)
	img, err := codec.decode(ctx, src, cfg)
	if err != nil {
		return nil, decodeError(ctx, codec, src, err)
	}
	// Decoders size the image from the header already checked; make sure of it.
	b := img.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, errorf(fmt.Errorf("header says %dx%d, decoded %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.name)
	}
	return img, nil
}

// checkPixels rejects dimensions that are not positive or whose product is over the limit,
// without overflowing.
func checkPixels(w, h int, lim Limits) error {
	if w <= 0 || h <= 0 {
		return errorf(nil, "image has invalid dimensions %dx%d", w, h)
	}
	if int64(w) > lim.MaxPixels/int64(h) {
		return errorf(nil, "image is %dx%d = %s megapixels, over the %s megapixel limit",
			w, h, megapixels(float64(w)*float64(h)), megapixels(float64(lim.MaxPixels)))
	}
	return nil
}

// megapixels formats a pixel count in megapixels: two decimals at most, or two significant
// digits for tiny limits.
func megapixels(px float64) string {
	if px < 1e4 {
		return strconv.FormatFloat(px/1e6, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Floor(px/1e4)/100, 'f', -1, 64)
}

// decodeError turns a codec's error into an *Error the user can read.
func decodeError(ctx context.Context, codec *imageCodec, r *inputReader, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if r.err != nil {
		// The file itself could not be read: our problem, not the user's.
		return errorf(r.err, "could not read the input")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errorf(err, "input is not a valid %s file (it is truncated)", codec.name)
	}
	return errorf(err, "input is not a valid %s file (%v)", codec.name, err)
}

// inputReader reads the input from the start, checking ctx on every read and remembering read
// errors (as opposed to the end of the data) so they are not blamed on the file's content.
// It is also an io.ReaderAt, which the TIFF decoder uses instead of buffering the whole file.
type inputReader struct {
	ctx context.Context
	sr  *io.SectionReader
	br  *bufio.Reader
	err error
}

func newInputReader(ctx context.Context, in *io.SectionReader) *inputReader {
	r := &inputReader{ctx: ctx, sr: io.NewSectionReader(in, 0, in.Size())}
	r.br = bufio.NewReaderSize(readerFunc(r.readRaw), 64<<10)
	return r
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func (r *inputReader) readRaw(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.sr.Read(p)
	r.note(err)
	return n, err
}

func (r *inputReader) note(err error) {
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
}

// Read reads through a buffer.
func (r *inputReader) Read(p []byte) (int, error) { return r.br.Read(p) }

// ReadByte lets decoders that want an io.ByteReader skip their own buffering.
func (r *inputReader) ReadByte() (byte, error) { return r.br.ReadByte() }

// ReadAt reads at an offset, bypassing the buffer.
func (r *inputReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.sr.ReadAt(p, off)
	r.note(err)
	return n, err
}

// checkTIFFTiles rejects tiles out of proportion to the image: x/image/tiff lets each tile
// decompress to tileWidth*tileHeight*8 bytes, so a 1x1 image claiming a 65535x65535 tile
// could inflate gigabytes out of a small deflate stream. Only the first IFD is read.
func checkTIFFTiles(in *io.SectionReader, cfg image.Config) error {
	var hdr [8]byte
	if _, err := in.ReadAt(hdr[:], 0); err != nil {
		return nil // the decoder reports it
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if hdr[0] == 'M' {
		bo = binary.BigEndian
	}
	off := int64(bo.Uint32(hdr[4:]))
	var cnt [2]byte
	if _, err := in.ReadAt(cnt[:], off); err != nil {
		return nil
	}
	n := int(bo.Uint16(cnt[:]))
	entries := make([]byte, 12*n)
	if _, err := in.ReadAt(entries, off+2); err != nil {
		return nil
	}
	var tw, th int64
	for i := 0; i < n; i++ {
		e := entries[12*i:]
		tag, typ := bo.Uint16(e), bo.Uint16(e[2:])
		var v int64
		switch typ {
		case 3: // SHORT
			v = int64(bo.Uint16(e[8:]))
		case 4: // LONG
			v = int64(bo.Uint32(e[8:]))
		default:
			continue
		}
		switch tag {
		case 322:
			tw = v
		case 323:
			th = v
		}
	}
	if tw == 0 && th == 0 {
		return nil
	}
	limit := max(int64(cfg.Width+16)*int64(cfg.Height+16), 1<<16)
	if tw <= 0 || th <= 0 || tw > limit/th {
		return errorf(nil, "input is not a valid TIFF file (its %dx%d tiles are out of proportion to the %dx%d image)",
			tw, th, cfg.Width, cfg.Height)
	}
	return nil
}

// decodeGIF decodes only the first frame, laid on a canvas of the logical screen's size so the
// result has the size the header announced.
func decodeGIF(_ context.Context, r io.Reader, cfg image.Config) (image.Image, error) {
	img, err := gif.Decode(r)
	if err != nil {
		return nil, err
	}
	screen := image.Rect(0, 0, cfg.Width, cfg.Height)
	if img.Bounds() == screen {
		return img, nil
	}
	canvas := image.NewNRGBA(screen)
	draw.Draw(canvas, img.Bounds(), img, img.Bounds().Min, draw.Src)
	return canvas, nil
}

var pngBuffers = &pngBufferPool{}

// pngBufferPool lets PNG encodes reuse their large zlib and row buffers.
type pngBufferPool struct{ p sync.Pool }

func (b *pngBufferPool) Get() *png.EncoderBuffer {
	eb, _ := b.p.Get().(*png.EncoderBuffer)
	return eb
}

func (b *pngBufferPool) Put(eb *png.EncoderBuffer) { b.p.Put(eb) }

func encodePNG(ctx context.Context, w io.Writer, img image.Image, _ Options) error {
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		// 16-bit sources stay 16-bit: PNG holds them losslessly.
	default:
		// Anything else becomes an 8-bit layout; png.Encoder would write e.g. *image.YCbCr as 16-bit.
		img = to8bit(img)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	enc := png.Encoder{CompressionLevel: PNGCompression, BufferPool: pngBuffers}
	return enc.Encode(&ctxWriter{ctx: ctx, w: w}, img)
}

func encodeJPEG(ctx context.Context, w io.Writer, img image.Image, opts Options) error {
	switch m := img.(type) {
	case *image.Gray:
	case *image.YCbCr:
		// The encoder reads YCbCr directly.
	default:
		img = flattenWhite(to8bit(m))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	quality := JPEGQuality
	if opts.Quality != 0 {
		quality = opts.Quality
	}
	return jpeg.Encode(&ctxWriter{ctx: ctx, w: w}, img, &jpeg.Options{Quality: quality})
}

func encodeGIF(ctx context.Context, w io.Writer, img image.Image, _ Options) error {
	pm, err := toPaletted(ctx, img)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return gif.Encode(&ctxWriter{ctx: ctx, w: w}, pm, nil)
}

func encodeBMP(ctx context.Context, w io.Writer, img image.Image, _ Options) error {
	img = to8bit(img)
	switch m := img.(type) {
	case *image.Paletted:
		if !paletteOpaque(m.Palette) {
			return encodeBMPAlpha(ctx, w, palettedToNRGBA(m))
		}
	case *image.RGBA:
		if !m.Opaque() {
			return encodeBMPAlpha(ctx, w, toNRGBA(m))
		}
	case *image.NRGBA:
		if !m.Opaque() {
			return encodeBMPAlpha(ctx, w, m)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return bmp.Encode(&ctxWriter{ctx: ctx, w: w}, img)
}

// encodeBMPAlpha writes a 32-bit BMP with a BITMAPV4HEADER whose bit masks declare the alpha
// channel. x/image/bmp writes 32-bit images with the older 40-byte header, whose fourth byte
// readers (browsers, x/image itself) ignore, so transparent areas would show whatever color
// they hide.
func encodeBMPAlpha(ctx context.Context, w io.Writer, m *image.NRGBA) error {
	const headerLen = 14 + 108
	b := m.Bounds()
	width, height := b.Dx(), b.Dy()
	rowLen := 4 * width
	imageSize := int64(rowLen) * int64(height)
	if headerLen+imageSize > math.MaxUint32 {
		return errorf(nil, "image is too large for BMP")
	}
	var h [headerLen]byte
	le := binary.LittleEndian
	h[0], h[1] = 'B', 'M'
	le.PutUint32(h[2:], uint32(headerLen+imageSize)) // file size
	le.PutUint32(h[10:], headerLen)                  // pixel data offset
	le.PutUint32(h[14:], 108)                        // BITMAPV4HEADER
	le.PutUint32(h[18:], uint32(width))
	le.PutUint32(h[22:], uint32(height)) // positive: rows bottom-up
	le.PutUint16(h[26:], 1)              // planes
	le.PutUint16(h[28:], 32)             // bits per pixel
	le.PutUint32(h[30:], 3)              // BI_BITFIELDS
	le.PutUint32(h[34:], uint32(imageSize))
	le.PutUint32(h[38:], 2835) // 72 dpi
	le.PutUint32(h[42:], 2835)
	le.PutUint32(h[54:], 0x00ff0000) // red mask
	le.PutUint32(h[58:], 0x0000ff00) // green
	le.PutUint32(h[62:], 0x000000ff) // blue
	le.PutUint32(h[66:], 0xff000000) // alpha
	le.PutUint32(h[70:], 0x73524742) // LCS_sRGB
	cw := &ctxWriter{ctx: ctx, w: w}
	if _, err := cw.Write(h[:]); err != nil {
		return err
	}
	row := make([]byte, rowLen)
	for y := height - 1; y >= 0; y-- {
		src := m.Pix[y*m.Stride:]
		for i := 0; i < rowLen; i += 4 {
			row[i], row[i+1], row[i+2], row[i+3] = src[i+2], src[i+1], src[i], src[i+3]
		}
		if _, err := cw.Write(row); err != nil {
			return err
		}
	}
	return nil
}

func encodeTIFF(ctx context.Context, w io.Writer, img image.Image, _ Options) error {
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
	default:
		img = to8bit(img)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Deflate: 20-30% smaller than uncompressed on photos for about 0.1 s per megapixel. The
	// x/image encoder holds the compressed data in memory until it knows its size.
	return tiff.Encode(&ctxWriter{ctx: ctx, w: w}, img, &tiff.Options{Compression: tiff.Deflate})
}

// ctxWriter stops a streaming encoder soon after ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
