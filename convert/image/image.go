package image

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
	"slices"
	"strconv"
	"sync"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/jpegenc"
	"github.com/convsvc/convsvc/convert/internal/jpegstrip"
	"github.com/convsvc/convsvc/convert/internal/pngenc"
	"github.com/convsvc/convsvc/convert/internal/pngstream"
	"github.com/convsvc/convsvc/convert/internal/tiffenc"
)

// Version names the image family's converters' output for the conversion cache
// (convert.Converter.Version): raise it whenever a change alters what they write, so cached
// outputs of the old code are never served.
const Version = "image/1"

// JPEGQuality is the quality JPEG outputs are written with when the job sets none.
const JPEGQuality = 85

// PNGCompression is the zlib level of the PNG outputs image/png writes: 16-bit and paletted
// images (8-bit RGBA, NRGBA and Gray go through internal/pngenc, which picks its own filters and
// deflate per band of rows). BestSpeed was chosen by measurement (BenchmarkPNGCompression,
// 1000x1000): on a JPEG-decoded photo it encodes in 110 ms instead of 185 ms for output 7%
// larger (1.76 MB vs 1.65 MB); on a noisy one it is faster and no larger.
const PNGCompression = png.BestSpeed

// Codec reads and, unless Encode is nil, writes one raster format. The document family uses
// the exported fields to embed images in PDFs and to encode rendered pages.
type Codec struct {
	// ID is the format id in the catalog: "png".
	ID   string
	Name string // as shown to users: "PNG"

	// decodeConfig reads the header (size and colour model) without decoding pixels. It is
	// given an *inputReader, which codecs that need random access use as a sizedReaderAt.
	decodeConfig func(io.Reader) (image.Config, error)
	// check, when set, inspects the input's structure once the header has passed the pixel
	// limit: tiles, truncation, how far the data could expand. It reads little.
	check func(r sizedReaderAt, cfg image.Config) error
	// Decode decodes the image, or the first frame of an animation, at the header's size.
	Decode func(ctx context.Context, r io.Reader, cfg image.Config) (image.Image, error)

	// frames, when set, counts an animation's frames from the file's structure without
	// decoding any; decodeAll then decodes them all as full-canvas frames.
	frames    func(r sizedReaderAt) (int, error)
	decodeAll func(ctx context.Context, r io.Reader, cfg image.Config) (*animation, error)

	// Encode writes img in the format with the job's options; nil for formats only read.
	Encode    func(ctx context.Context, w io.Writer, img image.Image, opts convert.Options) error
	encodeAll func(ctx context.Context, w io.Writer, a *animation, opts convert.Options) error // formats that hold animations

	lossy bool // writing this format can lose information
	// MaxSide is the largest width or height the format stores; 0 means no limit of its own.
	MaxSide int
	// FitMaxSide makes outputs larger than MaxSide shrink to fit unless the job sets a size.
	FitMaxSide bool
	// maxPixels, when set, is the largest output the encoder can write whatever the limits.
	maxPixels int64

	// Memory estimates for the conversion budget, in bytes per pixel, from the peak RSS of
	// one conversion over its pixel count (TestImageMeasure, 4000x3000 photo-like images),
	// rounded up. DecodeCost covers the decoder and the decoded image; EncodeCost a copy into
	// the encoder's layout and the encoder's own buffers (losslessEncodeCost when the job asks
	// for lossless).
	DecodeCost, EncodeCost, losslessEncodeCost float64
	// FixedCost is what a codec needs whatever the size: the compiled wasm module and an
	// instance's memory.
	FixedCost int64
}

