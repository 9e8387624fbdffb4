// Package jpegstrip writes a baseline JPEG on several cores: the image is cut into horizontal
// strips of whole MCU rows, each strip is encoded on its own by convert/internal/jpegenc (a
// faster copy of image/jpeg's encoder that writes the same bytes), and the strips'
// entropy-coded data are joined into one file with restart markers (DRI, RST0..RST7).
//
// This works because image/jpeg (and so jpegenc) always writes the same quantization tables
// for a quality, the standard Huffman tables, 4:2:0 colour (16x16 MCUs) or one component for
// *image.Gray (8x8 MCUs), DC prediction starting at zero, and entropy data padded with 1-bits
// before EOI: a decoder that restarts at every strip boundary reads exactly the coefficients
// image/jpeg would have written for the whole image, so the decoded pixels are identical. What
// the encoder wrote is parsed and checked for that layout on every call; a change (a Go
// upgrade that jpegenc follows) fails with ErrLayout instead of writing a wrong file.
//
// Why not a module: only the splice is ours, and it exists for measured speed: BenchmarkEncode
// on a 4000x3000 RGBA image on 2 cores, with image/jpeg per strip, took 235-239 ms per encode
// against 476-502 ms for one jpeg.Encode at load 0.9 (2.0x); about 1.8x at load 4.7. jpegenc
// per strip takes about a third of image/jpeg's CPU on top of that.
package jpegstrip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"reflect"
	"runtime"
	"sync"

	"github.com/convsvc/convsvc/convert/internal/jpegenc"
	"github.com/convsvc/convsvc/convert/internal/rowcount"
)

// ErrLayout reports that image/jpeg's output is not laid out the way the splice relies on.
var ErrLayout = errors.New("jpegstrip: unexpected image/jpeg output layout")

// stripPixels is the number of pixels a strip aims at. Smaller strips let a streaming decoder
// hand over work sooner and shorten the tail after its last row; each strip costs a few
// microseconds of headers. BenchmarkEncode at 4000x3000: 1 to 16 MCU rows per strip all took
// 230-360 ms, with run-to-run spread larger than the differences; this default (4 rows
// there) was the fastest or within 5% of it in every run.
const stripPixels = 256 << 10

// Strip heights, in MCU rows, stay within these bounds whatever the width.
const (
	minStripMCURows = 2
	maxStripMCURows = 8
)

// Encode writes img to w as a JPEG with options o (nil: image/jpeg's defaults). The decoded
// pixels are identical to those of jpeg.Encode(w, img, o), and the output bytes do not depend
// on scheduling. Up to workers strips are encoded at once (0 or less: runtime.GOMAXPROCS(0));
// at most workers+2 encoded strips are held in memory, and they are written in order as they
// complete. Images image/jpeg writes as one strip, images whose SubImage does not return
// their own type, and images image/jpeg refuses are encoded by jpegenc.Encode directly.
func Encode(ctx context.Context, w io.Writer, img image.Image, o *jpeg.Options, workers int) error {
	return encode(ctx, w, img, o, workers, 0)
}

// encode is Encode with the strip height in MCU rows set (0: chosen from the width); tests
// use it to cut small images into many strips.
func encode(ctx context.Context, w io.Writer, img image.Image, o *jpeg.Options, workers, mcuRows int) error {
	b := img.Bounds()
	_, gray := img.(*image.Gray)
	si, ok := img.(subImager)
	if !ok || reflect.TypeOf(si.SubImage(b)) != reflect.TypeOf(img) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return jpegenc.Encode(w, img, o)
	}
	return encodeStrips(ctx, w, b, gray, o, workers, func(_ context.Context, r image.Rectangle) (image.Image, error) {
		return si.SubImage(r), nil
	}, nil, mcuRows)
}

