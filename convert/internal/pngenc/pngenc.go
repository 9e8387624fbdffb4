// Package pngenc is a PNG encoder for 8-bit *image.RGBA, *image.NRGBA and *image.Gray that
// filters and deflates horizontal bands of rows on every core at once.
//
// It exists for measured speed (docs/benchmarks.md, issue 6): image/png spends 83% of a 12 MP
// JPEG->PNG conversion in its encoder, about half of it trying all five filters on every row and
// the rest in a single-threaded compress/flate at BestSpeed. This encoder looks at each band of
// rows: photo-like bands get the Up filter and github.com/klauspost/compress/flate at level 1
// (Huffman coding only where that cannot shrink them: noise), graphics-like bands get
// image/png's own per-row filter choice and compress/flate (see FilterAuto). Each band has its
// own flate writer on its own goroutine and ends, but for the last, with a sync flush, so the
// bands concatenate into one valid zlib stream; the Adler-32 of the filtered bytes is combined
// from the bands' own. Measured with TestMeasure on a 2-core machine: 12 MP JPEG-decoded photo
// 10% smaller than image/png's output at a fifth to a half of its time, the noisy 12 MP bench
// photo 3.8% larger at a sixth, screenshots and plots within 0.5%. The output decodes to exactly
// what image/png's encoder would have stored: the same colour type (RGB for opaque images, RGBA
// un-premultiplied the way image/png does it otherwise, grayscale for Gray) and the same bytes.
package pngenc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"io"
	"runtime"
	"sync"

	stdflate "compress/flate"

	"github.com/klauspost/compress/flate"

	"github.com/convsvc/convsvc/convert/internal/rowcount"
)

// ErrUnsupported is returned for images other than *image.RGBA, *image.NRGBA and *image.Gray.
var ErrUnsupported = errors.New("pngenc: unsupported image type")

// Filter is the PNG row filter every row is written with.
type Filter int

// FilterAuto (the default) decides per band of rows: bands whose rows mostly repeat the row
// above (graphics, screenshots: at least half the bytes of sampled rows equal the byte above)
// get image/png's own per-row choice and compress/flate, which keeps those files within a few
// percent of image/png's size; other bands (photos) get the Up filter and klauspost's flate,
// measured 4-10x faster than image/png and 5-10% smaller on a JPEG-decoded photo
// (TestMeasure). The others are the PNG filter types; FilterAdaptive picks one per row the way
// image/png and libpng do (the smallest sum of absolute differences, five filters tried per
// row); FilterMinSAD does the same among None, Sub and Up in one pass.
const (
	FilterAuto Filter = iota
	FilterNone
	FilterSub
	FilterUp
	FilterAverage
	FilterPaeth
	FilterAdaptive
	FilterMinSAD
)

// Compressor selects the deflate implementation.
type Compressor int

// CompressorAuto is klauspost's flate except for the bands FilterAuto finds flat, which get
// compress/flate, and bands klauspost's flate could not shrink by a sixteenth (noise), which
// are Huffman-coded by compress/flate instead; Klauspost is github.com/klauspost/compress/flate,
// Stdlib is compress/flate.
const (
	CompressorAuto Compressor = iota
	Klauspost
	Stdlib
)

// Options tunes the encoder. The zero value is the measured default (see DefaultLevel and the
// package benchmarks).
type Options struct {
	// Level is the flate level, 1 (fastest) to 9; 0 means DefaultLevel.
	Level int
	// Filter is the row filter.
	Filter Filter
	// Compressor is the deflate implementation.
	Compressor Compressor
	// BandRows is the number of rows per band; 0 picks about 2 MiB of filtered bytes per
	// band, fewer when that would leave a worker idle, and at least 16 rows.
	BandRows int
	// Workers is the number of bands deflated at once; 0 means runtime.GOMAXPROCS(0).
	Workers int
}

// DefaultLevel is the flate level used when Options.Level is 0. Level 2 saved 1% on a photo
// and cost 10-28% on graphics (compress/flate's level 2 is not its fast path), so 1.
const DefaultLevel = 1

// idatSize is the largest IDAT chunk written.
const idatSize = 256 << 10

