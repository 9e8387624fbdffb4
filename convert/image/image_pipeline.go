package image

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/jpegstrip"
	"github.com/convsvc/convsvc/convert/internal/pngstream"
)

// pngToJPEG converts a PNG whose header readImageHeader checked to a JPEG a strip at a time:
// one goroutine decodes the rows with pngstream into strip buffers, up to stripBuffers strips
// ahead, while jpegstrip's workers encode the strips already decoded, top to bottom, and hand
// their buffers back. The output decodes to the same pixels as decodePixels followed by
// encodeJPEG: the strips are cut where jpegstrip cuts the whole image, so it is byte for
// byte the JPEG the whole-image path writes.
//
// Memory: nothing the size of the image. At most stripBuffers strips are decoded and not yet
// encoded, each worker holds an RGBA copy of its strip over white (alpha and palette images),
// and GOMAXPROCS+2 encoded strips wait to be written: streamJPEGCost.
//
// handled is false, with nothing read from in or written to out, when pngstream leaves the
// file's layout (16-bit, interlaced, ...) to image/png: the caller then converts as usual.
// translucent, when not nil, is called once after a successful conversion of an image with
// a pixel that is not fully opaque (composited over white): the whole image is never held,
// so each strip is checked as it is decoded.
func pngToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options, translucent func()) (handled bool, err error) {
	// The decoder reads through its own context, so that an encoder failure stops it too.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	src := newInputReader(dctx, in)
	var d *pngstream.Decoder
	var ok bool
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		d, ok, err = pngstream.NewStripDecoder(src)
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	return stripsToJPEG(ctx, dctx, stop, src, d, out, codec, cfg, opts, d.Opaque(), translucent)
}

// stripDecoder is what stripsToJPEG reads the rows of an image from, a strip at a time:
// pngstream's decoder, ppmStripDecoder, tiffstrip's decoder.
type stripDecoder interface {
	// Bounds is the image's bounds, with origin 0,0.
	Bounds() image.Rectangle
	// BytesPerPixel is the size of a pixel of StripImage's images.
	BytesPerPixel() int
	// StripImage returns an image of bounds r (full-width rows) over pix.
	StripImage(pix []byte, r image.Rectangle) image.Image
	// ReadRows decodes the next rows into m, an image StripImage made.
	ReadRows(m image.Image) error
	// Finish checks what follows the last row.
	Finish() error
}

