// Package tiffenc writes baseline TIFF files from 8-bit *image.RGBA, *image.NRGBA and
// *image.Gray: Deflate-compressed (compression 8, the Adobe code) strips with the horizontal
// predictor, compressed on every core at once.
//
// It exists for measured speed and size (docs/benchmarks.md, issue 6): golang.org/x/image/tiff
// compresses the whole image as one strip at the default deflate level on one core (71% of a
// 12 MP PNG->TIFF conversion), without a predictor, and writes opaque images as four samples;
// its output was 40% larger than vips's and ImageMagick's. Colours read back the same through
// x/image/tiff: opaque images are stored as RGB (read back as *image.RGBA with alpha 0xff),
// NRGBA with alpha as unassociated alpha (ExtraSamples 2, read back as *image.NRGBA), RGBA with
// alpha as associated alpha (ExtraSamples 1, the premultiplied bytes x/image/tiff also writes).
//
// The strip offsets and sizes sit in the IFD, which the header points to, and the output is a
// plain io.Writer (not seekable), so nothing can be written before every strip is compressed:
// the compressed strips are held (each in its own buffer, no copy of the whole) and written
// after the 8-byte header, then the IFD. Compressed data is a fraction of the image the caller
// already holds (27 MB for a 48 MB 12 MP RGBA photo), and the workers' own buffers are one
// strip each.
//
// StripEncoder (stream.go) writes Encode's bytes from rows handed to it a strip at a time,
// for callers that never hold the whole image; it holds the compressed strips the same way,
// or, with StripEncoder.Spill, writes them past a threshold to a spill the caller provides
// (a file: tiffenc itself touches no file system) and copies them to the output at the end.
package tiffenc

import (
	stdzlib "compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zlib"

	"github.com/convsvc/convsvc/convert/internal/rowcount"
)

// ErrUnsupported is returned for images other than *image.RGBA, *image.NRGBA and *image.Gray.
var ErrUnsupported = errors.New("tiffenc: unsupported image type")

// Options tunes the encoder. With Level 0 the encoder chooses (see Encode); otherwise the
// fields are used as given.
type Options struct {
	// Level is the deflate level, 1 to 9, or HuffmanOnly; 0 lets Encode choose.
	Level int
	// Stdlib selects compress/zlib instead of github.com/klauspost/compress/zlib.
	Stdlib bool
	// RowsPerStrip is the strip height; 0 means 64.
	RowsPerStrip int
	// NoPredictor turns the horizontal predictor off.
	NoPredictor bool
	// Workers is the number of strips compressed at once; 0 means runtime.GOMAXPROCS(0).
	Workers int
}

// HuffmanOnly is the deflate level that only entropy-codes.
const HuffmanOnly = -2

// The choices Encode makes when Options.Level is 0, from TestMeasure (measure_test.go, figures
// in docs/benchmarks.md). Photos: the predictor, compress/zlib at BestSpeed, 64-row strips:
// 10x faster than x/image/tiff and 30-34% smaller on the 12 MP bench photos (26.6 MB against
// vips's 27.0 MB on the noisy one; klauspost's zlib stores noisy strips uncompressed, 36 MB,
// where compress/flate falls back to Huffman coding). Graphics (at least half the bytes of
// sampled rows equal the byte above): no predictor, compress/zlib at level 6, 256-row strips,
// close to x/image/tiff's one-strip output, which the predictor and BestSpeed made 17-55%
// larger.
var (
	photoOptions = Options{Level: 1, Stdlib: true, RowsPerStrip: 64}
	flatOptions  = Options{Level: 6, Stdlib: true, RowsPerStrip: 256, NoPredictor: true}
)

// Supported reports whether Encode takes m (otherwise it returns ErrUnsupported).
func Supported(m image.Image) bool {
	switch m.(type) {
	case *image.RGBA, *image.NRGBA, *image.Gray:
		return true
	}
	return false
}

// layout says how one image row becomes the samples the TIFF stores.
type layout struct {
	w, h   int
	spp    int // samples per pixel
	extra  int // ExtraSamples value, 0 for none
	photo  int // PhotometricInterpretation
	rowLen int
	fill   func(dst []byte, y int)
}