// EncodeStrips writes a JPEG of bounds b, whose pixels strip(ctx, r) supplies one horizontal
// strip r at a time: an *image.Gray for every strip when gray is set, otherwise any type
// image/jpeg writes with three components (*image.RGBA and *image.YCbCr are its fast paths),
// with bounds r. The decoded pixels are those of jpeg.Encode of the image the strips make up.
//
// strip is called once per strip, from up to workers goroutines at once; strips are handed
// out top to bottom, so a strip is asked for only once every strip above it has been. It may
// block until the rows it needs are ready, and must return promptly once its ctx is done. Its first error stops the encode and is returned
// as is; a panic in it or in image/jpeg is returned as an error. Other than that, EncodeStrips
// behaves like Encode. Images of one strip are encoded by jpegenc.Encode of strip(ctx, b).
func EncodeStrips(ctx context.Context, w io.Writer, b image.Rectangle, gray bool, o *jpeg.Options, workers int,
	strip func(ctx context.Context, r image.Rectangle) (image.Image, error)) error {
	return encodeStrips(ctx, w, b, gray, o, workers, strip, nil, 0)
}

// EncodeStripsRelease is EncodeStrips that also calls release(img) (when not nil) for every
// image strip returned, from the same goroutine, once the encoder is done with it, whether
// the encode of that strip succeeded or not: the caller can reuse the strip's memory for a
// later one. At most workers strips are held between strip and release.
func EncodeStripsRelease(ctx context.Context, w io.Writer, b image.Rectangle, gray bool, o *jpeg.Options, workers int,
	strip func(ctx context.Context, r image.Rectangle) (image.Image, error), release func(image.Image)) error {
	return encodeStrips(ctx, w, b, gray, o, workers, strip, release, 0)
}

// StripHeight is how many rows each strip EncodeStrips asks for has when it encodes an image
// of bounds b (the last strip may have fewer): b.Dy() when it encodes the image in one piece.
// A caller streaming rows through a buffer holds at least this many.
func StripHeight(b image.Rectangle, gray bool) int {
	if !b.Empty() && b.Dx() < 1<<16 && b.Dy() < 1<<16 {
		if p := newPlan(b, gray, 0); p.n > 1 {
			return p.stripH
		}
	}
	return b.Dy()
}

// plan is how an image is cut into strips.
type plan struct {
	b      image.Rectangle
	gray   bool
	stripH int // rows per strip, a multiple of the MCU height; the last strip takes the rest
	n      int // number of strips
	ri     int // restart interval: MCUs per strip
}

// newPlan cuts b into strips of mcuRows MCU rows (0: chosen from the width), keeping the
// restart interval within 16 bits.
func newPlan(b image.Rectangle, gray bool, mcuRows int) plan {
	mcu := 16
	if gray {
		mcu = 8
	}
	perRow := (b.Dx() + mcu - 1) / mcu
	if mcuRows <= 0 {
		mcuRows = (stripPixels + mcu*b.Dx() - 1) / (mcu * b.Dx())
		mcuRows = min(max(mcuRows, minStripMCURows), maxStripMCURows)
	}
	mcuRows = max(min(mcuRows, 0xffff/perRow), 1)
	stripH := mcuRows * mcu
	return plan{b: b, gray: gray, stripH: stripH, n: (b.Dy() + stripH - 1) / stripH, ri: mcuRows * perRow}
}

// strip returns the bounds of strip i.
func (p plan) strip(i int) image.Rectangle {
	r := p.b
	r.Min.Y = p.b.Min.Y + i*p.stripH
	r.Max.Y = min(r.Min.Y+p.stripH, p.b.Max.Y)
	return r
}

type subImager interface {
	SubImage(image.Rectangle) image.Image
}