// stripsToJPEG encodes the rows d decodes to a JPEG a strip at a time (see pngToJPEG), dctx
// being the context d reads src through and stop its cancel. opaque says every pixel of d's
// images is opaque (no white compositing needed).
func stripsToJPEG(ctx, dctx context.Context, stop context.CancelFunc, src *inputReader, d stripDecoder, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options, opaque bool, translucent func()) (handled bool, err error) {
	b := d.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return true, convert.Errorf(fmt.Errorf("header says %dx%d, the decoder found %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	_, gray := d.StripImage(nil, image.Rectangle{}).(*image.Gray)
	s := newStripSource(d, b, gray, codec.Name+" decoder")
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.decode(dctx)
	}()

	encErr := jpegstrip.EncodeStripsRelease(ctx, &convert.ContextWriter{Ctx: ctx, W: out}, b, gray, jpegOptions(opts), 0,
		func(ctx context.Context, r image.Rectangle) (image.Image, error) {
			m, err := s.strip(ctx, r)
			if err != nil {
				return nil, err
			}
			if opaque {
				// Gray or RGB: what jpegSource would return after scanning the alpha.
				return m, nil
			}
			if translucent != nil && !s.sawAlpha.Load() {
				if o, ok := m.(interface{ Opaque() bool }); ok && !o.Opaque() {
					s.sawAlpha.Store(true)
				}
			}
			// What jpegSource does to the whole image, a strip at a time: an 8-bit RGBA
			// copy over white (sharing m's pixels when every one is opaque).
			img := jpegSource(m)
			s.hold(img, m)
			return img, nil
		}, s.release)
	if encErr != nil {
		stop() // the decoder may be waiting for a strip buffer the encoder will not return
	}
	<-done
	var de stripDecodeError
	switch {
	case ctx.Err() != nil:
		return true, ctx.Err()
	case errors.As(encErr, &de):
		return true, decodeError(ctx, codec, src, de.err)
	case encErr != nil:
		return true, encErr
	case s.finishErr != nil:
		// The checksums and the chunks after the image data: only then is the file sound.
		return true, decodeError(ctx, codec, src, s.finishErr)
	}
	if translucent != nil && s.sawAlpha.Load() {
		translucent()
	}
	return true, nil
}

// streamConvert converts a PNG (pngToJPEG), a binary 8-bit PGM or PPM (ppmToJPEG) or a
// baseline striped or tiled 8-bit TIFF (tiffToJPEG) to a JPEG of the same size a strip at a
// time, holding streamJPEGCost of the catalog's memory budget instead of the whole-image
// estimate; PNG and TIFF targets go to streamToPNG and streamToTIFF.
// handled is false, with the budget share returned, when the conversion is not one that
// streams (another pair, a resize or crop, an image under jpegStripMinPixels, a PNG layout
// pngstream leaves to image/png, another Netpbm or TIFF variant): the caller then converts
// the whole image under its own estimate.
//
// losses, when not nil, is called once the budget is held (the input's losses are reported
// there, as on the whole-image path); translucent is handed to pngToJPEG and tiffToJPEG.
// scratchDir (Params.ScratchDir) is where streamToTIFF spills its compressed strips.
func streamConvert(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, opts convert.Options, scratchDir string, losses, translucent func()) (handled bool, err error) {
	if dst.ID == "png" {
		return streamToPNG(ctx, c, in, out, src, dst, cfg, opts, losses) // image_topng.go
	}
	if dst.ID == "tiff" {
		return streamToTIFF(ctx, c, in, out, src, dst, cfg, opts, scratchDir, losses) // image_totiff.go
	}
	if (src.ID != "png" && src.ID != "ppm" && src.ID != "tiff") || dst.ID != "jpeg" {
		return false, nil
	}
	if w, h, box := ResizeBox(cfg.Width, cfg.Height, opts); w != cfg.Width || h != cfg.Height || box != image.Rect(0, 0, w, h) {
		return false, nil
	}
	if int64(cfg.Width)*int64(cfg.Height) < jpegStripMinPixels {
		// encodeJPEG writes such an image in one piece, not in jpegstrip's strips: the
		// whole-image path's bytes, and the image is small anyway.
		return false, nil
	}
	b := image.Rect(0, 0, cfg.Width, cfg.Height)
	gray, bpp := cfg.ColorModel == color.GrayModel, 4
	if _, pal := cfg.ColorModel.(color.Palette); gray || pal {
		bpp = 1
	}
	if src.ID == "ppm" && !ppmStreams(in) {
		return false, nil
	}
	est := BaseConversionMemory + streamJPEGCost(b, gray, bpp)
	if src.ID == "tiff" {
		extra, stream := tiffStreamExtra(in) // a tiled TIFF's row of tiles
		if !stream {
			return false, nil
		}
		est += extra
	}
	if err := holdStreamBudget(ctx, c, est, cfg, src, dst, losses); err != nil {
		return true, err
	}
	defer c.ReleaseMemory(est)
	switch src.ID {
	case "ppm":
		return ppmToJPEG(ctx, in, out, src, cfg, opts)
	case "tiff":
		return tiffToJPEG(ctx, in, out, src, cfg, opts, translucent)
	}
	return pngToJPEG(ctx, in, out, src, cfg, opts, translucent)
}

// holdStreamBudget reserves est bytes of c's memory budget for converting an image of cfg's
// size from src to dst in strips, then reports the input's losses (losses, when not nil), as
// the whole-image path does once its budget is held. The caller releases est.
func holdStreamBudget(ctx context.Context, c *convert.Catalog, est int64, cfg image.Config, src, dst *Codec, losses func()) error {
	what := fmt.Sprintf("converting this %dx%d %s to %s", cfg.Width, cfg.Height, src.Name, dst.Name)
	if err := c.AcquireMemory(ctx, est, what); err != nil {
		return err
	}
	if losses != nil {
		losses()
	}
	return nil
}

// streamJPEGCost is what pngToJPEG holds for an image of b whose strips have bpp bytes per
// pixel, in bytes: stripBuffers decoded strips, for each of the GOMAXPROCS workers an RGBA
// copy and the encoder's working set (about 4 bytes per pixel: jpegenc's 8x8 blocks and its
// output), 2 more encoded strips waiting to be written, and the inflater's window and buffers.
func streamJPEGCost(b image.Rectangle, gray bool, bpp int) int64 {
	sh := jpegstrip.StripHeight(b, gray)
	stripPx := int64(b.Dx()) * int64(sh)
	workers := int64(runtime.GOMAXPROCS(0))
	return int64(stripBuffers())*stripPx*int64(bpp) + workers*stripPx*(4+4) + 2*stripPx*4 + 1<<20
}

// stripSource runs one pngstream decoder ahead of the JPEG strip workers: it decodes the
// strips jpegstrip asks for, in order, into at most stripBuffers strip buffers it reuses.
type stripSource struct {
	d       stripDecoder
	name    string // the decoder's name in GuardCodec's errors
	plan    image.Rectangle
	stripH  int
	bufLen  int
	results []chan decodedStrip // one per strip, buffered
	failed  chan struct{}       // closed when the decoder stops early
	free    chan []byte         // strip buffers back from the encoder
	made    int                 // strip buffers allocated so far
	// sawAlpha is set once a strip has a pixel that is not fully opaque.
	sawAlpha atomic.Bool

	mu        sync.Mutex
	held      map[image.Image]image.Image // the encoder's image -> the decoded strip it came from
	err       error                       // why the decoder stopped early
	finishErr error                       // Finish's error, set before the decoder returns
}

// stripBuffers is how many decoded strips may be waiting for or held by the encoder: enough
// for the decoder to run ahead of every worker by a strip or two, so a busy machine's
// scheduling delays do not stall it.
func stripBuffers() int { return 2*runtime.GOMAXPROCS(0) + 2 }

type decodedStrip struct {
	m   image.Image
	err error
}

func newStripSource(d stripDecoder, b image.Rectangle, gray bool, name string) *stripSource {
	sh := jpegstrip.StripHeight(b, gray)
	n := (b.Dy() + sh - 1) / sh
	s := &stripSource{d: d, name: name, plan: b, stripH: sh, bufLen: d.BytesPerPixel() * b.Dx() * sh,
		results: make([]chan decodedStrip, n), failed: make(chan struct{}),
		free: make(chan []byte, stripBuffers()), held: map[image.Image]image.Image{}}
	for i := range s.results {
		s.results[i] = make(chan decodedStrip, 1)
	}
	return s
}

// decode decodes every strip in order, then checks the rest of the file (finishErr). It
// returns early, closing failed, when a strip fails or ctx is done.
func (s *stripSource) decode(ctx context.Context) {
	fail := func(err error) {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.failed)
	}
	for i := range s.results {
		var buf []byte
		if s.made < cap(s.free) {
			select {
			case buf = <-s.free:
			default:
				buf = make([]byte, s.bufLen)
				s.made++
			}
		} else {
			select {
			case buf = <-s.free:
			case <-ctx.Done():
				fail(ctx.Err())
				return
			}
		}
		r := s.plan
		r.Min.Y = s.plan.Min.Y + i*s.stripH
		r.Max.Y = min(r.Min.Y+s.stripH, s.plan.Max.Y)
		m := s.d.StripImage(buf, r)
		if err := GuardCodec(s.name, func() error { return s.d.ReadRows(m) }); err != nil {
			err = stripDecodeError{err}
			s.results[i] <- decodedStrip{err: err}
			fail(err)
			return
		}
		s.results[i] <- decodedStrip{m: m}
	}
	err := GuardCodec(s.name, s.d.Finish)
	s.mu.Lock()
	s.finishErr = err
	s.mu.Unlock()
}

