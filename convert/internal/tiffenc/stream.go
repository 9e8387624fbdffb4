package tiffenc

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"runtime"
	"sync"
)

// ErrFlat is what StripEncoder.WriteRows or Close returns, with nothing written, when the encoder chose
// its options (Options.Level 0) and the rows turned out to be graphics: Encode would have
// used ChosenOptions(true), not the photo options the strips were compressed with. Encoding
// the same rows again with ChosenOptions(true) gives Encode's bytes.
var ErrFlat = errors.New("tiffenc: the image is graphics; encode it again with ChosenOptions(true)")

// ChosenOptions returns the options Encode picks when Options.Level is 0: for graphics
// (flat) or for photos.
func ChosenOptions(flat bool) Options {
	if flat {
		return flatOptions
	}
	return photoOptions
}

// StripEncoder writes the same bytes as Encode from rows handed to it a few at a time, top
// to bottom, without the whole image: it packs the rows into TIFF strips, which its workers
// compress while the caller produces the next rows.
//
// Memory: Workers+2 uncompressed strips and every compressed strip, which must all be known
// before the header (the IFD offset) can be written to a plain io.Writer; the compressed
// strips are the output file, a fraction of the image on photos and at most its samples plus
// a few bytes per strip. With Spill, the compressed strips go to the caller's spill file
// once they pass a threshold, and the encoder holds at most that threshold plus the strips
// compressed ahead of one still being compressed (Workers+2 at most) and as many spare
// buffers.
//
// With Options.Level 0 the strips are compressed with the photo options while the rows
// Encode samples to tell graphics from photos go by; if they say graphics, WriteRows (as
// soon as enough of them do, whatever the rest) or Close returns ErrFlat, nothing is written,
// and the caller encodes the rows again, from the first, with ChosenOptions(true).
type StripEncoder struct {
	ctx    context.Context
	w      io.Writer
	l      *layout
	model  color.Model
	opaque bool
	opt    Options
	choose bool // Level was 0: photo options, and the flat sample is taken
	rps    int

	// stored is held while a worker stores its strip (strips, sizes, the spill fields).
	stored  sync.Mutex
	strips  [][]byte // compressed strips held in memory, nil once in the spill or not done
	sizes   []int    // each strip's compressed size, once done
	held    int64    // the bytes in strips
	after   int64    // Spill's threshold
	create  func() (io.ReadWriteSeeker, error)
	spill   io.ReadWriteSeeker // nil until created
	flushed int                // the strips before it are in the spill
	spilled int64              // their bytes
	spare   [][]byte           // emptied strip buffers, for the strips done out of order
	done    int                // the strips before it are compressed
	// ahead holds a token for each strip submitted and not in the done prefix: a strip
	// that lags holds back the submission of more than cap(ahead) after it, so that the
	// strips done out of order, held in memory, are few.
	ahead chan struct{}

	cur     []byte // the strip being filled
	curRows int
	y       int // the next row
	next    int // the next strip's index

	jobs    chan stripJob
	free    chan []byte
	made    int
	failed  chan struct{} // closed on the first worker error
	failMu  sync.Mutex
	err     error
	wg      sync.WaitGroup
	stopped bool

	// flat's sample, taken as the rows go by.
	step        int
	prev        []byte
	same, total int
}

type stripJob struct {
	i    int
	buf  []byte
	rows int
}