// colour types
const (
	ctGray = 0
	ctRGB  = 2
	ctRGBA = 6
)

// Supported reports whether Encode takes m (otherwise it returns ErrUnsupported).
func Supported(m image.Image) bool {
	switch m.(type) {
	case *image.RGBA, *image.NRGBA, *image.Gray:
		return true
	}
	return false
}

// layout says how one image row becomes the bytes PNG stores.
type layout struct {
	w, h   int
	bpp    int // bytes per pixel stored
	ct     byte
	rowLen int // bytes per stored row, without the filter byte
	// fill writes row y (0-based from the top of the bounds) into dst[:rowLen].
	fill func(dst []byte, y int)
}

func newLayout(m image.Image) (*layout, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 || int64(w) >= 1<<31 || int64(h) >= 1<<31 {
		return nil, fmt.Errorf("pngenc: invalid image size %dx%d", w, h)
	}
	l := &layout{w: w, h: h}
	switch m := m.(type) {
	case *image.Gray:
		l.bpp, l.ct = 1, ctGray
		l.fill = func(dst []byte, y int) {
			i := m.PixOffset(b.Min.X, b.Min.Y+y)
			copy(dst[:w], m.Pix[i:i+w])
		}
	case *image.NRGBA:
		l.fourChannels(m.Pix, m.Stride, b.Dx(), m.Opaque(), func(dst, src []byte) { copy(dst, src) })
	case *image.RGBA:
		l.fourChannels(m.Pix, m.Stride, b.Dx(), m.Opaque(), unpremultiply)
	default:
		return nil, ErrUnsupported
	}
	if int64(w)*int64(l.bpp) >= 1<<31-1 {
		return nil, fmt.Errorf("pngenc: rows of %d pixels are too long", w)
	}
	l.rowLen = w * l.bpp
	return l, nil
}

// fourChannels lays out an image whose rows are 4 bytes per pixel from pix (stride apart,
// the first row at 0): RGB when it is opaque, else RGBA through nonOpaque, which writes the
// 4*w stored bytes of a row from its pixels.
func (l *layout) fourChannels(pix []byte, stride, w int, opaque bool, nonOpaque func(dst, src []byte)) {
	if opaque {
		l.bpp, l.ct = 3, ctRGB
		l.fill = func(dst []byte, y int) { rgbFrom4(dst[:3*w], pix[y*stride:y*stride+4*w]) }
		return
	}
	l.bpp, l.ct = 4, ctRGBA
	l.fill = func(dst []byte, y int) { nonOpaque(dst[:4*w], pix[y*stride:y*stride+4*w]) }
}

// rgbFrom4 drops every fourth byte.
func rgbFrom4(dst, src []byte) {
	for len(src) >= 4 && len(dst) >= 3 {
		dst[0], dst[1], dst[2] = src[0], src[1], src[2]
		dst, src = dst[3:], src[4:]
	}
}

// unpremultiply converts alpha-premultiplied RGBA to PNG's non-premultiplied RGBA with
// image/png's own arithmetic, so both encoders store the same bytes.
func unpremultiply(dst, src []byte) {
	for ; len(src) >= 4 && len(dst) >= 4; dst, src = dst[4:], src[4:] {
		d := (*[4]byte)(dst)
		s := (*[4]byte)(src)
		switch s[3] {
		case 0x00:
			*d = [4]byte{}
		case 0xff:
			*d = *s
		default:
			const m = 0x101 * 0xffff
			a := uint32(s[3]) * 0x101
			d[0] = uint8((uint32(s[0]) * m / a) >> 8)
			d[1] = uint8((uint32(s[1]) * m / a) >> 8)
			d[2] = uint8((uint32(s[2]) * m / a) >> 8)
			d[3] = s[3]
		}
	}
}

// flateWriter is what both deflate implementations offer.
type flateWriter interface {
	io.WriteCloser
	Flush() error
	Reset(io.Writer)
}

// band is one run of rows, deflated by a worker and written in order by Encode.
type band struct {
	y0, y1 int
	last   bool
	out    *bufferBox
	adler  uint32
	n      int64 // filtered bytes
	err    error
	done   chan struct{}
}