func newLayout(m image.Image) (*layout, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 || int64(w) > math.MaxUint32 || int64(h) > math.MaxUint32 {
		return nil, fmt.Errorf("tiffenc: invalid image size %dx%d", w, h)
	}
	l := &layout{w: w, h: h, photo: 2}
	rgb := func(pix []byte, off func(x, y int) int) func([]byte, int) {
		return func(dst []byte, y int) {
			i := off(b.Min.X, b.Min.Y+y)
			src := pix[i : i+4*w]
			dst = dst[:3*w]
			for len(src) >= 4 && len(dst) >= 3 {
				dst[0], dst[1], dst[2] = src[0], src[1], src[2]
				dst, src = dst[3:], src[4:]
			}
		}
	}
	rgba := func(pix []byte, off func(x, y int) int) func([]byte, int) {
		return func(dst []byte, y int) {
			i := off(b.Min.X, b.Min.Y+y)
			copy(dst[:4*w], pix[i:i+4*w])
		}
	}
	switch m := m.(type) {
	case *image.Gray:
		l.spp, l.photo = 1, 1
		l.fill = func(dst []byte, y int) {
			i := m.PixOffset(b.Min.X, b.Min.Y+y)
			copy(dst[:w], m.Pix[i:i+w])
		}
	case *image.NRGBA:
		if m.Opaque() {
			l.spp, l.fill = 3, rgb(m.Pix, m.PixOffset)
		} else {
			l.spp, l.extra, l.fill = 4, 2, rgba(m.Pix, m.PixOffset)
		}
	case *image.RGBA:
		if m.Opaque() {
			l.spp, l.fill = 3, rgb(m.Pix, m.PixOffset)
		} else {
			l.spp, l.extra, l.fill = 4, 1, rgba(m.Pix, m.PixOffset)
		}
	default:
		return nil, ErrUnsupported
	}
	if int64(w)*int64(l.spp) > math.MaxInt32 {
		return nil, fmt.Errorf("tiffenc: rows of %d pixels are too long", w)
	}
	l.rowLen = w * l.spp
	return l, nil
}

// flatSampleRows is how many rows flat looks at.
const flatSampleRows = 16

// flat reports whether at least half the bytes of up to flatSampleRows rows spread over the
// image equal the byte above them: graphics and screenshots rather than photos.
func flat(l *layout) bool {
	cur, prev := make([]byte, l.rowLen), make([]byte, l.rowLen)
	same, total := 0, 0
	for y := 1; y < l.h; y += max(1, l.h/flatSampleRows) {
		l.fill(prev, y-1)
		l.fill(cur, y)
		for i, c := range cur {
			if c == prev[i] {
				same++
			}
		}
		total += len(cur)
	}
	return total > 0 && 2*same >= total
}

// predict replaces each sample by its difference from the same sample of the pixel to its
// left (TIFF Predictor 2 at 8 bits), working from the right.
func predict(row []byte, spp int) {
	for i := len(row) - 1; i >= spp; i-- {
		row[i] -= row[i-spp]
	}
}

type bufferBox struct{ b []byte }

func (x *bufferBox) Write(p []byte) (int, error) {
	x.b = append(x.b, p...)
	return len(p), nil
}

// worker is one goroutine's row buffer and zlib writer; pooled across encodes.
type worker struct {
	row   []byte
	out   bufferBox // the strip being compressed; copied out at its exact size
	zw    zlibWriter
	level int
	std   bool
}

var workers sync.Pool

// zlibWriter is what both zlib implementations offer.
type zlibWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// Encode writes m as a TIFF to w. It returns ErrUnsupported (wrapped) for image types other
// than *image.RGBA, *image.NRGBA and *image.Gray, and stops soon after ctx is done.
func Encode(ctx context.Context, w io.Writer, m image.Image, o *Options) error {
	l, rps, strips, predictor, err := compressStrips(ctx, m, o)
	if err != nil {
		return err
	}
	return writeFile(w, l, rps, strips, predictor)
}