// stripDecodeError marks an error of the strip decoder, as opposed to one of the encoder or
// the output, when it comes back out of jpegstrip.
type stripDecodeError struct{ err error }

func (e stripDecodeError) Error() string { return e.err.Error() }
func (e stripDecodeError) Unwrap() error { return e.err }

// strip waits for the decoded strip r.
func (s *stripSource) strip(ctx context.Context, r image.Rectangle) (image.Image, error) {
	i := (r.Min.Y - s.plan.Min.Y) / s.stripH
	if i < 0 || i >= len(s.results) || r.Min.Y != s.plan.Min.Y+i*s.stripH {
		return nil, fmt.Errorf("strip %v is not one of the %d-row strips decoded", r, s.stripH)
	}
	select {
	case ds := <-s.results[i]:
		if ds.err != nil {
			return nil, ds.err
		}
		return ds.m, nil
	case <-s.failed:
		s.mu.Lock()
		defer s.mu.Unlock()
		return nil, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// hold records which decoded strip an image given to the encoder was made from.
func (s *stripSource) hold(img, m image.Image) {
	s.mu.Lock()
	s.held[img] = m
	s.mu.Unlock()
}

// release takes back the buffer of a strip the encoder is done with.
func (s *stripSource) release(img image.Image) {
	s.mu.Lock()
	if m, ok := s.held[img]; ok {
		delete(s.held, img)
		img = m
	}
	s.mu.Unlock()
	var pix []byte
	switch m := img.(type) {
	case *image.Gray:
		pix = m.Pix
	case *image.RGBA:
		pix = m.Pix
	case *image.NRGBA:
		pix = m.Pix
	case *image.Paletted:
		pix = m.Pix
	}
	if cap(pix) < s.bufLen {
		return
	}
	select {
	case s.free <- pix[:s.bufLen]:
	default:
	}
}

// jpegSource returns img in a layout image/jpeg encodes quickly and without alpha: Gray and
// YCbCr as they are, anything else in 8 bits over white. It works pixel by pixel, so
// converting strips gives the same pixels as converting the whole image.
func jpegSource(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.Gray, *image.YCbCr:
		// The encoder reads these directly.
		return m
	}
	return flattenWhite(To8Bit(img))
}

// jpegOptions returns the image/jpeg options of a job.
func jpegOptions(opts convert.Options) *jpeg.Options {
	quality := JPEGQuality
	if opts.Quality != 0 {
		quality = opts.Quality
	}
	return &jpeg.Options{Quality: quality}
}