type bufferBox struct{ b []byte }

func (x *bufferBox) Write(p []byte) (int, error) {
	x.b = append(x.b, p...)
	return len(p), nil
}

var outBuffers = sync.Pool{New: func() any { return &bufferBox{} }}

// worker holds one goroutine's row buffers and flate writers; pooled across encodes.
type worker struct {
	cur, prev []byte
	filt      [5][]byte // filtered rows, each with its filter byte
	band      []byte    // the band's filtered rows, kept in case it must be deflated again
	// zw[Klauspost] and zw[Stdlib] are the two deflaters; zw[0] is compress/flate's
	// Huffman-only one (see deflateBand).
	zw    [3]flateWriter
	level [3]int
}

var workers sync.Pool

func getWorker(rowLen int) *worker {
	wk, _ := workers.Get().(*worker)
	if wk == nil {
		wk = &worker{}
	}
	if cap(wk.cur) < rowLen {
		wk.cur = make([]byte, rowLen)
		wk.prev = make([]byte, rowLen)
		for i := range wk.filt {
			wk.filt[i] = make([]byte, rowLen+1)
		}
	}
	wk.cur, wk.prev = wk.cur[:rowLen], wk.prev[:rowLen]
	for i := range wk.filt {
		wk.filt[i] = wk.filt[i][:rowLen+1]
	}
	return wk
}

// writer returns the worker's flate writer of kind comp (Klauspost or Stdlib) at level, reset
// to write to dst.
func (wk *worker) writer(comp Compressor, level int, dst io.Writer) (flateWriter, error) {
	if wk.zw[comp] == nil || wk.level[comp] != level {
		var err error
		if comp == Stdlib || level == stdflate.HuffmanOnly {
			wk.zw[comp], err = stdflate.NewWriter(dst, level)
		} else {
			wk.zw[comp], err = flate.NewWriter(dst, level)
		}
		if err != nil {
			return nil, fmt.Errorf("pngenc: %w", err)
		}
		wk.level[comp] = level
		return wk.zw[comp], nil
	}
	wk.zw[comp].Reset(dst)
	return wk.zw[comp], nil
}

// Encode writes m as a PNG to w. It returns ErrUnsupported (wrapped) for image types other
// than *image.RGBA, *image.NRGBA and *image.Gray. It stops soon after ctx is done.
func Encode(ctx context.Context, w io.Writer, m image.Image, o *Options) error {
	l, err := newLayout(m)
	if err != nil {
		return err
	}
	opt, nw, rows, err := plan(o, l)
	if err != nil {
		return err
	}

	cw := &chunkWriter{w: w}
	cw.writeHeader(l)
	// The zlib header: deflate, 32 KiB window, and the FLEVEL compress/zlib writes for the level.
	cw.idat([]byte{0x78, zlibFlag(opt.Level)})

	// Bands are handed out in order; at most 2*nw are in flight (being deflated or waiting to
	// be written), which bounds memory to a few bands whatever the image size.
	pending := make(chan *band, nw)
	sem := make(chan struct{}, nw)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(pending)
		for y0 := 0; y0 < l.h; y0 += rows {
			bd := &band{y0: y0, y1: min(y0+rows, l.h), done: make(chan struct{})}
			bd.last = bd.y1 == l.h
			select {
			case sem <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case pending <- bd:
			case <-stop:
				<-sem
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer close(bd.done)
				if err := ctx.Err(); err != nil {
					bd.err = err
					return
				}
				bd.err = deflateBand(l, bd, &opt)
			}()
		}
	}()

	adler := uint32(1)
	var werr error
	for bd := range pending {
		<-bd.done
		if werr == nil {
			werr = bd.err
			if werr == nil {
				werr = ctx.Err()
			}
			if werr == nil {
				cw.idat(bd.out.b)
				adler = adler32Combine(adler, bd.adler, bd.n)
				werr = cw.err
				rowcount.Add(ctx, bd.y1-bd.y0) // the job's progress (convert/image)
			}
			if werr != nil {
				close(stop)
			}
		}
		if bd.out != nil {
			bd.out.b = bd.out.b[:0]
			outBuffers.Put(bd.out)
		}
	}
	wg.Wait()
	if werr != nil {
		return werr
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], adler)
	cw.idat(sum[:])
	cw.flushIDAT()
	cw.chunk("IEND", nil)
	return cw.err
}