// NewStripEncoder returns an encoder of a width x height image whose rows come as images of
// model color.GrayModel (*image.Gray), color.RGBAModel (*image.RGBA) or color.NRGBAModel
// (*image.NRGBA). opaque says every pixel of the whole image is opaque, as Encode would find
// (an RGBA or NRGBA image is then stored as RGB); WriteRows fails for a strip that is not.
// The encoder's workers stop soon after ctx is done; call Close or Abort to end them.
func NewStripEncoder(ctx context.Context, w io.Writer, width, height int, model color.Model, opaque bool, o *Options) (*StripEncoder, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if (opt.Level < 0 || opt.Level > 9) && opt.Level != HuffmanOnly {
		return nil, fmt.Errorf("tiffenc: level %d is not 1 to 9 or HuffmanOnly", opt.Level)
	}
	if width <= 0 || height <= 0 || int64(width) > math.MaxUint32 || int64(height) > math.MaxUint32 {
		return nil, fmt.Errorf("tiffenc: invalid image size %dx%d", width, height)
	}
	l := &layout{w: width, h: height, photo: 2}
	switch {
	case model == color.GrayModel:
		l.spp, l.photo = 1, 1
	case (model == color.RGBAModel || model == color.NRGBAModel) && opaque:
		l.spp = 3
	case model == color.RGBAModel:
		l.spp, l.extra = 4, 1
	case model == color.NRGBAModel:
		l.spp, l.extra = 4, 2
	default:
		return nil, ErrUnsupported
	}
	if int64(width)*int64(l.spp) > math.MaxInt32 {
		return nil, fmt.Errorf("tiffenc: rows of %d pixels are too long", width)
	}
	l.rowLen = width * l.spp
	if opt.RowsPerStrip <= 0 {
		opt.RowsPerStrip = 64
	}
	choose := opt.Level == 0
	if choose {
		workers := opt.Workers
		opt = photoOptions
		opt.Workers = workers
	}
	rps := min(opt.RowsPerStrip, height)
	nstrips := (height + rps - 1) / rps
	nw := opt.Workers
	if nw <= 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	nw = min(nw, nstrips)
	e := &StripEncoder{ctx: ctx, w: w, l: l, model: model, opaque: opaque, opt: opt, choose: choose, rps: rps,
		strips: make([][]byte, nstrips), sizes: make([]int, nstrips), jobs: make(chan stripJob), free: make(chan []byte, nw+2),
		ahead:  make(chan struct{}, nw+2),
		failed: make(chan struct{}), step: max(1, height/flatSampleRows)}
	if choose {
		e.prev = make([]byte, l.rowLen)
	}
	for range nw {
		e.wg.Go(e.work)
	}
	return e, nil
}

// SpillThreshold is a threshold for Spill: 4 MiB of compressed strips held in memory, under
// which small images never create a spill file.
const SpillThreshold = 4 << 20

// Spill makes the encoder write the compressed strips, in order, to the ReadWriteSeeker
// create returns once more than after bytes of them would be held in memory, and copy them
// from it to the output at Close (through a 64 KiB buffer): the encoder then holds at most
// after bytes of compressed strips plus those done ahead of one still being compressed
// (at most Workers+2, and as many spare buffers).
// create is called at most once, from a worker; its error (wrapped) is the encoder's. The
// caller owns what create returned: it closes and removes it once Close or Abort returned,
// whatever happened. Spill must be called before the first WriteRows.
func (e *StripEncoder) Spill(after int64, create func() (io.ReadWriteSeeker, error)) {
	e.after, e.create = after, create
}

// store keeps strip i's compressed bytes, data (the worker's buffer, reused after store):
// a copy in memory, or straight into the spill when it is the next one there.
func (e *StripEncoder) store(i int, data []byte) error {
	e.stored.Lock()
	defer e.stored.Unlock()
	e.sizes[i] = len(data)
	for e.done < len(e.sizes) && e.sizes[e.done] > 0 { // a zlib stream is never empty
		e.done++
		<-e.ahead
	}
	spilling := e.create != nil && (e.spill != nil || e.held+int64(len(data)) > e.after)
	if spilling && i == e.flushed {
		if err := e.startSpill(); err != nil {
			return err
		}
		if err := e.spillWrite(data); err != nil {
			return err
		}
		return e.flush()
	}
	buf := e.spareFor(len(data))
	e.strips[i] = append(buf, data...)
	e.held += int64(len(data))
	if spilling {
		if err := e.startSpill(); err != nil {
			return err
		}
		return e.flush()
	}
	return nil
}

// startSpill creates the spill if it is not there yet.
func (e *StripEncoder) startSpill() error {
	if e.spill != nil {
		return nil
	}
	s, err := e.create()
	if err != nil {
		return fmt.Errorf("tiffenc: creating the spill for the compressed strips: %w", err)
	}
	e.spill = s
	return nil
}

// spillWrite appends the next strip's bytes to the spill.
func (e *StripEncoder) spillWrite(data []byte) error {
	if _, err := e.spill.Write(data); err != nil {
		return fmt.Errorf("tiffenc: writing the compressed strips to the spill: %w", err)
	}
	e.flushed++
	e.spilled += int64(len(data))
	return nil
}

// flush moves the held strips that come next, in order, to the spill, keeping their buffers
// for the strips done out of order.
func (e *StripEncoder) flush() error {
	for e.flushed < len(e.strips) && e.strips[e.flushed] != nil {
		s := e.strips[e.flushed]
		e.strips[e.flushed] = nil
		e.held -= int64(len(s))
		if err := e.spillWrite(s); err != nil {
			return err
		}
		if len(e.spare) < cap(e.free) {
			e.spare = append(e.spare, s[:0])
		}
	}
	return nil
}