// Codecs lists the raster formats in registration order.
var Codecs = []Codec{
	{
		ID: "png", Name: "PNG", decodeConfig: png.DecodeConfig, Decode: decodePNG, Encode: encodePNG,
		DecodeCost: 5, EncodeCost: 5,
	},
	{
		ID: "jpeg", Name: "JPEG", decodeConfig: jpeg.DecodeConfig, Decode: plainDecode(jpeg.Decode), Encode: encodeJPEG,
		lossy: true, MaxSide: 65535, DecodeCost: 3, EncodeCost: 5,
	},
	{
		ID: "gif", Name: "GIF", decodeConfig: gif.DecodeConfig, Decode: decodeGIF, Encode: encodeGIF,
		frames: gifFrames, decodeAll: decodeGIFAll, encodeAll: encodeGIFAll,
		lossy: true, MaxSide: 65535, DecodeCost: 5, EncodeCost: 6,
	},
	{
		ID: "bmp", Name: "BMP", decodeConfig: bmp.DecodeConfig, check: checkBMP, Decode: plainDecode(bmp.Decode), Encode: encodeBMP,
		DecodeCost: 5, EncodeCost: 5,
	},
	{
		ID: "tiff", Name: "TIFF", decodeConfig: tiff.DecodeConfig, check: checkTIFFTiles, Decode: plainDecode(tiff.Decode), Encode: encodeTIFF,
		DecodeCost: 16, EncodeCost: 12,
	},
	{
		ID: "webp", Name: "WebP", decodeConfig: webpDecodeConfig, Decode: decodeWebP,
		frames: webpFrames, decodeAll: decodeWebPAll,
		Encode: encodeWebP, encodeAll: encodeWebPAll,
		lossy: true, MaxSide: webpMaxSide, DecodeCost: 6, EncodeCost: 28, losslessEncodeCost: 58, FixedCost: 16 << 20,
	},
	{
		ID: "avif", Name: "AVIF", decodeConfig: avifDecodeConfig, Decode: decodeAVIF, Encode: encodeAVIF,
		lossy: true, MaxSide: avifMaxSide, maxPixels: avifMaxPixels, DecodeCost: 10, EncodeCost: avifEncodeCost, FixedCost: 100 << 20,
	},
	{
		ID: "jxl", Name: "JPEG XL", decodeConfig: jxlDecodeConfig, Decode: decodeJXL,
		DecodeCost: 26, FixedCost: 50 << 20,
	},
	{
		ID: "qoi", Name: "QOI", decodeConfig: qoiDecodeConfig, check: checkQOI, Decode: decodeQOI, Encode: encodeQOI,
		DecodeCost: 5, EncodeCost: 5,
	},
	{
		ID: "ppm", Name: "Netpbm", decodeConfig: netpbmDecodeConfig, check: checkNetpbm, Decode: decodeNetpbm, Encode: encodePPM,
		DecodeCost: 8, EncodeCost: 5,
	},
	{
		ID: "ico", Name: "ICO", decodeConfig: icoDecodeConfig, Decode: decodeICO, Encode: encodeICO,
		MaxSide: 256, FitMaxSide: true, DecodeCost: 5, EncodeCost: 8,
	},
}

// BaseConversionMemory is added to every estimate: read and write buffers, small tables.
const BaseConversionMemory = 8 << 20