// plan checks o (nil is the zero value) and returns it with its defaults filled in, the number
// of workers and the rows per band for an image of layout l. Encode and StreamEncoder share it,
// so both cut the same bands and write the same bytes.
func plan(o *Options, l *layout) (opt Options, nw, rows int, err error) {
	if o != nil {
		opt = *o
	}
	if opt.Level == 0 {
		opt.Level = DefaultLevel
	}
	if opt.Level < 1 || opt.Level > 9 {
		return opt, 0, 0, fmt.Errorf("pngenc: level %d is not 1 to 9", opt.Level)
	}
	if opt.Filter < FilterAuto || opt.Filter > FilterMinSAD {
		return opt, 0, 0, fmt.Errorf("pngenc: unknown filter %d", opt.Filter)
	}
	nw = opt.Workers
	if nw <= 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	rows = opt.BandRows
	if rows <= 0 {
		// About 2 MiB of filtered bytes per band (each band restarts deflate's window, which
		// costs 1-2% of size at 64 rows of a 4000-pixel photo), but at least 4 bands per
		// worker so the cores stay busy to the end, and at least 16 rows.
		rows = max(16, min((2<<20)/(l.rowLen+1), (l.h+4*nw-1)/(4*nw)))
	}
	rows = min(rows, l.h)
	return opt, nw, rows, nil
}

// zlibFlag is the FLG byte compress/zlib writes for level, with its check bits.
func zlibFlag(level int) byte {
	var fl byte
	switch {
	case level < 2:
		fl = 0
	case level < 6:
		fl = 1
	case level == 6:
		fl = 2
	default:
		fl = 3
	}
	f := fl << 6
	cmf := uint16(0x78)
	f += byte(31 - (cmf<<8|uint16(f))%31)
	return f
}

// deflateBand filters rows [bd.y0, bd.y1) against their previous rows and deflates them.
func deflateBand(l *layout, bd *band, o *Options) error {
	wk := getWorker(l.rowLen)
	defer workers.Put(wk)
	filter, comp := o.Filter, o.Compressor
	if filter == FilterAuto {
		if flatBand(l, bd, wk) {
			filter = FilterAdaptive
			if comp == CompressorAuto {
				comp = Stdlib
			}
		} else {
			filter = FilterUp
		}
	}
	if comp == CompressorAuto {
		comp = Klauspost
	}
	n := (bd.y1 - bd.y0) * (l.rowLen + 1)
	out := outBuffers.Get().(*bufferBox)
	if c := n + n/1024 + 64; cap(out.b) < c {
		// Room for the band even stored, so append never regrows it: the regrowth garbage
		// raised peak RSS of a 12 MP JPEG->PNG to 123 MiB; 106 MiB without (image/png: 96).
		out.b = make([]byte, 0, c)
	}
	out.b = out.b[:0]
	bd.out = out
	prev, cur := wk.prev, wk.cur
	if bd.y0 == 0 {
		clear(prev)
	} else {
		l.fill(prev, bd.y0-1)
	}
	if cap(wk.band) < n {
		wk.band = make([]byte, 0, n)
	}
	data := wk.band[:0]
	for y := bd.y0; y < bd.y1; y++ {
		l.fill(cur, y)
		data = append(data, filterRow(&wk.filt, cur, prev, l.bpp, filter)...)
		prev, cur = cur, prev
	}
	wk.prev, wk.cur, wk.band = prev, cur, data
	bd.adler = adler32.Checksum(data)
	bd.n = int64(len(data))
	if err := deflate(wk, comp, o.Level, out, data, bd.last); err != nil {
		return err
	}
	if comp == Klauspost && o.Compressor == CompressorAuto && len(out.b) > len(data)-len(data)/16 {
		// klauspost's fast levels store blocks they find no matches in, even where Huffman
		// coding alone would save a quarter (noisy photos: 36.0 MB stored against 25.6 MB
		// from image/png on the 12 MP bench PNG). Such a band is entropy-coded instead.
		out.b = out.b[:0]
		return deflate(wk, Stdlib, stdflate.HuffmanOnly, out, data, bd.last)
	}
	return nil
}