// spareFor returns an empty buffer for n bytes: a spare one large enough when there is (the
// smaller ones are dropped), else a new one, which while spilling is made for deflate's
// worst case on a full strip, so that it can be used again for any strip.
func (e *StripEncoder) spareFor(n int) []byte {
	for k := len(e.spare) - 1; k >= 0; k-- {
		b := e.spare[k]
		e.spare = e.spare[:k]
		if cap(b) >= n {
			return b
		}
	}
	if e.spill != nil {
		raw := e.rps * e.l.rowLen
		return make([]byte, 0, max(n, raw+raw/256+64))
	}
	return make([]byte, 0, n)
}

// work compresses the strips it receives until jobs is closed; after an error it only hands
// the buffers back.
func (e *StripEncoder) work() {
	wk, _ := workers.Get().(*worker)
	if wk == nil {
		wk = &worker{}
	}
	defer workers.Put(wk)
	for j := range e.jobs {
		select {
		case <-e.failed:
		default:
			err := e.ctx.Err()
			if err == nil {
				var data []byte
				data, err = wk.compress(j.buf[:j.rows*e.l.rowLen], e.l.rowLen, e.l.spp, &e.opt)
				if err == nil {
					err = e.store(j.i, data)
				}
			}
			if err != nil {
				e.fail(err)
			}
		}
		e.free <- j.buf
	}
}

// fail records the first error and tells everyone to stop.
func (e *StripEncoder) fail(err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	if e.err == nil {
		e.err = err
		close(e.failed)
	}
}

func (e *StripEncoder) failure() error {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	return e.err
}

// WriteRows adds the rows of m, which must be full-width rows starting at the next row
// (bounds with Min.X 0 and Min.Y the number of rows written so far), of the model the encoder
// was made for. It returns once the rows are copied: m may be reused.
func (e *StripEncoder) WriteRows(m image.Image) error {
	if err := e.failure(); err != nil {
		return err
	}
	if e.stopped {
		return errors.New("tiffenc: WriteRows after Close or Abort")
	}
	var pix []byte
	var stride, bpp int
	switch m := m.(type) {
	case *image.Gray:
		if e.model == color.GrayModel {
			pix, stride, bpp = m.Pix, m.Stride, 1
		}
	case *image.RGBA:
		if e.model == color.RGBAModel {
			pix, stride, bpp = m.Pix, m.Stride, 4
			if e.opaque && !m.Opaque() {
				return errors.New("tiffenc: a strip of an image said to be opaque has translucent pixels")
			}
		}
	case *image.NRGBA:
		if e.model == color.NRGBAModel {
			pix, stride, bpp = m.Pix, m.Stride, 4
			if e.opaque && !m.Opaque() {
				return errors.New("tiffenc: a strip of an image said to be opaque has translucent pixels")
			}
		}
	}
	r := m.Bounds()
	if pix == nil || r.Min.X != 0 || r.Max.X != e.l.w || r.Min.Y != e.y || r.Max.Y > e.l.h {
		return fmt.Errorf("tiffenc: WriteRows of %T %v, want %v rows from %d of a %dx%d image", m, r, e.model, e.y, e.l.w, e.l.h)
	}
	for i := range r.Dy() {
		if e.cur == nil {
			buf, err := e.buffer()
			if err != nil {
				return err
			}
			e.cur, e.curRows = buf, 0
		}
		src := pix[i*stride : i*stride+bpp*e.l.w]
		dst := e.cur[e.curRows*e.l.rowLen : (e.curRows+1)*e.l.rowLen]
		if e.l.spp == 3 {
			for len(src) >= 4 && len(dst) >= 3 {
				dst[0], dst[1], dst[2] = src[0], src[1], src[2]
				dst, src = dst[3:], src[4:]
			}
			dst = e.cur[e.curRows*e.l.rowLen : (e.curRows+1)*e.l.rowLen]
		} else {
			copy(dst, src)
		}
		if e.choose && e.sample(dst) {
			// Graphics, whatever the rows still to come: no use compressing them as a photo.
			e.Abort()
			return ErrFlat
		}
		e.curRows++
		e.y++
		if e.curRows == e.rps || e.y == e.l.h {
			if err := e.submit(); err != nil {
				return err
			}
		}
	}
	return nil
}