// decodePNG decodes with pngstream (the same image and errors as image/png in about 0.7x its
// time, for non-interlaced 8-bit files) and with image/png, from the start, for the layouts
// pngstream leaves to it.
func decodePNG(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	d, ok, err := pngstream.NewDecoder(r)
	if err != nil {
		return nil, err
	}
	if ok {
		if err := d.Decode(nil); err != nil {
			return nil, err
		}
		return d.Image(), nil
	}
	s, canSeek := r.(io.Seeker)
	if !canSeek {
		return nil, errors.New("png: cannot rewind the input for image/png")
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return png.Decode(r)
}

func plainDecode(f func(io.Reader) (image.Image, error)) func(context.Context, io.Reader, image.Config) (image.Image, error) {
	return func(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) { return f(r) }
}

// Register adds the image formats and a direct converter for every readable raster format to
// every writable one, itself included (a transform: resize, rotate, recompress): decoding once
// and encoding once beats chaining through an intermediate file.
func Register(c *convert.Catalog) {
	for _, f := range imageFormats {
		c.AddFormat(f)
	}
	for i := range Codecs {
		src := &Codecs[i]
		for j := range Codecs {
			dst := &Codecs[j]
			if dst.Encode == nil {
				continue
			}
			c.AddConverter(convert.Converter{Version: Version, From: src.ID, To: dst.ID, Lossy: dst.lossy, Run: imageRun(c, src, dst), Drops: imageDrops(src, dst), Counts: true})
		}
	}
	registerVerifiers(c)
}

// shrinksToMaxSide reports whether an upright ow x oh image (cfg stored with EXIF orientation
// orient) is larger than dst stores and the job sets no size, and then sets opts to shrink it.
func shrinksToMaxSide(cfg image.Config, orient int, dst *Codec, opts *convert.Options) (ow, oh int, shrink bool) {
	ow, oh = orientations[max(1, min(8, orient))].size(cfg.Width, cfg.Height)
	if dst.FitMaxSide && opts.Width == 0 && opts.Height == 0 && opts.Crop == nil && (ow > dst.MaxSide || oh > dst.MaxSide) {
		opts.Width, opts.Height, opts.Fit = dst.MaxSide, dst.MaxSide, convert.FitContain
		return ow, oh, true
	}
	return ow, oh, false
}

// imageRun converts one raster format to another: header and limits first, then a share of
// the catalog's memory budget, then decode, resize and encode. Animations keep their frames
// when both formats hold them; otherwise the first frame is converted.
func imageRun(c *convert.Catalog, src, dst *Codec) func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		ctx = withCatalog(ctx, c) // for encoders that reserve more memory as they go (AVIF)
		lim := p.Limits.Normalized()
		cfg, err := ReadHeader(ctx, in, src, lim)
		if err != nil {
			return err
		}
		frames := 1
		if src.frames != nil && dst.encodeAll != nil {
			if frames, err = countImageFrames(in, src, cfg, lim); err != nil {
				return err
			}
		}
		opts := p.Options
		meta := readImageMeta(in, src)
		orient := 1
		if opts.Orient() {
			orient = meta.orientation
		}
		if ow, oh, shrink := shrinksToMaxSide(cfg, orient, dst, &opts); shrink {
			p.Warn(convert.WarnImageResized, fmt.Sprintf("the %dx%d image was shrunk to fit %dx%d, the largest %s holds", ow, oh, dst.MaxSide, dst.MaxSide, dst.Name))
		}
		g, err := planGeometry(cfg.Width, cfg.Height, orient, opts)
		if err != nil {
			return err
		}
		dw, dh := g.dw, g.dh
		if err := CheckPixels(dw, dh, lim); err != nil {
			return err
		}
		if frames > 1 {
			if err := checkImageFrames(frames, dw, dh, lim); err != nil {
				return err
			}
		}
		if dst.MaxSide > 0 && (dw > dst.MaxSide || dh > dst.MaxSide) {
			return convert.Errorf(nil, "%s images are at most %dx%d pixels and this one would be %dx%d; set width and height to make it smaller",
				dst.Name, dst.MaxSide, dst.MaxSide, dw, dh)
		}
		if dst.maxPixels > 0 && int64(dw)*int64(dh) > dst.maxPixels {
			return convert.Errorf(nil, "%s images are written up to %s megapixels and this one would be %dx%d; set width and height to make it smaller",
				dst.Name, Megapixels(float64(dst.maxPixels)), dw, dh)
		}
		p.Options = opts
		// The job's progress: the input's bytes decoded, then the output's rows encoded
		// (progress.go); a strip-at-a-time stream counts both across the whole.
		prog := newImageProgress(p, in.Size(), int64(dh)*int64(frames), src, dst,
			int64(cfg.Width)*int64(cfg.Height)*int64(frames), int64(dw)*int64(dh)*int64(frames))
		sctx := prog.streaming().attach(ctx)
		ctx = prog.attach(ctx)
		fin := newFinisher(src, dst, p, g, meta)
		// What the output holds beside the pixels: a max_bytes search's two buffers, a turn's copy.
		extra := int64(0)
		if opts.MaxBytes > 0 {
			extra += 2 * min(opts.MaxBytes, int64(dw)*int64(dh)*4+1<<16)
		}
		if !g.t.identity() {
			extra += int64(dw) * int64(dh) * 4 // the turned copy
			if !g.resizes(cfg.Width, cfg.Height) {
				extra += int64(dw) * int64(dh) * 4 // and an 8-bit copy of a decoded YCbCr or 16-bit image
			}
		}
		if fin.toSRGB != nil && !g.resizes(cfg.Width, cfg.Height) {
			extra += int64(dw) * int64(dh) * 4 // converted in an 8-bit copy of the decoded image
		}

		if frames == 1 {
			losses := func() { reportInputLosses(in, src, dst, cfg, frames, fin, p) }
			// Formats that stream convert a strip at a time, with a budget share to match; only
			// when the pixels go through unchanged but for a resize.
			if g.plain(cfg.Width, cfg.Height) && fin.colourPlain() && !fin.metadataKept() && !fin.keepICC && opts.MaxBytes == 0 && opts.Background == "" {
				if handled, err := streamConvert(sctx, c, in, out, src, dst, cfg, opts, p.ScratchDir, losses, func() { warnAlpha(src, dst, p) }); handled {
					return err
				}
			}
			// A PNG, PPM or TIFF made smaller is resampled as its strips are decoded.
			if handled, err := stripResize(ctx, c, in, out, src, dst, cfg, g, opts, extra, losses, fin.finish); handled {
				return err
			}
		}
		// Shrink-on-load: a JPEG resized to at most half its size is decoded at 1/2, 1/4 or
		// 1/8 scale, and the budget is charged for what that decode holds.
		shrink := jpegShrinkPlan{denom: 1, decodedPx: int64(cfg.Width) * int64(cfg.Height)}
		if src.ID == "jpeg" && frames == 1 {
			shrink = planJPEGShrink(in, cfg, g.box, g.rw, g.rh)
		}
		est := memoryEstimate(src, dst, frames, shrink.decodedPx, int64(dw)*int64(dh), g.resizes(cfg.Width, cfg.Height), webpLossless(opts)) + shrink.extra + extra
		what := fmt.Sprintf("converting this %dx%d %s to %s", cfg.Width, cfg.Height, src.Name, dst.Name)
		if frames > 1 {
			what = fmt.Sprintf("converting this %d-frame %dx%d %s to %s", frames, cfg.Width, cfg.Height, src.Name, dst.Name)
		}
		if err := c.AcquireMemory(ctx, est, what); err != nil {
			return err
		}
		defer c.ReleaseMemory(est)
		reportInputLosses(in, src, dst, cfg, frames, fin, p)

		if frames > 1 {
			a, err := decodeImageFrames(ctx, in, src, cfg, frames)
			if err != nil {
				return err
			}
			for i, f := range a.frames {
				if a.frames[i], err = resizeGeom(ctx, f, g, lim); err != nil {
					return err
				}
				a.frames[i] = applyD4(a.frames[i], g.t)
			}
			if dst.ID == "gif" && slices.ContainsFunc(a.frames, hasPartialAlpha) {
				warnAlpha(src, dst, p)
			}
			return dst.encodeAll(ctx, out, a, opts)
		}
		if shrink.denom > 1 {
			img, err := decodeJPEGScaled(ctx, in, src, cfg, shrink.denom)
			if err != nil {
				return err
			}
			img = fin.cmykPixels(img)
			if img, err = resizeShrunk(ctx, img, shrink.denom, g.rw, g.rh, g.box, lim); err != nil {
				return err
			}
			return fin.finish(ctx, out, img)
		}
		img, err := DecodePixels(ctx, in, src, cfg)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		img = fin.cmykPixels(img)
		if img, err = resizeGeom(ctx, img, g, lim); err != nil {
			return err
		}
		return fin.finish(ctx, out, img)
	}
}

