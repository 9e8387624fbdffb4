// Package flacdec is a FLAC decoder for streams of 4 to 24 bits per sample: a 64-bit bit reader
// over a buffered window of the input (no reader per bit, no tee for the checksums), Rice
// residuals read with a count of leading zeros, and every frame's CRC-8 and CRC-16 checked.
// Buffers are kept between frames; nothing is allocated per sample.
package flacdec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/convsvc/convsvc/convert/internal/flaccrc"
)

// Info is the stream's STREAMINFO.
type Info struct {
	Rate, Channels, Bits int
	// Samples is the samples per channel, 0 when unknown.
	Samples int64
	// BlockSizeMax is the largest block size the stream declares.
	BlockSizeMax int
}

// ErrUnsupported reports a valid stream this decoder does not handle (more than 24 bits per
// sample); the caller may fall back to another decoder.
var ErrUnsupported = errors.New("flacdec: unsupported stream")

// errShort is returned by a frame decode that ran past the buffered bytes.
var errShort = errors.New("flacdec: short buffer")

// Decoder reads a FLAC stream frame by frame. It is not safe for concurrent use.
type Decoder struct {
	r     io.Reader
	info  Info
	buf   []byte
	pos   int // start of unread bytes in buf
	eof   bool
	chans [][]int32
	res   []int32
}

// NewDecoder reads the "fLaC" marker and the metadata blocks. Errors wrap io.ErrUnexpectedEOF
// when the input ends early.
func NewDecoder(r io.Reader) (*Decoder, error) {
	d := &Decoder{r: r, buf: make([]byte, 0, 64<<10)}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("flacdec: %w", unexpected(err))
	}
	if string(hdr[:]) != "fLaC" {
		return nil, errors.New("flacdec: no fLaC marker")
	}
	first := true
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("flacdec: metadata: %w", unexpected(err))
		}
		last, typ, n := hdr[0]&0x80 != 0, hdr[0]&0x7F, int(hdr[1])<<16|int(hdr[2])<<8|int(hdr[3])
		if first {
			if typ != 0 || n != 34 {
				return nil, errors.New("flacdec: the first metadata block is not STREAMINFO")
			}
			var si [34]byte
			if _, err := io.ReadFull(r, si[:]); err != nil {
				return nil, fmt.Errorf("flacdec: STREAMINFO: %w", unexpected(err))
			}
			v := binary.BigEndian.Uint64(si[10:])
			d.info = Info{
				BlockSizeMax: int(binary.BigEndian.Uint16(si[2:])),
				Rate:         int(v >> 44),
				Channels:     int(v>>41&7) + 1,
				Bits:         int(v>>36&31) + 1,
				Samples:      int64(v & (1<<36 - 1)),
			}
			if d.info.Rate == 0 {
				return nil, errors.New("flacdec: STREAMINFO sample rate 0")
			}
			if d.info.Bits < 4 {
				return nil, fmt.Errorf("flacdec: STREAMINFO says %d bits per sample", d.info.Bits)
			}
			first = false
		} else if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return nil, fmt.Errorf("flacdec: metadata: %w", unexpected(err))
		}
		if last {
			break
		}
	}
	if d.info.Bits > 24 {
		return d, ErrUnsupported
	}
	d.chans = make([][]int32, d.info.Channels)
	return d, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Info returns the stream's STREAMINFO.
func (d *Decoder) Info() Info { return d.info }