// deflate compresses data into out with the worker's writer of kind comp at level, ending with
// a sync flush, or with the final block when last.
func deflate(wk *worker, comp Compressor, level int, out io.Writer, data []byte, last bool) error {
	if level == stdflate.HuffmanOnly {
		comp = 0 // its own slot: the huffman-only writer
	}
	zw, err := wk.writer(comp, level, out)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return fmt.Errorf("pngenc: deflate: %w", err)
	}
	if last {
		err = zw.Close()
	} else {
		err = zw.Flush()
	}
	if err != nil {
		return fmt.Errorf("pngenc: deflate: %w", err)
	}
	return nil
}

// flatSampleRows is how many rows of a band flatBand looks at.
const flatSampleRows = 8

// flatBand reports whether at least half the bytes of up to flatSampleRows rows spread over
// the band equal the byte above them: the mark of graphics and screenshots, where deflate
// finds long matches and the filter choice decides the size.
func flatBand(l *layout, bd *band, wk *worker) bool {
	n := bd.y1 - bd.y0
	step := max(1, n/flatSampleRows)
	same, total := 0, 0
	for y := bd.y0; y < bd.y1; y += step {
		if y == 0 {
			clear(wk.prev)
		} else {
			l.fill(wk.prev, y-1)
		}
		l.fill(wk.cur, y)
		p := wk.prev[:len(wk.cur)]
		for i, c := range wk.cur {
			if c == p[i] {
				same++
			}
		}
		total += len(wk.cur)
	}
	return 2*same >= total
}

// adler32Combine is zlib's adler32_combine: the Adler-32 of A followed by B from adler32(A),
// adler32(B) and len(B).
func adler32Combine(a1, a2 uint32, len2 int64) uint32 {
	const base = 65521
	rem := uint32(len2 % base)
	sum1 := a1 & 0xffff
	sum2 := (rem * sum1) % base
	sum1 += (a2 & 0xffff) + base - 1
	sum2 += (a1 >> 16) + (a2 >> 16) + base - rem
	if sum1 >= base {
		sum1 -= base
	}
	if sum1 >= base {
		sum1 -= base
	}
	if sum2 >= base<<1 {
		sum2 -= base << 1
	}
	if sum2 >= base {
		sum2 -= base
	}
	return sum1 | sum2<<16
}

// chunkWriter writes PNG chunks, gathering IDAT data into chunks of idatSize bytes. The first
// error sticks.
type chunkWriter struct {
	w io.Writer

	buf []byte
	err error
}

const pngSignature = "\x89PNG\r\n\x1a\n"

func (c *chunkWriter) writeHeader(l *layout) {
	c.write([]byte(pngSignature))
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(l.w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(l.h))
	ihdr[8] = 8 // bit depth
	ihdr[9] = l.ct
	c.chunk("IHDR", ihdr[:])
}

func (c *chunkWriter) write(p []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(p)
	}
}

func (c *chunkWriter) chunk(name string, data []byte) {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], name)
	crc := crc32.Update(crc32.ChecksumIEEE(hdr[4:8]), crc32.IEEETable, data)
	var foot [4]byte
	binary.BigEndian.PutUint32(foot[:], crc)
	c.write(hdr[:])
	c.write(data)
	c.write(foot[:])
}

func (c *chunkWriter) idat(p []byte) {
	if c.buf == nil {
		c.buf = make([]byte, 0, idatSize)
	}
	for len(p) > 0 && c.err == nil {
		n := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p = c.buf[:len(c.buf)+n], p[n:]
		if len(c.buf) == cap(c.buf) {
			c.flushIDAT()
		}
	}
}

func (c *chunkWriter) flushIDAT() {
	if len(c.buf) > 0 {
		c.chunk("IDAT", c.buf)
		c.buf = c.buf[:0]
	}
}