// memoryEstimate is what a conversion reserves from the budget: the decoder's and encoder's
// per-pixel costs, plus a resized copy of every frame and the animation's frames held at once.
func memoryEstimate(src, dst *Codec, frames int, srcPx, dstPx int64, resized, lossless bool) int64 {
	encodeCost := dst.EncodeCost
	if lossless && dst.losslessEncodeCost > 0 {
		encodeCost = dst.losslessEncodeCost
	}
	est := float64(BaseConversionMemory+src.FixedCost+dst.FixedCost) +
		float64(frames)*float64(srcPx)*src.DecodeCost + float64(dstPx)*encodeCost
	if frames > 1 {
		// Every output frame is held (and, for WebP, copied into the encoder) at once.
		est += float64(frames) * float64(dstPx) * animFrameCost
	}
	if resized {
		est += float64(frames) * float64(dstPx) * 4
	}
	return int64(min(est, math.MaxInt64/2))
}

// decodeImageAs reads an image of the given format id the way every image converter does: it
// sniffs the magic bytes, reads the header and checks the pixel limit before decoding anything.
// Failures the user can act on are *Error.
func decodeImageAs(ctx context.Context, in *io.SectionReader, format string, lim convert.Limits) (image.Image, error) {
	codec := CodecByID(format)
	if codec == nil {
		return nil, convert.Errorf(convert.ErrUnsupported, "%s is not a readable image format", format)
	}
	return decodeImage(ctx, in, codec, lim.Normalized())
}

