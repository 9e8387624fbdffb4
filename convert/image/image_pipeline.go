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

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/jpegstrip"
	"github.com/convsvc/convsvc/convert/internal/pngstream"
)

// pngToJPEG converts a PNG whose header readImageHeader checked to a JPEG a strip at a time:
// jpegstrip asks for strips of whole MCU rows top to bottom, each on one of its workers; the
// worker whose strip is next decodes its rows with pngstream into a strip buffer (one
// decoder, so one strip decodes while the strips above are encoded on the other cores) and
// encodes them. The output decodes to the same pixels as decodePixels followed by
// encodeJPEG: the strips are cut where jpegstrip cuts the whole image, so it is byte for
// byte the JPEG the whole-image path writes.
//
// Memory: nothing the size of the image. At most GOMAXPROCS strips are decoded and not yet
// encoded (each an 8-bit strip buffer and, for alpha and palette images, its RGBA copy over
// white), and GOMAXPROCS+2 encoded strips wait to be written: streamJPEGCost.
//
// handled is false, with nothing read from in or written to out, when pngstream leaves the
// file's layout (16-bit, interlaced, ...) to image/png: the caller then converts as usual.
func pngToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options) (handled bool, err error) {
	src := newInputReader(ctx, in)
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
	b := d.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return true, convert.Errorf(fmt.Errorf("header says %dx%d, the decoder found %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	_, gray := d.StripImage(nil, image.Rectangle{}).(*image.Gray)
	opaque := d.Opaque()
	sh := jpegstrip.StripHeight(b, gray)
	if sh == 0 {
		sh = b.Dy()
	}
	s := &stripSource{d: d, bufLen: d.BytesPerPixel() * b.Dx() * sh, changed: make(chan struct{}), held: map[image.Image][]byte{}}

	err = jpegstrip.EncodeStripsRelease(ctx, &convert.ContextWriter{Ctx: ctx, W: out}, b, gray, jpegOptions(opts), 0,
		func(ctx context.Context, r image.Rectangle) (image.Image, error) {
			m, buf, err := s.read(ctx, r)
			if err != nil {
				return nil, err
			}
			var img image.Image = m
			if !opaque {
				// What jpegSource does to the whole image, a strip at a time: an 8-bit
				// RGBA copy over white (shared with m when every pixel is opaque).
				img = jpegSource(m)
			}
			s.hold(img, buf)
			return img, nil
		}, s.release)
	var de stripDecodeError
	switch {
	case ctx.Err() != nil:
		return true, ctx.Err()
	case errors.As(err, &de):
		return true, decodeError(ctx, codec, src, de.err)
	case err != nil:
		return true, err
	}
	// The checksums and the chunks after the image data: only now is the file known sound.
	if err := GuardCodec(codec.Name+" decoder", d.Finish); err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	return true, nil
}

// streamConvert converts a PNG to a JPEG of the same size a strip at a time (pngToJPEG),
// holding streamJPEGCost of the catalog's memory budget instead of the whole-image estimate.
// handled is false, with the budget share returned, when the conversion is not one that
// streams (another pair, a resize or crop, a PNG layout pngstream leaves to image/png): the
// caller then converts the whole image under its own estimate.
func streamConvert(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, opts convert.Options) (handled bool, err error) {
	if src.ID != "png" || dst.ID != "jpeg" {
		return false, nil
	}
	if w, h, box := ResizeBox(cfg.Width, cfg.Height, opts); w != cfg.Width || h != cfg.Height || box != image.Rect(0, 0, w, h) {
		return false, nil
	}
	b := image.Rect(0, 0, cfg.Width, cfg.Height)
	gray, bpp := cfg.ColorModel == color.GrayModel, 4
	if _, pal := cfg.ColorModel.(color.Palette); gray || pal {
		bpp = 1
	}
	est := BaseConversionMemory + streamJPEGCost(b, gray, bpp)
	what := fmt.Sprintf("converting this %dx%d %s to %s", cfg.Width, cfg.Height, src.Name, dst.Name)
	if err := c.AcquireMemory(ctx, est, what); err != nil {
		return true, err
	}
	defer c.ReleaseMemory(est)
	return pngToJPEG(ctx, in, out, src, cfg, opts)
}

// streamJPEGCost is what pngToJPEG holds for an image of b whose strips have bpp bytes per
// pixel, in bytes: for each of the GOMAXPROCS workers a strip buffer, its RGBA copy and the
// encoder's working set (about 4 bytes per pixel: jpegenc's 8x8 blocks and its output), plus
// 2 more encoded strips waiting to be written, plus the inflater's window and buffers.
func streamJPEGCost(b image.Rectangle, gray bool, bpp int) int64 {
	sh := jpegstrip.StripHeight(b, gray)
	if sh == 0 {
		sh = b.Dy()
	}
	stripPx := int64(b.Dx()) * int64(sh)
	workers := int64(runtime.GOMAXPROCS(0))
	return workers*stripPx*int64(bpp+4+4) + 2*stripPx*4 + 1<<20
}

// stripSource hands the rows of one pngstream decoder to the JPEG strip workers, in order,
// in strip buffers it reuses.
type stripSource struct {
	d      *pngstream.Decoder
	bufLen int

	mu      sync.Mutex
	next    int           // the first row not decoded yet
	err     error         // the decoder's error, for every strip after it failed
	changed chan struct{} // closed and replaced whenever next or err change
	free    [][]byte      // strip buffers to reuse
	held    map[image.Image][]byte
}

// stripDecodeError marks an error of the PNG decoder, as opposed to one of the encoder or
// the output, when it comes back out of jpegstrip.
type stripDecodeError struct{ err error }

func (e stripDecodeError) Error() string { return e.err.Error() }
func (e stripDecodeError) Unwrap() error { return e.err }

// read waits until the rows above r are decoded, then decodes r's rows into a strip buffer.
func (s *stripSource) read(ctx context.Context, r image.Rectangle) (image.Image, []byte, error) {
	for {
		s.mu.Lock()
		next, err, changed := s.next, s.err, s.changed
		s.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		if next == r.Min.Y {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	// Only this goroutine's strip is next: the decoder is ours until next moves on.
	s.mu.Lock()
	var buf []byte
	if n := len(s.free); n > 0 {
		buf, s.free = s.free[n-1], s.free[:n-1]
	}
	s.mu.Unlock()
	if buf == nil {
		buf = make([]byte, s.bufLen)
	}
	m := s.d.StripImage(buf, r)
	err := GuardCodec("PNG decoder", func() error { return s.d.ReadRows(m) })
	s.mu.Lock()
	if err != nil {
		s.err = stripDecodeError{err}
		s.free = append(s.free, buf)
	} else {
		s.next = r.Max.Y
	}
	close(s.changed)
	s.changed = make(chan struct{})
	err = s.err
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	return m, buf, nil
}

// hold records which strip buffer the image given to the encoder came from.
func (s *stripSource) hold(img image.Image, buf []byte) {
	s.mu.Lock()
	s.held[img] = buf
	s.mu.Unlock()
}

// release takes back the strip buffer of an image the encoder is done with.
func (s *stripSource) release(img image.Image) {
	s.mu.Lock()
	if buf, ok := s.held[img]; ok {
		delete(s.held, img)
		s.free = append(s.free, buf)
	}
	s.mu.Unlock()
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
