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

// pngToJPEG converts a PNG whose header readImageHeader checked to a JPEG while it decodes:
// one goroutine inflates rows with pngstream and the JPEG strips of the rows already final
// are encoded (jpegstrip, on the other cores) at the same time. The output decodes to the
// same pixels as decodePixels followed by encodeJPEG. Measured on a 12 MP photo-like PNG it
// takes about half the wall time of decoding then encoding (docs/benchmarks.md).
//
// Memory: a ring of (GOMAXPROCS+2) strips' rows (the decoded image, as decodePixels would hold
// it, when the image is one strip), plus a copy of each strip in flight, plus at most GOMAXPROCS+2 strips
// in flight (an 8-bit RGBA copy of the strip for alpha and palette images, and its JPEG
// bytes), which is less than the whole-image copy encodeJPEG makes of such images and well
// inside the png and jpeg codecs' decodeCost+encodeCost.
//
// handled is false, with nothing read from in or written to out, when pngstream leaves the
// file's layout (16-bit, interlaced, ...) to image/png: the caller then converts as usual.
// decoded, when the conversion succeeded, is called with the whole decoded image.
func pngToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options, decoded func(image.Image)) (handled bool, err error) {
	// The decoder reads through its own context, so that an encoder failure stops it too.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	src := newInputReader(dctx, in)
	// The decoder keeps a ring of rows rather than the whole image (100 MP: 381 MiB): two
	// strips' worth beyond the strip being encoded on each core, and rows go back to it as
	// soon as the strip that holds them has been copied out.
	full := image.Rect(0, 0, cfg.Width, cfg.Height)
	stripH := max(jpegstrip.StripHeight(full, false), jpegstrip.StripHeight(full, true)) // gray or not
	ring := stripH * (runtime.GOMAXPROCS(0) + 2)
	if stripH >= cfg.Height {
		ring = 0
	}
	freed := newRowGate() // rows [0, n) the strips no longer need
	var d *pngstream.Decoder
	var ok bool
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		if ring == 0 {
			d, ok, err = pngstream.NewDecoder(src)
			return err
		}
		d, ok, err = pngstream.NewRingDecoder(src, ring, func(y int) error { return freed.wait(dctx, y-ring+1) })
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	img := d.Image()
	b := img.Bounds()
	if ring = d.Ring(); ring > 0 {
		b.Max.Y = cfg.Height
	}
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return true, convert.Errorf(fmt.Errorf("header says %dx%d, the decoder allocated %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	sub, gray := pngStrips(img)
	if ring > 0 {
		sub = ringStrips(img, ring, freed)
	}
	opaque := d.Opaque()

	rows := newRowGate()
	done := make(chan error, 1)
	go func() {
		err := GuardCodec(codec.Name+" decoder", func() error { return d.Decode(rows.set) })
		rows.fail(err)
		done <- err
	}()

	encErr := jpegstrip.EncodeStrips(ctx, &convert.ContextWriter{Ctx: ctx, W: out}, b, gray, jpegOptions(opts), 0,
		func(ctx context.Context, r image.Rectangle) (image.Image, error) {
			if err := rows.wait(ctx, r.Max.Y); err != nil {
				return nil, err
			}
			if opaque {
				// Gray or RGBA with every alpha 255: what jpegSource would return after
				// scanning the strip's alpha to find that out.
				return sub(r), nil
			}
			return jpegSource(sub(r)), nil
		})
	if encErr != nil {
		stop()
	}
	decErr := <-done
	switch {
	case ctx.Err() != nil:
		return true, ctx.Err()
	case decErr != nil && (encErr == nil || encErr == decErr || dctx.Err() == nil):
		// A file error the decoder found, before or after its last row, rather than the
		// decoder stopped because the encoder failed first.
		return true, decodeError(ctx, codec, src, decErr)
	}
	if encErr == nil && !opaque {
		decoded(img)
	}
	return true, encErr
}

// pngStrips returns the strips of an image pngstream is filling, as the image decodePixels
// would return would have them, and whether the JPEG is grayscale.
func pngStrips(img image.Image) (sub func(image.Rectangle) image.Image, gray bool) {
	switch m := img.(type) {
	case *image.Gray:
		return func(r image.Rectangle) image.Image { return m.SubImage(r) }, true
	case *image.Paletted:
		// Indices past the PLTE entries are opaque black once Decode has returned; the entries
		// past the palette's length already are (see pngstream's Image).
		full := *m
		full.Palette = m.Palette[:cap(m.Palette)]
		return func(r image.Rectangle) image.Image { return full.SubImage(r) }, false
	}
	si := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	return si.SubImage, false
}

// rowGate tells the strip encoders how many rows the decoder has finished.
type rowGate struct {
	mu      sync.Mutex
	rows    int
	err     error
	changed chan struct{} // closed and replaced whenever rows or err change
}

func newRowGate() *rowGate { return &rowGate{changed: make(chan struct{})} }

// set records that rows [0, n) are final.
func (g *rowGate) set(n int) {
	g.mu.Lock()
	g.rows = n
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// fail records how decoding ended; waiters for rows that never came get err (or, when the
// decoder returned nil without them, an error saying so).
func (g *rowGate) fail(err error) {
	g.mu.Lock()
	if err == nil {
		err = errors.New("PNG decoder returned before its last row")
	}
	g.err = err
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// wait blocks until rows [0, n) are final, decoding failed or ctx is done.
func (g *rowGate) wait(ctx context.Context, n int) error {
	for {
		g.mu.Lock()
		rows, err, changed := g.rows, g.err, g.changed
		g.mu.Unlock()
		if rows >= n {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
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

// ringStrips returns the strips of a 100-row-or-so ring pngstream is filling as images of
// their own (copies, so the rows can be reused at once), and records each strip copied in
// freed, as the rows above the lowest strip not yet copied.
func ringStrips(img image.Image, ring int, freed *rowGate) func(image.Rectangle) image.Image {
	var mu sync.Mutex
	copied := map[int]int{} // strips copied out of order: Min.Y -> Max.Y
	released := 0
	var pal color.Palette
	if m, ok := img.(*image.Paletted); ok {
		pal = m.Palette[:cap(m.Palette)] // see pngStrips
	}
	pix, stride, bpp := ringPix(img)
	return func(r image.Rectangle) image.Image {
		w := r.Dx() * bpp
		dst := make([]byte, w*r.Dy())
		for y := r.Min.Y; y < r.Max.Y; y++ {
			slot := y % ring
			copy(dst[(y-r.Min.Y)*w:], pix[slot*stride:slot*stride+w])
		}
		mu.Lock()
		copied[r.Min.Y] = r.Max.Y
		for {
			end, ok := copied[released]
			if !ok {
				break
			}
			delete(copied, released)
			released = end
		}
		n := released
		mu.Unlock()
		freed.set(n)
		switch img.(type) {
		case *image.Gray:
			return &image.Gray{Pix: dst, Stride: w, Rect: r}
		case *image.Paletted:
			return &image.Paletted{Pix: dst, Stride: w, Rect: r, Palette: pal}
		case *image.RGBA:
			return &image.RGBA{Pix: dst, Stride: w, Rect: r}
		default:
			return &image.NRGBA{Pix: dst, Stride: w, Rect: r}
		}
	}
}

// ringPix returns the pixels of an image pngstream fills.
func ringPix(img image.Image) (pix []byte, stride, bpp int) {
	switch m := img.(type) {
	case *image.Gray:
		return m.Pix, m.Stride, 1
	case *image.Paletted:
		return m.Pix, m.Stride, 1
	case *image.RGBA:
		return m.Pix, m.Stride, 4
	case *image.NRGBA:
		return m.Pix, m.Stride, 4
	}
	panic(fmt.Sprintf("pngstream image of type %T", img))
}
