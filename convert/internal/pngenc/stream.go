package pngenc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"sync"
)

// StreamEncoder writes an opaque 8-bit image as a PNG from rows handed to it a strip at a
// time, top to bottom, holding a few bands of rows instead of the image. For the same pixels
// and Options it writes the same bytes as Encode of the whole image (an opaque *image.RGBA or
// NRGBA, or an *image.Gray): it cuts the same bands, and each band's filter and deflater
// choice depends only on its own rows and the row above it.
//
// Images with alpha are not supported: Encode stores RGB or RGBA depending on whether every
// pixel of the whole image is opaque, which rows seen a strip at a time cannot decide.
type StreamEncoder struct {
	ctx  context.Context
	l    *layout
	opt  Options
	nw   int
	rows int
	cw   *chunkWriter

	y     int    // rows received so far
	prev  []byte // the stored bytes of row y-1
	cur   []byte // the band being filled: row y0-1, then rows y0..y-1
	y0    int    // first row of the band being filled
	fill4 bool   // rows come as 4 bytes per pixel (RGBA, NRGBA) and are stored as RGB

	pending chan *band
	sem     chan struct{}
	stop    chan struct{}
	wdone   chan struct{}
	wg      sync.WaitGroup
	werr    error // set by the writer goroutine before it closes stop or wdone
	closed  bool  // WriteRows refuses rows: Close was called or a band failed
	ended   bool  // Close was called
	adler   uint32
	free    chan []byte // band buffers back from the workers, reused
}

// NewStreamEncoder starts a PNG of width x height pixels on w: grayscale when gray, else RGB
// (WriteRows takes *image.RGBA or *image.NRGBA rows whose pixels are all opaque; their alpha
// is dropped). Options are as for Encode. The encoder stops soon after ctx is done.
func NewStreamEncoder(ctx context.Context, w io.Writer, width, height int, gray bool, o *Options) (*StreamEncoder, error) {
	l, err := streamLayout(width, height, gray)
	if err != nil {
		return nil, err
	}
	opt, nw, rows, err := plan(o, l)
	if err != nil {
		return nil, err
	}
	e := &StreamEncoder{ctx: ctx, l: l, opt: opt, nw: nw, rows: rows, cw: &chunkWriter{w: w}, fill4: !gray,
		pending: make(chan *band, nw), sem: make(chan struct{}, nw), stop: make(chan struct{}),
		wdone: make(chan struct{}), adler: 1, free: make(chan []byte, 2*nw+1)}
	e.cw.writeHeader(l)
	e.cw.idat([]byte{0x78, zlibFlag(opt.Level)})
	if e.cw.err != nil {
		return nil, e.cw.err
	}
	go e.write()
	return e, nil
}

// streamLayout is the layout of an opaque image of width x height: gray or RGB. Its fill is
// unused; each band gets its own (see dispatch).
func streamLayout(width, height int, gray bool) (*layout, error) {
	if width <= 0 || height <= 0 || int64(width) >= 1<<31 || int64(height) >= 1<<31 {
		return nil, fmt.Errorf("pngenc: invalid image size %dx%d", width, height)
	}
	l := &layout{w: width, h: height, bpp: 3, ct: ctRGB}
	if gray {
		l.bpp, l.ct = 1, ctGray
	}
	if int64(width)*int64(l.bpp) >= 1<<31-1 {
		return nil, fmt.Errorf("pngenc: rows of %d pixels are too long", width)
	}
	l.rowLen = width * l.bpp
	return l, nil
}

// StreamMemory is about how many bytes a StreamEncoder for such an image holds at most with
// options o: the band being filled and up to twice the workers' bands being deflated or
// waiting to be written (each with its compressed copy), each worker's band and flate state.
func StreamMemory(width, height int, gray bool, o *Options) int64 {
	l, err := streamLayout(width, height, gray)
	if err != nil {
		return 0
	}
	_, nw, rows, err := plan(o, l)
	if err != nil {
		return 0
	}
	band := int64(rows+1) * int64(l.rowLen+1)
	const flateState = 1 << 20 // a compress/flate writer is about 600 KiB, klauspost's less
	return int64(2*nw+1)*band*2 + int64(nw)*(band+2*flateState) + idatSize
}

// errEncoderFailed is returned by WriteRows after the encoder stopped for an earlier error or
// was closed, and by a second Close.
var errEncoderFailed = errors.New("pngenc: the encoder was closed or stopped after an earlier error")