func encodeStrips(ctx context.Context, w io.Writer, b image.Rectangle, gray bool, o *jpeg.Options, workers int,
	strip func(context.Context, image.Rectangle) (image.Image, error), release func(image.Image), mcuRows int) error {
	var p plan
	if !b.Empty() && b.Dx() < 1<<16 && b.Dy() < 1<<16 {
		p = newPlan(b, gray, mcuRows)
	}
	if p.n <= 1 {
		var img image.Image
		err := guard("jpegstrip: strip", func() (err error) {
			img, err = strip(ctx, b)
			return err
		})
		if err != nil {
			return err
		}
		if release != nil {
			defer release(img)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return jpegenc.Encode(w, img, o)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, p.n)

	ctx, cancel := context.WithCancelCause(ctx)

	// free holds the strip buffers: a strip is dispatched only with a free buffer, and its
	// buffer comes back once the strip is written, so at most cap(free) strips are in flight.
	free := make(chan *appendWriter, workers+2)
	for range cap(free) {
		free <- &appendWriter{}
	}
	results := make([]chan result, p.n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	defer func() {
		// Every goroutine returns once the strip it is encoding, if any, is done.
		cancel(errDone)
		wg.Wait()
	}()

	// The dispatcher hands out the strips in order, each with a free buffer.
	wg.Go(func() {
		defer close(jobs)
		for i := range p.n {
			var buf *appendWriter
			select {
			case buf = <-free:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{i, buf}:
			case <-ctx.Done():
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				j.buf.b = j.buf.b[:0]
				r := p.strip(j.i)
				err := guard("jpegstrip: strip", func() error {
					img, err := strip(ctx, r)
					if err != nil {
						return err
					}
					if release != nil {
						defer release(img)
					}
					if _, isGray := img.(*image.Gray); img.Bounds() != r || isGray != gray {
						return fmt.Errorf("jpegstrip: strip %v is a %T of bounds %v (gray: %v)", r, img, img.Bounds(), gray)
					}
					return jpegenc.Encode(j.buf, img, o)
				})
				if err != nil {
					cancel(err) // the first error wins, whichever strip the writer waits for
				} else {
					rowcount.Add(ctx, r.Dy()) // the job's progress (convert/image)
				}
				results[j.i] <- result{j.buf, err}
			}
		})
	}

	return write(ctx, w, p, results, free)
}

// errDone cancels the goroutines of an Encode that has returned.
var errDone = errors.New("jpegstrip: done")

type job struct {
	i   int
	buf *appendWriter
}

type result struct {
	buf *appendWriter
	err error
}

// write waits for the strips in order and writes them out as one JPEG: the first strip's
// tables with the full height, a DRI segment, its SOS header, then every strip's entropy-coded
// data followed by RSTn (or EOI after the last).
func write(ctx context.Context, w io.Writer, p plan, results []chan result, free chan<- *appendWriter) error {
	comps := 3
	if p.gray {
		comps = 1
	}
	var first layout
	for i := range p.n {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if r.err != nil {
			// A worker cancels ctx with its error before it sends it, so ctx is done here.
			// Its cause is the first error of any strip: this strip's may only be the
			// context.Canceled it saw because another strip failed first.
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return r.err
		}
		s := p.strip(i)
		l, err := parse(r.buf.b, s.Dx(), s.Dy(), comps)
		if err != nil {
			return fmt.Errorf("strip %d of %d: %w", i, p.n, err)
		}
		if i == 0 {
			// The buffer is reused for later strips: keep a copy of what they are checked against.
			first = layout{tables: bytes.Clone(l.tables), heightAt: l.heightAt, sos: bytes.Clone(l.sos)}
			head := make([]byte, 0, len(l.tables)+6+len(l.sos))
			head = append(head, l.tables...)
			head[l.heightAt], head[l.heightAt+1] = byte(p.b.Dy()>>8), byte(p.b.Dy())
			head = append(head, 0xff, markerDRI, 0, 4, byte(p.ri>>8), byte(p.ri))
			head = append(head, l.sos...)
			if _, err := w.Write(head); err != nil {
				return err
			}
		} else if err := sameTables(first, l); err != nil {
			return fmt.Errorf("strip %d of %d: %w", i, p.n, err)
		}
		// parse checked that EOI follows the data in the buffer: turn it into the strip's
		// restart marker and write both at once.
		seg := l.data[:len(l.data)+2]
		if i < p.n-1 {
			seg[len(seg)-1] = markerRST0 + byte(i%8)
		}
		if _, err := w.Write(seg); err != nil {
			return err
		}
		free <- r.buf
	}
	return nil
}

// guard runs f, turning a panic into an error.
func guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	return f()
}

// appendWriter collects what image/jpeg writes. It has the Flush and WriteByte methods
// image/jpeg looks for, so the encoder writes into it directly instead of through a bufio.Writer.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }
func (a *appendWriter) WriteByte(c byte) error      { a.b = append(a.b, c); return nil }
func (a *appendWriter) Flush() error                { return nil }