// Next decodes the next frame into per-channel samples, valid until the next call. It returns
// io.EOF at the end of the stream and an error wrapping io.ErrUnexpectedEOF when the input ends
// inside a frame.
func (d *Decoder) Next() ([][]int32, error) {
	for {
		if more, err := d.ready(); err != nil {
			return nil, err
		} else if !more {
			return nil, io.EOF
		}
		n, err := d.frame(d.buf[d.pos:])
		if err == errShort {
			if d.eof {
				return nil, fmt.Errorf("flacdec: frame: %w", io.ErrUnexpectedEOF)
			}
			if err := d.fill(2 * (len(d.buf) - d.pos)); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		d.pos += n
		return d.chans, nil
	}
}

// ready keeps at least 32 KiB of unread input in the window (the frame being read and the
// next header), or what is left of it; false when none is left.
func (d *Decoder) ready() (bool, error) {
	if len(d.buf)-d.pos < 32<<10 && !d.eof {
		if err := d.fill(32 << 10); err != nil {
			return false, err
		}
	}
	return d.pos < len(d.buf), nil
}

// fill reads until want unread bytes are buffered or the input ends.
func (d *Decoder) fill(want int) error {
	if d.pos > 0 {
		n := copy(d.buf, d.buf[d.pos:])
		d.buf = d.buf[:n]
		d.pos = 0
	}
	if cap(d.buf) < want {
		nb := make([]byte, len(d.buf), want)
		copy(nb, d.buf)
		d.buf = nb
	}
	for len(d.buf) < want && !d.eof {
		n, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+n]
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

// Frame header codes.
var (
	rates  = [12]int{0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000}
	depths = [8]int{0, 8, 12, 0, 16, 20, 24, 32}
)

// frame decodes one frame from p into d.chans and returns its length in bytes; errShort when
// p ends inside it.
func (d *Decoder) frame(p []byte) (int, error) {
	br := bitReader{p: p}
	n, err := d.decodeFrame(&br, p)
	if err != nil && br.short {
		return 0, errShort
	}
	return n, err
}

// frameHeader is what a frame header says.
type frameHeader struct {
	// samples is the frame's block size, samples per channel.
	samples int
	// number is the frame's number (fixed block size) or its first sample's (variable).
	number uint64
	// variable is the blocking strategy bit: number counts samples, not frames.
	variable bool
	// assign is the channel assignment code, bps the frame's bits per sample.
	assign, bps int
}

// header reads a frame header from br (over p, which starts with it) and checks its CRC-8 and
// that its depth and channels are the stream's; errShort when p ends inside it.
func (d *Decoder) header(br *bitReader, p []byte) (frameHeader, error) {
	var h frameHeader
	if br.read(15) != 0xFFF8>>1 {
		if br.short {
			return h, errShort
		}
		return h, errors.New("flacdec: lost frame sync")
	}
	h.variable = br.read(1) == 1
	bsCode, rateCode := br.read(4), br.read(4)
	assign, depthCode := int(br.read(4)), br.read(3)
	if br.read(1) != 0 {
		return h, errors.New("flacdec: reserved bit set in a frame header")
	}
	// The frame or sample number, UTF-8 coded: the lead byte's leading ones count its bytes.
	lead := br.read(8)
	extra := bits.LeadingZeros8(^uint8(lead))
	if extra == 1 || extra > 7 {
		return h, errors.New("flacdec: bad frame number")
	}
	h.number = lead & (0xFF >> (extra + 1))
	for i := 1; i < extra; i++ {
		c := br.read(8)
		if c&0xC0 != 0x80 {
			return h, errors.New("flacdec: bad frame number")
		}
		h.number = h.number<<6 | c&0x3F
	}
	switch {
	case bsCode == 0:
		return h, errors.New("flacdec: reserved block size code")
	case bsCode == 1:
		h.samples = 192
	case bsCode <= 5:
		h.samples = 576 << (bsCode - 2)
	case bsCode == 6:
		h.samples = int(br.read(8)) + 1
	case bsCode == 7:
		h.samples = int(br.read(16)) + 1
	default:
		h.samples = 256 << (bsCode - 8)
	}
	switch {
	case rateCode == 12:
		br.read(8)
	case rateCode == 13 || rateCode == 14:
		br.read(16)
	case rateCode == 15:
		return h, errors.New("flacdec: invalid sample rate code")
	}
	h.bps = d.info.Bits
	if depthCode != 0 {
		h.bps = depths[depthCode]
		if h.bps == 0 || h.bps != d.info.Bits {
			return h, fmt.Errorf("flacdec: a frame has %d bits per sample, the stream %d", h.bps, d.info.Bits)
		}
	}
	hdrLen := br.bytePos()
	if br.short {
		return h, errShort
	}
	if crc := uint8(br.read(8)); crc != flaccrc.CRC8(p[:hdrLen]) {
		if br.short {
			return h, errShort
		}
		return h, errors.New("flacdec: frame header CRC mismatch")
	}
	h.assign = assign
	nch := d.info.Channels
	switch {
	case assign < 8:
		if assign+1 != nch {
			return h, fmt.Errorf("flacdec: a frame has %d channels, the stream %d", assign+1, nch)
		}
	case assign <= 10:
		if nch != 2 {
			return h, fmt.Errorf("flacdec: a stereo frame in a %d-channel stream", nch)
		}
	default:
		return h, errors.New("flacdec: reserved channel assignment")
	}
	if d.info.BlockSizeMax >= 16 && h.samples > d.info.BlockSizeMax {
		return h, fmt.Errorf("flacdec: a frame of %d samples, over the stream's maximum %d", h.samples, d.info.BlockSizeMax)
	}
	return h, nil
}

func (d *Decoder) decodeFrame(br *bitReader, p []byte) (int, error) {
	h, err := d.header(br, p)
	if err != nil {
		return 0, err
	}
	n, bps, assign, nch := h.samples, h.bps, h.assign, d.info.Channels
	for c := range nch {
		sbps := bps
		if (assign == 8 && c == 1) || (assign == 9 && c == 0) || (assign == 10 && c == 1) {
			sbps++
		}
		if cap(d.chans[c]) < n {
			d.chans[c] = make([]int32, n)
		}
		d.chans[c] = d.chans[c][:n]
		if err := d.subframe(br, d.chans[c], sbps); err != nil {
			return 0, err
		}
		if br.short {
			return 0, errShort
		}
	}
	br.align()
	end := br.bytePos()
	crc := uint16(br.read(16))
	if br.short {
		return 0, errShort
	}
	if crc != flaccrc.CRC16(p[:end]) {
		return 0, errors.New("flacdec: frame CRC mismatch")
	}
	switch assign {
	case 8: // left, side
		l, s := d.chans[0], d.chans[1]
		for i := range l {
			s[i] = l[i] - s[i]
		}
	case 9: // side, right
		s, r := d.chans[0], d.chans[1]
		for i := range s {
			s[i] += r[i]
		}
	case 10: // mid, side
		m, s := d.chans[0], d.chans[1]
		for i := range m {
			side := s[i]
			mid := m[i]<<1 | side&1
			m[i] = (mid + side) >> 1
			s[i] = (mid - side) >> 1
		}
	}
	return end + 2, nil
}

// subframe decodes one subframe of len(x) samples of bps bits into x.
func (d *Decoder) subframe(br *bitReader, x []int32, bps int) error {
	if br.read(1) != 0 {
		return errors.New("flacdec: subframe padding bit set")
	}
	typ := int(br.read(6))
	wasted := 0
	if br.read(1) == 1 {
		wasted = int(br.unary()) + 1
		if wasted >= bps {
			return errors.New("flacdec: wasted bits exceed the sample size")
		}
		bps -= wasted
	}
	n := len(x)
	switch {
	case typ == 0:
		v := br.signed(bps)
		for i := range x {
			x[i] = v
		}
	case typ == 1:
		for i := range x {
			x[i] = br.signed(bps)
		}
	case typ >= 8 && typ <= 12:
		order := typ - 8
		if order > n {
			return errors.New("flacdec: predictor order exceeds the block size")
		}
		for i := range order {
			x[i] = br.signed(bps)
		}
		if err := d.residual(br, x, order); err != nil {
			return err
		}
		fixedRestore(x, order)
	case typ >= 32:
		order := typ - 31
		if order > n {
			return errors.New("flacdec: predictor order exceeds the block size")
		}
		for i := range order {
			x[i] = br.signed(bps)
		}
		prec := int(br.read(4)) + 1
		if prec == 16 {
			return errors.New("flacdec: invalid LPC precision")
		}
		shift := int(int32(br.read(5)<<27) >> 27)
		if shift < 0 {
			return errors.New("flacdec: negative LPC shift")
		}
		var coef [32]int64
		for i := range order {
			coef[i] = int64(br.signed(prec))
		}
		if err := d.residual(br, x, order); err != nil {
			return err
		}
		lpcRestore(x, coef[:order], uint(shift))
	default:
		return fmt.Errorf("flacdec: reserved subframe type %d", typ)
	}
	if wasted > 0 {
		for i := range x {
			x[i] <<= uint(wasted)
		}
	}
	return nil
}

// residual reads the Rice-coded residuals of x[order:] into place.
func (d *Decoder) residual(br *bitReader, x []int32, order int) error {
	method := br.read(2)
	if method > 1 {
		return errors.New("flacdec: reserved residual coding method")
	}
	paramBits := uint(4 + method)
	escape := uint64(1)<<paramBits - 1
	porder := int(br.read(4))
	n := len(x)
	parts := 1 << porder
	if n%parts != 0 || n>>porder < order {
		return errors.New("flacdec: invalid Rice partition order")
	}
	psize := n >> porder
	pos := order
	for i := range parts {
		end := (i + 1) * psize
		k := br.read(paramBits)
		if k == escape {
			eb := int(br.read(5))
			for j := pos; j < end; j++ {
				if eb == 0 {
					x[j] = 0
				} else {
					x[j] = br.signed(eb)
				}
			}
		} else {
			for j := pos; j < end; j++ {
				q := br.unary()
				u := uint32(q<<k) | uint32(br.read(uint(k)))
				x[j] = int32(u>>1) ^ -int32(u&1)
			}
		}
		if br.short {
			return nil // the caller sees br.short
		}
		pos = end
	}
	return nil
}

// fixedRestore turns residuals after the warm-up samples into samples.
func fixedRestore(x []int32, order int) {
	switch order {
	case 1:
		for i := 1; i < len(x); i++ {
			x[i] += x[i-1]
		}
	case 2:
		for i := 2; i < len(x); i++ {
			x[i] += 2*x[i-1] - x[i-2]
		}
	case 3:
		for i := 3; i < len(x); i++ {
			x[i] += 3*x[i-1] - 3*x[i-2] + x[i-3]
		}
	case 4:
		for i := 4; i < len(x); i++ {
			x[i] += 4*x[i-1] - 6*x[i-2] + 4*x[i-3] - x[i-4]
		}
	}
}

// lpcRestore turns residuals into samples with the quantised LPC coefficients (64-bit sums).
// Order 8 (flac -3 to -7) is unrolled; other orders run a loop over reversed coefficients.
func lpcRestore(x []int32, coef []int64, shift uint) {
	order := len(coef)
	if order == 8 {
		c0, c1, c2, c3, c4, c5, c6, c7 := coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6], coef[7]
		for i := 8; i < len(x); i++ {
			h := x[i-8 : i : i]
			sum := c0*int64(h[7]) + c1*int64(h[6]) + c2*int64(h[5]) + c3*int64(h[4]) +
				c4*int64(h[3]) + c5*int64(h[2]) + c6*int64(h[1]) + c7*int64(h[0])
			x[i] += int32(sum >> shift)
		}
		return
	}
	var rev [32]int64
	for j, c := range coef {
		rev[order-1-j] = c
	}
	rc := rev[:order]
	for i := order; i < len(x); i++ {
		h := x[i-order : i]
		rc := rc[:len(h)]
		var sum int64
		for j, v := range h {
			sum += rc[j] * int64(v)
		}
		x[i] += int32(sum >> shift)
	}
}

// bitReader reads bits MSB first from p through a 64-bit cache; past the end it yields zeros
// and sets short.
type bitReader struct {
	p     []byte
	next  int    // next byte of p to load
	cache uint64 // unread bits, left-aligned
	n     uint   // bits in cache
	short bool
}

// refill loads whole bytes into the cache; past the end of p, when fewer than need bits are
// held, it pads with zero bytes and sets short.
func (b *bitReader) refill(need uint) {
	if b.next+8 <= len(b.p) {
		v := binary.BigEndian.Uint64(b.p[b.next:])
		take := (64 - b.n) / 8
		b.cache |= v >> b.n &^ (^uint64(0) >> (b.n + take*8))
		b.n += take * 8
		b.next += int(take)
		return
	}
	for b.n <= 56 && b.next < len(b.p) {
		b.cache |= uint64(b.p[b.next]) << (56 - b.n)
		b.next++
		b.n += 8
	}
	for b.n < need {
		b.short = true
		b.n += 8 // zeros
	}
}

// read returns the next nb bits (nb <= 32).
func (b *bitReader) read(nb uint) uint64 {
	if nb == 0 {
		return 0
	}
	if b.n < nb {
		b.refill(nb)
	}
	v := b.cache >> (64 - nb)
	b.cache <<= nb
	b.n -= nb
	return v
}

// signed reads an nb-bit two's complement value (nb <= 32).
func (b *bitReader) signed(nb int) int32 {
	v := b.read(uint(nb))
	return int32(int64(v<<(64-uint(nb))) >> (64 - uint(nb)))
}

// unary counts zero bits up to the next one bit and consumes both.
func (b *bitReader) unary() uint64 {
	var q uint64
	for {
		if b.cache == 0 || b.n == 0 {
			q += uint64(b.n)
			b.cache, b.n = 0, 0
			if b.short {
				return q
			}
			b.refill(1)
			if q > 1<<32 {
				b.short = true
				return q
			}
			continue
		}
		z := uint(bits.LeadingZeros64(b.cache))
		if z >= b.n {
			q += uint64(b.n)
			b.cache, b.n = 0, 0
			b.refill(1)
			continue
		}
		b.cache <<= z + 1
		b.n -= z + 1
		return q + uint64(z)
	}
}

// bytePos is the byte offset of the next unread bit (on a byte boundary).
func (b *bitReader) bytePos() int { return b.next - int(b.n/8) }

// align skips to the next byte boundary.
func (b *bitReader) align() { b.read(b.n % 8) }