// sample does what flat does for row e.y (it samples rows y-1 and y for y = 1, 1+step, ...),
// and reports whether the image is graphics whatever the rows still to come: half of every
// byte flat will have compared already equals the byte above.
func (e *StripEncoder) sample(row []byte) bool {
	y := e.y
	if y >= 1 && (y-1)%e.step == 0 {
		for i, c := range row {
			if c == e.prev[i] {
				e.same++
			}
		}
		e.total += len(row)
	}
	if y%e.step == 0 && y+1 < e.l.h {
		copy(e.prev, row)
	}
	samples := 0
	if e.l.h > 1 {
		samples = (e.l.h-2)/e.step + 1
	}
	return samples > 0 && 2*e.same >= samples*e.l.rowLen
}

// buffer returns a free strip buffer, allocating up to cap(free) of them.
func (e *StripEncoder) buffer() ([]byte, error) {
	select {
	case b := <-e.free:
		return b, nil
	default:
	}
	if e.made < cap(e.free) {
		e.made++
		return make([]byte, e.rps*e.l.rowLen), nil
	}
	select {
	case b := <-e.free:
		return b, nil
	case <-e.failed:
		return nil, e.failure()
	case <-e.ctx.Done():
		return nil, e.ctx.Err()
	}
}

// submit hands the filled strip to a worker.
func (e *StripEncoder) submit() error {
	j := stripJob{i: e.next, buf: e.cur, rows: e.curRows}
	e.cur, e.curRows = nil, 0
	select {
	case e.ahead <- struct{}{}:
	case <-e.failed:
		e.free <- j.buf
		return e.failure()
	case <-e.ctx.Done():
		e.free <- j.buf
		return e.ctx.Err()
	}
	select {
	case e.jobs <- j:
		e.next++
		return nil
	case <-e.failed:
		e.free <- j.buf
		return e.failure()
	case <-e.ctx.Done():
		e.free <- j.buf
		return e.ctx.Err()
	}
}

// Abort stops the workers and waits for them; nothing is written. It may be called after
// Close, and more than once.
func (e *StripEncoder) Abort() {
	if !e.stopped {
		e.stopped = true
		close(e.jobs)
	}
	e.wg.Wait()
}

// Close waits for the last strips, then writes the file: the header, the strips and the IFD,
// Encode's bytes. It fails if not every row was written, returns the first compression or
// context error, and ErrFlat (nothing written) as the type documentation says.
func (e *StripEncoder) Close() error {
	e.Abort()
	if err := e.failure(); err != nil {
		return err
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	if e.y != e.l.h {
		return fmt.Errorf("tiffenc: Close after %d of %d rows", e.y, e.l.h)
	}
	if e.choose && e.total > 0 && 2*e.same >= e.total {
		e.strips = nil
		return ErrFlat
	}
	if e.spill == nil {
		err := writeFile(e.w, e.l, e.rps, e.strips, !e.opt.NoPredictor)
		e.strips = nil
		return err
	}
	// Every strip is done, so every one was flushed to the spill after the last's store.
	if e.flushed != len(e.strips) {
		return fmt.Errorf("tiffenc: %d of %d strips in the spill at Close", e.flushed, len(e.strips))
	}
	e.strips, e.spare = nil, nil
	return writeLayout(e.w, e.l, e.rps, e.sizes, !e.opt.NoPredictor, func() error {
		if _, err := e.spill.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("tiffenc: rewinding the spill: %w", err)
		}
		n, err := io.CopyBuffer(e.w, io.LimitReader(e.spill, e.spilled), make([]byte, 64<<10))
		if err == nil && n != e.spilled {
			err = fmt.Errorf("tiffenc: the spill gave back %d of its %d bytes: %w", n, e.spilled, io.ErrUnexpectedEOF)
		}
		return err
	})
}

// compress compresses the rows in buf (rowLen bytes each) as one zlib stream, as strip
// does: predicted in place, one Write per row. The result is the worker's buffer, valid until
// its next use.
func (wk *worker) compress(buf []byte, rowLen, spp int, o *Options) ([]byte, error) {
	if err := wk.reset(o); err != nil {
		return nil, err
	}
	if n := len(buf) + len(buf)/256 + 64; cap(wk.out.b) < n {
		// Deflate's worst case at once, not the doublings of append on every worker.
		wk.out.b = make([]byte, 0, n)
	}
	for len(buf) >= rowLen {
		row := buf[:rowLen]
		buf = buf[rowLen:]
		if !o.NoPredictor {
			predict(row, spp)
		}
		if _, err := wk.zw.Write(row); err != nil {
			return nil, fmt.Errorf("tiffenc: deflate: %w", err)
		}
	}
	if err := wk.zw.Close(); err != nil {
		return nil, fmt.Errorf("tiffenc: deflate: %w", err)
	}
	return wk.out.b, nil
}