// WriteRows appends the rows of m, full-width rows following those written before: an
// *image.Gray for a gray encoder, else an *image.RGBA or *image.NRGBA of opaque pixels.
func (e *StreamEncoder) WriteRows(m image.Image) error {
	if e.closed {
		return errEncoderFailed
	}
	b := m.Bounds()
	if b.Dx() != e.l.w || e.y+b.Dy() > e.l.h {
		return fmt.Errorf("pngenc: %v is not full-width rows below row %d of a %dx%d image", b, e.y, e.l.w, e.l.h)
	}
	var pix []byte
	var stride int
	switch m := m.(type) {
	case *image.Gray:
		if e.fill4 {
			return fmt.Errorf("pngenc: gray rows for an RGB encoder: %w", ErrUnsupported)
		}
		pix, stride = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride
	case *image.RGBA:
		if !e.fill4 {
			return fmt.Errorf("pngenc: RGBA rows for a gray encoder: %w", ErrUnsupported)
		}
		pix, stride = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride
	case *image.NRGBA:
		if !e.fill4 {
			return fmt.Errorf("pngenc: NRGBA rows for a gray encoder: %w", ErrUnsupported)
		}
		pix, stride = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride
	default:
		return ErrUnsupported
	}
	rl := e.l.rowLen
	for r := 0; r < b.Dy(); r++ {
		if e.cur == nil {
			e.startBand()
		}
		dst := e.cur[len(e.cur) : len(e.cur)+rl]
		src := pix[r*stride:]
		if e.fill4 {
			rgbFrom4(dst, src[:4*e.l.w])
		} else {
			copy(dst, src[:e.l.w])
		}
		e.cur = e.cur[:len(e.cur)+rl]
		e.y++
		if e.y-e.y0 == e.rows || e.y == e.l.h {
			if err := e.dispatch(); err != nil {
				e.closed = true
				return err
			}
		}
	}
	return nil
}

// startBand takes a buffer for the band starting at row y and puts the row above it first.
func (e *StreamEncoder) startBand() {
	n := (e.rows + 1) * e.l.rowLen
	var buf []byte
	select {
	case buf = <-e.free:
	default:
		buf = make([]byte, 0, n)
	}
	e.cur = buf[:e.l.rowLen]
	if e.y > 0 {
		copy(e.cur, e.prev)
	}
	e.y0 = e.y
}

// dispatch hands the filled band to a worker goroutine and queues it for the writer.
func (e *StreamEncoder) dispatch() error {
	data, y0, rl := e.cur, e.y0, e.l.rowLen
	e.cur = nil
	if cap(e.prev) < rl {
		e.prev = make([]byte, rl)
	}
	e.prev = e.prev[:rl]
	copy(e.prev, data[len(data)-rl:])
	bl := *e.l
	bl.fill = func(dst []byte, y int) {
		i := (y - y0 + 1) * rl
		copy(dst[:rl], data[i:i+rl])
	}
	bd := &band{y0: y0, y1: e.y, last: e.y == e.l.h, done: make(chan struct{})}
	select {
	case e.sem <- struct{}{}:
	case <-e.stop:
		return e.werr
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
	select {
	case e.pending <- bd:
	case <-e.stop:
		<-e.sem
		return e.werr
	case <-e.ctx.Done():
		<-e.sem
		return e.ctx.Err()
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer func() { <-e.sem }()
		defer close(bd.done)
		if err := e.ctx.Err(); err != nil {
			bd.err = err
		} else {
			bd.err = deflateBand(&bl, bd, &e.opt)
		}
		select {
		case e.free <- data[:0]:
		default:
		}
	}()
	return nil
}

// write writes the deflated bands in order; the first error stops everything.
func (e *StreamEncoder) write() {
	defer close(e.wdone)
	stopped := false
	for bd := range e.pending {
		<-bd.done
		if e.werr == nil {
			e.werr = bd.err
			if e.werr == nil {
				e.werr = e.ctx.Err()
			}
			if e.werr == nil {
				e.cw.idat(bd.out.b)
				e.adler = adler32Combine(e.adler, bd.adler, bd.n)
				e.werr = e.cw.err
			}
			if e.werr != nil && !stopped {
				stopped = true
				close(e.stop)
			}
		}
		if bd.out != nil {
			bd.out.b = bd.out.b[:0]
			outBuffers.Put(bd.out)
		}
	}
}

// Close waits for the bands in flight and, when every row was written without error, ends the
// PNG. It returns the first error of the encoder, or an error when rows are missing. It must
// be called, also after an error, so the encoder's goroutines end; later calls return
// errEncoderFailed.
func (e *StreamEncoder) Close() error {
	if e.ended {
		return errEncoderFailed
	}
	e.ended, e.closed = true, true
	close(e.pending)
	e.wg.Wait()
	<-e.wdone
	if e.werr != nil {
		return e.werr
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	if e.y != e.l.h {
		return fmt.Errorf("pngenc: closed after %d of %d rows", e.y, e.l.h)
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], e.adler)
	e.cw.idat(sum[:])
	e.cw.flushIDAT()
	e.cw.chunk("IEND", nil)
	return e.cw.err
}