// CodecByID returns the codec of a raster format, or nil.
func CodecByID(id string) *Codec {
	for i := range Codecs {
		if Codecs[i].ID == id {
			return &Codecs[i]
		}
	}
	return nil
}

func decodeImage(ctx context.Context, in *io.SectionReader, codec *Codec, lim convert.Limits) (image.Image, error) {
	cfg, err := ReadHeader(ctx, in, codec, lim)
	if err != nil {
		return nil, err
	}
	return DecodePixels(ctx, in, codec, cfg)
}

// ReadHeader sniffs the input, reads its header and checks its size and structure; no
// pixel is decoded.
func ReadHeader(ctx context.Context, in *io.SectionReader, codec *Codec, lim convert.Limits) (image.Config, error) {
	head := make([]byte, convert.SniffLen)
	n, err := in.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return image.Config{}, convert.Errorf(err, "could not read the input")
	}
	head = head[:n]
	if n == 0 {
		return image.Config{}, convert.Errorf(nil, "input is empty")
	}
	if id, name := convert.Sniff(head); id != codec.ID {
		if name == "unrecognised data" {
			return image.Config{}, convert.Errorf(nil, "input is not a valid %s file (unrecognised data)", codec.Name)
		}
		return image.Config{}, convert.Errorf(nil, "input is not a valid %s file (it looks like %s)", codec.Name, name)
	}

	src := newInputReader(ctx, in)
	cfg, err := guardConfig(codec.decodeConfig, src)
	if err != nil {
		return image.Config{}, decodeError(ctx, codec, src, err)
	}
	if err := CheckPixels(cfg.Width, cfg.Height, lim); err != nil {
		return image.Config{}, err
	}
	if codec.check != nil {
		if err := codec.check(src, cfg); err != nil {
			return image.Config{}, decodeError(ctx, codec, src, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return image.Config{}, err
	}
	return cfg, nil
}

// DecodePixels decodes the image (or first frame) whose header readImageHeader checked.
func DecodePixels(ctx context.Context, in *io.SectionReader, codec *Codec, cfg image.Config) (image.Image, error) {
	src := newInputReader(ctx, in)
	var img image.Image
	err := GuardCodec(codec.Name+" decoder", func() (err error) {
		img, err = codec.Decode(ctx, src, cfg)
		return err
	})
	if err != nil {
		return nil, decodeError(ctx, codec, src, err)
	}
	// Decoders size the image from the header already checked; make sure of it.
	b := img.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, convert.Errorf(fmt.Errorf("header says %dx%d, decoded %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	return img, nil
}

// GuardCodec runs a codec call, turning a panic into an error: third-party decoders (and
// wasm2go-translated C, whose traps are panics) must not take the process down on a hostile file.
func GuardCodec(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s failed: %v", what, r)
		}
	}()
	return f()
}

func guardConfig(f func(io.Reader) (image.Config, error), r io.Reader) (cfg image.Config, err error) {
	err = GuardCodec("header reader", func() (err error) {
		cfg, err = f(r)
		return err
	})
	return cfg, err
}

// CheckPixels rejects dimensions that are not positive or whose product is over the limit,
// without overflowing.
func CheckPixels(w, h int, lim convert.Limits) error {
	if w <= 0 || h <= 0 {
		return convert.Errorf(nil, "image has invalid dimensions %dx%d", w, h)
	}
	if int64(w) > lim.MaxPixels/int64(h) {
		return convert.Errorf(nil, "image is %dx%d = %s megapixels, over the %s megapixel limit",
			w, h, Megapixels(float64(w)*float64(h)), Megapixels(float64(lim.MaxPixels)))
	}
	return nil
}

// Megapixels formats a pixel count in megapixels: two decimals at most, or two significant
// digits for tiny limits.
func Megapixels(px float64) string {
	if px < 1e4 {
		return strconv.FormatFloat(px/1e6, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Floor(px/1e4)/100, 'f', -1, 64)
}

// decodeError turns a codec's error into an *Error the user can read.
func decodeError(ctx context.Context, codec *Codec, r *inputReader, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ce *convert.Error
	if errors.As(err, &ce) {
		return err
	}
	if rerr := r.readErr(); rerr != nil {
		// The file itself could not be read: our problem, not the user's.
		return convert.Errorf(rerr, "could not read the input")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return convert.Errorf(err, "input is not a valid %s file (it is truncated)", codec.Name)
	}
	return convert.Errorf(err, "input is not a valid %s file (%v)", codec.Name, err)
}

// sizedReaderAt is random access to the whole input; *inputReader is one.
type sizedReaderAt interface {
	io.ReaderAt
	Size() int64
}

// inputReader reads the input from the start, checking ctx on every read and remembering read
// errors (as opposed to the end of the data) so they are not blamed on the file's content.
// It is also an io.ReaderAt and io.Seeker, which the TIFF and ICO decoders use instead of
// buffering the whole file.
type inputReader struct {
	ctx  context.Context
	sr   *io.SectionReader
	br   *bufio.Reader
	prog *imageProgress // counts the bytes read into the job's progress; nil for none

	mu  sync.Mutex // guards err: tiffstrip's Prefetch reads in several goroutines
	err error
}

// inputBufferSize is inputReader's buffer for inputs at least that large. A smaller input gets
// a buffer of its own size: a 1 KiB upload's conversion reads its header and then its pixels
// through two readers, and 64 KiB buffers for each made up half of what the server allocated
// while it started and converted small jobs (docs/benchmarks.md, table 5f).
const inputBufferSize = 64 << 10

func newInputReader(ctx context.Context, in *io.SectionReader) *inputReader {
	r := &inputReader{ctx: ctx, sr: io.NewSectionReader(in, 0, in.Size()), prog: progressFrom(ctx)}
	r.br = bufio.NewReaderSize(readerFunc(r.readRaw), int(max(min(in.Size(), inputBufferSize), 16)))
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
	r.prog.bytesRead(n)
	return n, err
}

func (r *inputReader) note(err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// readErr is the first read error noted.
func (r *inputReader) readErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
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
	r.prog.bytesRead(n)
	return n, err
}

// Size returns the length of the input.
func (r *inputReader) Size() int64 { return r.sr.Size() }

// Seek moves the position Read continues from, dropping what was buffered.
func (r *inputReader) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekCurrent {
		pos, err := r.sr.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, err
		}
		offset, whence = pos-int64(r.br.Buffered())+offset, io.SeekStart
	}
	pos, err := r.sr.Seek(offset, whence)
	r.br.Reset(readerFunc(r.readRaw))
	return pos, err
}