// compressStrips compresses m's strips on the workers, with the options Encode chooses.
func compressStrips(ctx context.Context, m image.Image, o *Options) (l *layout, rps int, strips [][]byte, predictor bool, err error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if (opt.Level < 0 || opt.Level > 9) && opt.Level != HuffmanOnly {
		return nil, 0, nil, false, fmt.Errorf("tiffenc: level %d is not 1 to 9 or HuffmanOnly", opt.Level)
	}
	if opt.RowsPerStrip <= 0 {
		opt.RowsPerStrip = 64
	}
	l, err = newLayout(m)
	if err != nil {
		return nil, 0, nil, false, err
	}
	if opt.Level == 0 {
		workers := opt.Workers
		if flat(l) {
			opt = flatOptions
		} else {
			opt = photoOptions
		}
		opt.Workers = workers
	}
	rps = min(opt.RowsPerStrip, l.h)
	nstrips := (l.h + rps - 1) / rps
	strips = make([][]byte, nstrips)
	nw := opt.Workers
	if nw <= 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	nw = min(nw, nstrips)

	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, nw)
	var wg sync.WaitGroup
	for k := range nw {
		wg.Go(func() {
			wk, _ := workers.Get().(*worker)
			if wk == nil {
				wk = &worker{}
			}
			defer workers.Put(wk)
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= nstrips {
					return
				}
				err := ctx.Err()
				if err == nil {
					strips[i], err = wk.strip(l, i*rps, min((i+1)*rps, l.h), &opt)
				}
				if err == nil {
					rowcount.Add(ctx, min((i+1)*rps, l.h)-i*rps) // the job's progress (convert/image)
				}
				if err != nil {
					errs[k] = err
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, nil, false, err
	}
	return l, rps, strips, !opt.NoPredictor, nil
}

// strip compresses rows [y0, y1) as one zlib stream.
func (wk *worker) strip(l *layout, y0, y1 int, o *Options) ([]byte, error) {
	if cap(wk.row) < l.rowLen {
		wk.row = make([]byte, l.rowLen)
	}
	row := wk.row[:l.rowLen]
	if err := wk.reset(o); err != nil {
		return nil, err
	}
	out := &wk.out
	for y := y0; y < y1; y++ {
		l.fill(row, y)
		if !o.NoPredictor {
			predict(row, l.spp)
		}
		if _, err := wk.zw.Write(row); err != nil {
			return nil, fmt.Errorf("tiffenc: deflate: %w", err)
		}
	}
	if err := wk.zw.Close(); err != nil {
		return nil, fmt.Errorf("tiffenc: deflate: %w", err)
	}
	return append([]byte(nil), out.b...), nil
}

// reset empties the worker's output and readies its zlib writer for o.
func (wk *worker) reset(o *Options) error {
	out := &wk.out
	out.b = out.b[:0]
	if wk.zw == nil || wk.level != o.Level || wk.std != o.Stdlib {
		var zw zlibWriter
		var err error
		if o.Stdlib {
			zw, err = stdzlib.NewWriterLevel(out, o.Level)
		} else {
			zw, err = zlib.NewWriterLevel(out, o.Level)
		}
		if err != nil {
			return fmt.Errorf("tiffenc: %w", err)
		}
		wk.zw, wk.level, wk.std = zw, o.Level, o.Stdlib
	} else {
		wk.zw.Reset(out)
	}
	return nil
}

// IFD entry types.
const (
	tShort    = 3
	tLong     = 4
	tRational = 5
)

type entry struct {
	tag, typ int
	vals     []uint32 // for rationals: numerator, denominator pairs
}

func (e entry) count() int {
	if e.typ == tRational {
		return len(e.vals) / 2
	}
	return len(e.vals)
}

func (e entry) size() int {
	switch e.typ {
	case tShort:
		return 2 * len(e.vals)
	}
	return 4 * len(e.vals)
}

func (e entry) put(p []byte) {
	le := binary.LittleEndian
	for _, v := range e.vals {
		if e.typ == tShort {
			le.PutUint16(p, uint16(v))
			p = p[2:]
		} else {
			le.PutUint32(p, v)
			p = p[4:]
		}
	}
}

// writeFile writes the header, the strips in order, then the IFD and the values too long to
// sit in it.
func writeFile(w io.Writer, l *layout, rps int, strips [][]byte, predictor bool) error {
	sizes := make([]int, len(strips))
	for i, s := range strips {
		sizes[i] = len(s)
	}
	return writeLayout(w, l, rps, sizes, predictor, func() error {
		for _, s := range strips {
			if _, err := w.Write(s); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLayout is writeFile for strips of the given sizes, which body writes to w, in order,
// between the header and the IFD.
func writeLayout(w io.Writer, l *layout, rps int, sizes []int, predictor bool, body func() error) error {
	offsets := make([]uint32, len(sizes))
	counts := make([]uint32, len(sizes))
	pos := uint64(8)
	for i, n := range sizes {
		offsets[i], counts[i] = uint32(pos), uint32(n)
		pos += uint64(n)
	}
	pad := pos & 1 // the IFD starts on a word boundary
	ifdOff := pos + pad
	// The next-IFD offset after the entries stays 0: one image.
	ifd, err := buildIFD(l, rps, offsets, counts, predictor, ifdOff, 0)
	if err != nil {
		return err
	}
	le := binary.LittleEndian

	var hdr [8]byte
	copy(hdr[:], "II*\x00")
	le.PutUint32(hdr[4:], uint32(ifdOff))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if err := body(); err != nil {
		return err
	}
	if pad != 0 {
		if _, err := w.Write([]byte{0}); err != nil {
			return err
		}
	}
	_, err = w.Write(ifd)
	return err
}

// buildIFD returns the IFD of one image, to be written at offset ifdOff, with the values too
// long for an entry after it, and next as the offset of the following IFD (0 for none).
func buildIFD(l *layout, rps int, offsets, counts []uint32, predictor bool, ifdOff, next uint64) ([]byte, error) {
	bits := make([]uint32, l.spp)
	for i := range bits {
		bits[i] = 8
	}
	entries := []entry{
		{256, tLong, []uint32{uint32(l.w)}},
		{257, tLong, []uint32{uint32(l.h)}},
		{258, tShort, bits},
		{259, tShort, []uint32{8}}, // Deflate (Adobe)
		{262, tShort, []uint32{uint32(l.photo)}},
		{273, tLong, offsets},
		{277, tShort, []uint32{uint32(l.spp)}},
		{278, tLong, []uint32{uint32(rps)}},
		{279, tLong, counts},
		{282, tRational, []uint32{72, 1}},
		{283, tRational, []uint32{72, 1}},
		{284, tShort, []uint32{1}}, // chunky
		{296, tShort, []uint32{2}}, // inches
	}
	if predictor {
		entries = append(entries, entry{317, tShort, []uint32{2}})
	}
	if l.extra != 0 {
		entries = append(entries, entry{338, tShort, []uint32{uint32(l.extra)}})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].tag < entries[j].tag })
	ifdLen := 2 + 12*len(entries) + 4
	extra := 0
	for _, e := range entries {
		if e.size() > 4 {
			extra += e.size()
		}
	}
	if end := ifdOff + uint64(ifdLen) + uint64(extra); end > math.MaxUint32 {
		return nil, fmt.Errorf("tiffenc: the file would be %d bytes, more than TIFF's 4 GiB", end)
	}
	ifd := make([]byte, ifdLen+extra)
	le := binary.LittleEndian
	le.PutUint16(ifd, uint16(len(entries)))
	ext := ifdLen
	for i, e := range entries {
		p := ifd[2+12*i:]
		le.PutUint16(p, uint16(e.tag))
		le.PutUint16(p[2:], uint16(e.typ))
		le.PutUint32(p[4:], uint32(e.count()))
		if e.size() <= 4 {
			e.put(p[8:12])
			continue
		}
		le.PutUint32(p[8:], uint32(ifdOff)+uint32(ext))
		e.put(ifd[ext:])
		ext += e.size()
	}
	le.PutUint32(ifd[ifdLen-4:], uint32(next))
	return ifd, nil
}

// ifdSize is the length of buildIFD's result for an image of nstrips strips.
func ifdSize(l *layout, nstrips int, predictor bool) int {
	n, extra := 13, 8+8 // entries; the two resolutions
	if predictor {
		n++
	}
	if l.extra != 0 {
		n++
	}
	if l.spp*2 > 4 {
		extra += 2 * l.spp
	}
	if nstrips > 1 {
		extra += 2 * 4 * nstrips
	}
	return 2 + 12*n + 4 + extra
}

// PageWriter writes a multi-page TIFF (one IFD per page, each pointing to the next) to a
// plain io.Writer, a page at a time: each page's strips are compressed as Encode does and
// written after its IFD, so a page is never held once written.
type PageWriter struct {
	w    io.Writer
	pos  uint64
	open bool
}

// NewPageWriter returns a PageWriter writing to w.
func NewPageWriter(w io.Writer) *PageWriter { return &PageWriter{w: w} }

// WritePage writes m as the next page; last says whether it is the final page (its IFD then
// points to no further one). Image types and errors are Encode's.
func (p *PageWriter) WritePage(ctx context.Context, m image.Image, o *Options, last bool) error {
	l, rps, strips, predictor, err := compressStrips(ctx, m, o)
	if err != nil {
		return err
	}
	if !p.open {
		var hdr [8]byte
		copy(hdr[:], "II*\x00")
		binary.LittleEndian.PutUint32(hdr[4:], 8)
		if _, err := p.w.Write(hdr[:]); err != nil {
			return err
		}
		p.pos, p.open = 8, true
	}
	ifdOff := p.pos
	pos := ifdOff + uint64(ifdSize(l, len(strips), predictor))
	offsets := make([]uint32, len(strips))
	counts := make([]uint32, len(strips))
	for i, s := range strips {
		offsets[i], counts[i] = uint32(pos), uint32(len(s))
		pos += uint64(len(s))
	}
	pad := pos & 1 // the next IFD starts on a word boundary
	next := pos + pad
	if last {
		next = 0
	}
	if pos+pad > math.MaxUint32 {
		return fmt.Errorf("tiffenc: the file would be %d bytes, more than TIFF's 4 GiB", pos)
	}
	ifd, err := buildIFD(l, rps, offsets, counts, predictor, ifdOff, next)
	if err != nil {
		return err
	}
	if uint64(len(ifd)) != uint64(ifdSize(l, len(strips), predictor)) {
		return fmt.Errorf("tiffenc: IFD of %d bytes, expected %d", len(ifd), ifdSize(l, len(strips), predictor))
	}
	if _, err := p.w.Write(ifd); err != nil {
		return err
	}
	for _, s := range strips {
		if _, err := p.w.Write(s); err != nil {
			return err
		}
	}
	if pad != 0 {
		if _, err := p.w.Write([]byte{0}); err != nil {
			return err
		}
	}
	p.pos = pos + pad
	return nil
}