// checkTIFFTiles rejects tiles out of proportion to the image: x/image/tiff lets each tile
// decompress to tileWidth*tileHeight*8 bytes, so a 1x1 image claiming a 65535x65535 tile
// could inflate gigabytes out of a small deflate stream. Only the first IFD is read.
func checkTIFFTiles(in sizedReaderAt, cfg image.Config) error {
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
		return convert.Errorf(nil, "input is not a valid TIFF file (its %dx%d tiles are out of proportion to the %dx%d image)",
			tw, th, cfg.Width, cfg.Height)
	}
	return nil
}

// checkBMP rejects a BMP whose pixel data would be longer than the file: x/image/bmp reads
// only uncompressed BMPs, so the file holds every row, and a header claiming more rows than
// it carries would otherwise allocate the whole image before failing.
func checkBMP(in sizedReaderAt, cfg image.Config) error {
	var hdr [30]byte
	if _, err := in.ReadAt(hdr[:], 0); err != nil {
		return nil // the decoder reports it
	}
	offset := int64(binary.LittleEndian.Uint32(hdr[10:]))
	bpp := int64(binary.LittleEndian.Uint16(hdr[28:]))
	rowBytes := (int64(cfg.Width)*bpp + 31) / 32 * 4
	if need := offset + rowBytes*int64(cfg.Height); bpp > 0 && need > in.Size() {
		return convert.Errorf(io.ErrUnexpectedEOF, "input is not a valid BMP file (it is truncated: %dx%d pixels need %d bytes, the file has %d)",
			cfg.Width, cfg.Height, need, in.Size())
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

// PNGBuffers is shared by every PNG encode, including the document family's page renders.
var PNGBuffers = &pngBufferPool{}

// pngBufferPool lets PNG encodes reuse their large zlib and row buffers.
type pngBufferPool struct{ p sync.Pool }

func (b *pngBufferPool) Get() *png.EncoderBuffer {
	eb, _ := b.p.Get().(*png.EncoderBuffer)
	return eb
}

func (b *pngBufferPool) Put(eb *png.EncoderBuffer) { b.p.Put(eb) }

func encodePNG(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		// 16-bit sources stay 16-bit: PNG holds them losslessly.
	default:
		// Anything else becomes an 8-bit layout; png.Encoder would write e.g. *image.YCbCr as 16-bit.
		img = To8Bit(img)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	if pngenc.Supported(img) {
		// 8-bit RGBA, NRGBA and Gray (nearly every output): band-parallel, filters and deflate
		// chosen per band by content; measured 2-6x faster than image/png on 12 MP photos, output
		// 10% smaller (JPEG-decoded) to 4% larger (noise), within 0.5% on graphics
		// (internal/pngenc). The same pixels decode either way.
		return pngenc.Encode(ctx, cw, img, nil)
	}
	enc := png.Encoder{CompressionLevel: PNGCompression, BufferPool: PNGBuffers}
	return enc.Encode(cw, img)
}

// jpegStripMinPixels is the smallest image encodeJPEG encodes in parallel strips (jpegstrip);
// smaller ones go to jpegenc.Encode on one core (both write image/jpeg's bytes, jpegenc in
// about a third of its CPU). BenchmarkEncodeJPEGSize (with image/jpeg per strip), quiet 2-core
// machine: 256x256 in 1.1-1.3 ms with strips against 1.9-2.2 ms, 1000x1000 in 16-17 ms
// against 30-31 ms; with -cpu 1 (every core busy with other conversions) the strips cost the
// same as jpeg.Encode within noise at 256x256 and 512x512.
const jpegStripMinPixels = 256 * 256

func encodeJPEG(ctx context.Context, w io.Writer, img image.Image, opts convert.Options) error {
	img = jpegSource(img)
	if err := ctx.Err(); err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	if b := img.Bounds(); int64(b.Dx())*int64(b.Dy()) < jpegStripMinPixels {
		return jpegenc.Encode(cw, img, jpegOptions(opts))
	}
	return jpegstrip.Encode(ctx, cw, img, jpegOptions(opts), 0)
}

func encodeGIF(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	pm, err := toPaletted(ctx, img)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return gif.Encode(&convert.ContextWriter{Ctx: ctx, W: w}, pm, nil)
}

func encodeBMP(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	img = To8Bit(img)
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
	return bmp.Encode(&convert.ContextWriter{Ctx: ctx, W: w}, img)
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
		return convert.Errorf(nil, "image is too large for BMP")
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
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
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

func encodeTIFF(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
	default:
		img = To8Bit(img)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	if tiffenc.Supported(img) {
		// 8-bit RGBA, NRGBA and Gray: Deflate strips (with the horizontal predictor on photos)
		// compressed in parallel, RGB for opaque images; measured 2.5-6x faster than x/image/tiff
		// and 30% smaller on photos (internal/tiffenc).
		return tiffenc.Encode(ctx, cw, img, nil)
	}
	// 16-bit and paletted images: x/image/tiff, one Deflate strip held in memory until its size
	// is known.
	return tiff.Encode(cw, img, &tiff.Options{Compression: tiff.Deflate})
}
