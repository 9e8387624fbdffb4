// Package inflate is a zlib (RFC 1950) and DEFLATE (RFC 1951) decoder for PNG's IDAT stream,
// faster than compress/flate and klauspost/compress on the literal-heavy streams photos
// make: it decodes into a flat output buffer (no ring), refills a 64-bit bit buffer eight
// bytes at a time, and resolves a symbol with one table load (two for codes longer than the
// first-level table), lengths and distances with their extra-bit counts packed into the
// entry.
//
// It reads its source exactly as compress/zlib does: compress/zlib wraps a plain io.Reader
// in a 4096-byte bufio.Reader, and compress/flate takes bytes from it one at a time, only
// when the next symbol needs them, and copies stored blocks with io.ReadFull. This decoder
// makes the same Read calls, with the same lengths, at the same points of the stream (it only
// looks ahead into bytes those calls already returned). A PNG decoder's checks that depend on
// how much of the IDAT data was read (stray bytes after the zlib stream, the CRC of the last
// chunk) therefore come out as they do with compress/zlib; FuzzZlib checks it.
//
// Errors are compress/zlib's values (zlib.ErrHeader, zlib.ErrDictionary, zlib.ErrChecksum,
// io.ErrUnexpectedEOF, the source's own) or a flate.CorruptInputError, whose offset may
// differ from compress/flate's.
package inflate

import (
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"slices"
	"sync"
)

const (
	windowSize = 1 << 15 // the largest distance DEFLATE can refer back
	maxMatch   = 258
	// unitSize is bufio.Reader's default size, which compress/zlib reads its source with.
	unitSize = 4096
	// outChunk is how much is decoded beyond the window before the output buffer slides.
	outChunk = 256 << 10
	// outLimit is where decoding stops until the output is read; a match or one stored-block
	// read (at most a window's worth, as compress/flate's) may run past it.
	outLimit = windowSize + outChunk
	outSize  = outLimit + windowSize + maxMatch
)

// Table entries: bits 0-4 the code length to consume, 5-7 the kind, 8-11 the extra-bit
// count (for a subtable link: its index bits; for literals: how many, 1 or 2), 16-31 the
// value (literal bytes, length or distance base, subtable offset). A literal/length table
// entry holds two literals when both codes fit in its first-level bits together: noisy
// photos deflate to almost nothing but literals of 5-8 bits.
const (
	kindLiteral = iota << 5
	kindLength
	kindEnd
	kindLink
	kindInvalid
	kindMask = 7 << 5
)

const (
	litBits  = 11 // first-level bits of the literal/length table
	distBits = 8  // and of the distance table
	clenBits = 7  // code-length codes are at most 7 bits: one level
)

// litInfo and distInfo are each symbol's table entry without its code length.
var (
	litInfo  [288]uint32
	distInfo [32]uint32
)

func init() {
	for s := 0; s < 256; s++ {
		litInfo[s] = kindLiteral | 1<<8 | uint32(s)<<16
	}
	litInfo[256] = kindEnd
	base := 3
	for s := 257; s < 286; s++ {
		extra := 0
		if s >= 265 && s < 285 {
			extra = (s - 261) / 4
		}
		if s == 285 {
			base = 258
		}
		litInfo[s] = kindLength | uint32(extra)<<8 | uint32(base)<<16
		base += 1 << extra
	}
	litInfo[286], litInfo[287] = kindInvalid, kindInvalid
	base = 1
	for s := 0; s < 30; s++ {
		extra := 0
		if s >= 4 {
			extra = (s - 2) / 2
		}
		distInfo[s] = kindLength | uint32(extra)<<8 | uint32(base)<<16
		base += 1 << extra
	}
	distInfo[30], distInfo[31] = kindInvalid, kindInvalid
	var lengths [288 + 32]uint8
	for i := range 288 {
		switch {
		case i < 144:
			lengths[i] = 8
		case i < 256:
			lengths[i] = 9
		case i < 280:
			lengths[i] = 7
		default:
			lengths[i] = 8
		}
	}
	for i := 288; i < 320; i++ {
		lengths[i] = 5
	}
	if !fixedLit.build(lengths[:288], litInfo[:288], litBits, true) || !fixedDist.build(lengths[288:], distInfo[:32], distBits, false) {
		panic("inflate: fixed Huffman tables")
	}
}

// fixedLit and fixedDist decode blocks with the fixed codes of RFC 1951 3.2.6.
var fixedLit, fixedDist table

// table decodes one canonical Huffman code: a first level indexed by the next bits of the
// stream, with links to second-level tables for longer codes.
type table struct {
	bits    uint
	entries []uint32
	// Scratch for build, sized so that an index masked with 511 needs no bounds check: the
	// symbols ordered by length, their codes, and the first-level indexes that link.
	sorted [512]uint16
	rev    [512]uint32
	long   [512]uint16
}

// build makes the table for code lengths (one per symbol, 0 for unused); with pairs, every
// first-level index whose bits hold the whole codes of two literals gets an entry of both.
// It accepts what compress/flate accepts: a complete code, a single code of length 1, or
// no code at all (an error only if a symbol is decoded with it); anything else returns
// false.
//
// The first level is built by length, shortest codes first, in a table that doubles from
// one entry to 1<<primary: a code of length l goes in once, at its bit-reversed index, when
// the table has 1<<l entries, and the doublings copy it to every index that begins with it.
// Pairs go in the same way, when the table has as many bits as the two codes together, and
// overwrite their first literal's entry. This writes each code once, plus copies, where
// writing every code at all its indexes took twice as long, and a second pass to pair the
// literals as long again (BenchmarkDynamicTables).
func (t *table) build(lengths []uint8, info []uint32, primary uint, pairs bool) bool {
	// count[l] codes of length l, lits[l] of them literals; start[l] is where they begin in
	// sorted, the symbols ordered by length then value, which is canonical code order.
	var count, lits, start, next [16]int
	for s, l := range lengths {
		count[l&15]++
		if s < 256 {
			lits[l&15]++
		}
	}
	count[0] = 0
	maxLen, code, n := 0, 0, 0
	for l := 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
		start[l] = n
		n += count[l]
		if count[l] != 0 {
			maxLen = l
		}
	}
	if maxLen > 0 && next[maxLen]+count[maxLen] != 1<<maxLen {
		if maxLen != 1 || count[1] != 1 {
			return false
		}
	}
	sorted, rev := &t.sorted, &t.rev
	at := start
	for s, l := range lengths {
		if l != 0 {
			sorted[at[l&15]&511] = uint16(s)
			at[l&15]++
		}
	}
	// rev holds every code bit-reversed as it is read and, for literals (to pair), the
	// symbol in bits 24-31.

	t.bits = primary
	size := 1 << primary
	t.entries = slices.Grow(t.entries[:0], size)[:size]
	first := t.entries[:size]
	// What the code does not have is invalid with length 0, and decoding it fails at once,
	// as with compress/flate; a complete code overwrites every entry.
	first[0] = kindInvalid
	for l := 1; l <= int(primary); l++ {
		copy(first[1<<(l-1):1<<l], first[:1<<(l-1)])
		c := next[l]
		for k := start[l]; k < start[l]+count[l]; k++ {
			s := sorted[k&511]
			r := reverse(c, l)
			c++
			rev[k&511] = uint32(r) | uint32(s)<<24
			first[r&(size-1)] = info[s] | uint32(l)
		}
		if !pairs {
			continue
		}
		// Literal pairs of l bits together. A pair's entry at a.rev | b.rev<<la, with
		// la + lb = l, is copied by the doublings to every index that begins with both.
		for la := 1; la < l; la++ {
			lb := l - la
			bs := rev[start[lb]&511 : (start[lb]+lits[lb])&511]
			for _, a := range rev[start[la]&511 : (start[la]+lits[la])&511] {
				e := kindLiteral | 2<<8 | uint32(l) | a>>24<<16
				ra := int(a & 0xffff)
				for _, b := range bs {
					first[(ra|int(b&0xffff)<<la)&(size-1)] = e | b&0xff000000
				}
			}
		}
	}
	if maxLen <= int(primary) {
		return true
	}
	// Longer codes: in canonical order, those beginning with the same first-level index
	// come together, the longest last, so one pass finds each second-level table's index
	// bits, kept in its link entry until the tables are laid out.
	nlong, long := 0, &t.long
	for l := int(primary) + 1; l <= maxLen; l++ {
		c := next[l]
		for k := start[l]; k < start[l]+count[l]; k++ {
			r := reverse(c, l)
			c++
			rev[k&511] = uint32(r)
			p := r & (size - 1)
			if nlong == 0 || int(long[nlong-1]) != p {
				long[nlong&511] = uint16(p)
				nlong++
			}
			first[p] = kindLink | uint32(l-int(primary))<<8
		}
	}
	for _, p := range long[:nlong] {
		sub := t.entries[p] >> 8 & 15
		off := len(t.entries)
		t.entries = slices.Grow(t.entries, 1<<sub)[:off+1<<sub]
		t.entries[p] = kindLink | sub<<8 | uint32(off)<<16 | uint32(primary)
	}
	for l := int(primary) + 1; l <= maxLen; l++ {
		for k := start[l]; k < start[l]+count[l]; k++ {
			r := int(rev[k&511])
			e := info[sorted[k&511]] | uint32(l)
			link := t.entries[r&(size-1)]
			off, sub := int(link>>16), int(link>>8&15)
			for i := r >> primary; i < 1<<sub; i += 1 << (l - int(primary)) {
				t.entries[off+i] = e
			}
		}
	}
	return true
}

// reverse returns the n low bits of code in reverse order: DEFLATE packs Huffman codes
// starting with their most significant bit.
func reverse(code, n int) int { return int(bits.Reverse16(uint16(code)) >> (16 - n)) }

// Reader is a zlib stream decoder; see the package comment.
type Reader struct {
	src io.Reader
	err error // sticky: the first error, io.EOF after the checksum

	// The input: in[pos:end] are bytes read from src and not yet in the bit buffer; bb holds
	// nb bits, the next one lowest.
	in       [unitSize]byte
	pos, end int
	srcErr   error // what src returned with its last bytes, reported when more are needed
	bb       uint64
	nb       uint

	// The output: out[r:w] is decoded and not yet returned; out[w-windowSize:w] is the window.
	out    []byte
	r, w   int
	total  int64  // bytes decoded before out[0]
	adler  uint32 // Adler-32 of out[:summed] and everything before it
	summed int

	// The block being decoded.
	inBlock  bool
	final    bool
	stored   int // bytes left in a stored block
	lit      *table
	dist     *table
	dynLit   table
	dynDist  table
	clen     table
	lengths  [288 + 32]uint8
	clengths [19]uint8
}

// NewReader returns a decoder of the zlib stream in src, having read its header as
// zlib.NewReader does.
func NewReader(src io.Reader) (*Reader, error) {
	z := &Reader{src: src, out: outBuffers.Get().(*[outSize]byte)[:], adler: 1}
	if err := z.readHeader(); err != nil {
		z.Close()
		return nil, err
	}
	return z, nil
}

func (z *Reader) readHeader() error {
	var h [2]byte
	if err := z.readBytes(h[:]); err != nil {
		return noEOF(err)
	}
	if h[0]&0x0f != 8 || h[0]>>4 > 7 || (uint(h[0])<<8|uint(h[1]))%31 != 0 {
		return zlib.ErrHeader
	}
	if h[1]&0x20 != 0 {
		// A preset dictionary: compress/zlib without one accepts only the empty one's id.
		var id [4]byte
		if err := z.readBytes(id[:]); err != nil {
			return noEOF(err)
		}
		if binary.BigEndian.Uint32(id[:]) != 1 {
			return zlib.ErrDictionary
		}
	}
	return nil
}

// outBuffers holds the output buffers of closed decoders. A stream's buffer is about 320 KiB
// whatever the stream's size, so without reuse a 16x16 PNG's conversion allocated 340 KiB,
// nearly all of it here (convert's BenchmarkConvertSmall). Nothing is read from a reused
// buffer before this stream wrote it: a distance past what the stream decoded is corrupt.
var outBuffers = sync.Pool{New: func() any { return new([outSize]byte) }}

// errClosed is what a Read after Close returns.
var errClosed = errors.New("inflate: read after Close")

// Close gives the decoder's output buffer back for another stream; Read fails after it.
func (z *Reader) Close() error {
	if z.out != nil {
		outBuffers.Put((*[outSize]byte)(z.out))
		z.out, z.r, z.w, z.err = nil, 0, 0, errClosed
	}
	return nil
}

// Read returns decoded bytes; io.EOF after the last one once the checksum matched.
func (z *Reader) Read(p []byte) (int, error) {
	for {
		if z.r < z.w {
			n := copy(p, z.out[z.r:z.w])
			z.r += n
			return n, nil
		}
		if z.err != nil {
			return 0, z.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		if z.w >= outLimit {
			z.slide()
		}
		z.err = z.decode()
		if z.err == io.EOF {
			z.err = z.checksum()
		}
	}
}

// slide keeps the last window of output at the start of the buffer.
func (z *Reader) slide() {
	z.sum()
	n := copy(z.out, z.out[z.w-windowSize:z.w])
	z.total += int64(z.w - n)
	z.r, z.w, z.summed = n, n, n
}

// sum adds the output not yet checksummed to the Adler-32.
func (z *Reader) sum() {
	z.adler = adler32Update(z.adler, z.out[z.summed:z.w])
	z.summed = z.w
}

// checksum reads and checks the Adler-32 after the last block: io.EOF when it matches.
func (z *Reader) checksum() error {
	z.sum()
	z.alignToByte()
	var b [4]byte
	if err := z.readBytes(b[:]); err != nil {
		return noEOF(err)
	}
	if binary.BigEndian.Uint32(b[:]) != z.adler {
		return zlib.ErrChecksum
	}
	return io.EOF
}

// fill reads the next unit from src into the empty input buffer, as bufio.Reader.fill does
// for compress/flate when it needs a byte and has none buffered.
func (z *Reader) fill() error {
	if z.srcErr != nil {
		return z.srcErr
	}
	for range 100 {
		n, err := z.src.Read(z.in[:])
		z.pos, z.end = 0, n
		if err != nil {
			z.srcErr = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// readBytes reads len(p) whole bytes from the bit buffer (which must hold whole bytes only),
// the input buffer and src, as io.ReadFull on compress/zlib's bufio.Reader would: a read of
// unitSize or more with nothing buffered goes straight to src.
func (z *Reader) readBytes(p []byte) error {
	n := 0
	for n < len(p) && z.nb >= 8 {
		p[n] = byte(z.bb)
		z.bb >>= 8
		z.nb -= 8
		n++
	}
	if z.nb == 0 {
		z.bb = 0 // it may hold a preloaded copy of in[pos], about to be taken here
	}
	for n < len(p) {
		if z.pos < z.end {
			c := copy(p[n:], z.in[z.pos:z.end])
			z.pos += c
			n += c
			continue
		}
		if z.srcErr != nil {
			return z.srcErr
		}
		if len(p)-n >= unitSize {
			c, err := z.src.Read(p[n:])
			n += c
			if err != nil {
				z.srcErr = err
				if n < len(p) {
					return err
				}
			}
			continue
		}
		if err := z.fill(); err != nil {
			return err
		}
	}
	return nil
}

// need makes the bit buffer hold at least n bits, reading from src when the input buffer is
// empty; n is at most 56.
func (z *Reader) need(n uint) error {
	for z.nb < n {
		if z.pos == z.end {
			if err := z.fill(); err != nil {
				return noEOF(err)
			}
		}
		z.bb |= uint64(z.in[z.pos]) << z.nb
		z.pos++
		z.nb += 8
	}
	return nil
}

// alignToByte drops the bits left of the current byte: stored blocks and the checksum start
// on a byte boundary.
func (z *Reader) alignToByte() {
	z.bb >>= z.nb % 8
	z.nb -= z.nb % 8
}

// getBits takes n bits (n <= 32) from the stream.
func (z *Reader) getBits(n uint) (uint32, error) {
	if err := z.need(n); err != nil {
		return 0, err
	}
	v := uint32(z.bb & (1<<n - 1))
	z.bb >>= n
	z.nb -= n
	return v, nil
}

// corrupt is the error for invalid data, at the input offset reached.
func (z *Reader) corrupt() error { return flate.CorruptInputError(z.total + int64(z.w)) }

// decode decodes blocks until the output reaches outLimit (nil) or the last block ends
// (io.EOF), or an error.
func (z *Reader) decode() error {
	for z.w < outLimit {
		if !z.inBlock {
			if z.final {
				return io.EOF
			}
			if err := z.blockHeader(); err != nil {
				return err
			}
			continue
		}
		var err error
		if z.lit == nil {
			err = z.copyStored()
		} else {
			err = z.huffman()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// blockHeader reads a block's header, and a dynamic block's code tables.
func (z *Reader) blockHeader() error {
	h, err := z.getBits(3)
	if err != nil {
		return err
	}
	z.final = h&1 != 0
	switch h >> 1 {
	case 0:
		z.alignToByte()
		var b [4]byte
		if err := z.readBytes(b[:]); err != nil {
			return noEOF(err)
		}
		n := binary.LittleEndian.Uint16(b[:2])
		if n != ^binary.LittleEndian.Uint16(b[2:]) {
			return z.corrupt()
		}
		z.stored = int(n)
		z.lit, z.dist = nil, nil
	case 1:
		z.lit, z.dist = &fixedLit, &fixedDist
	case 2:
		if err := z.dynamicTables(); err != nil {
			return err
		}
		z.lit, z.dist = &z.dynLit, &z.dynDist
	default:
		return z.corrupt()
	}
	z.inBlock = true
	return nil
}

// clenOrder is the order code-length code lengths are sent in.
var clenOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// clenInfo is the code-length alphabet's entries: the symbol as the value.
var clenInfo = func() (t [19]uint32) {
	for i := range t {
		t[i] = kindLiteral | uint32(i)<<16
	}
	return
}()

// dynamicTables reads a dynamic block's code lengths and builds its tables.
func (z *Reader) dynamicTables() error {
	h, err := z.getBits(14)
	if err != nil {
		return err
	}
	nlit, ndist, nclen := int(h&31)+257, int(h>>5&31)+1, int(h>>10)+4
	if nlit > 286 || ndist > 30 {
		return z.corrupt()
	}
	z.clengths = [19]uint8{}
	for i := range nclen {
		v, err := z.getBits(3)
		if err != nil {
			return err
		}
		z.clengths[clenOrder[i]] = uint8(v)
	}
	if !z.clen.build(z.clengths[:], clenInfo[:], clenBits, false) {
		return z.corrupt()
	}
	n := nlit + ndist
	for i := 0; i < n; {
		e, err := z.symbol(&z.clen)
		if err != nil {
			return err
		}
		if e&kindMask != kindLiteral {
			return z.corrupt()
		}
		sym := uint8(e >> 16)
		if sym < 16 {
			z.lengths[i] = sym
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return z.corrupt()
			}
			v, err := z.getBits(2)
			if err != nil {
				return err
			}
			rep, val = 3+int(v), z.lengths[i-1]
		case 17:
			v, err := z.getBits(3)
			if err != nil {
				return err
			}
			rep = 3 + int(v)
		default:
			v, err := z.getBits(7)
			if err != nil {
				return err
			}
			rep = 11 + int(v)
		}
		if i+rep > n {
			return z.corrupt()
		}
		for range rep {
			z.lengths[i] = val
			i++
		}
	}
	if !z.dynLit.build(z.lengths[:nlit], litInfo[:nlit], litBits, true) ||
		!z.dynDist.build(z.lengths[nlit:n], distInfo[:ndist], distBits, false) {
		return z.corrupt()
	}
	return nil
}

// symbol decodes one symbol with t bit by bit of need, returning its entry (the code-length
// codes: a short stretch, not worth the fast path).
func (z *Reader) symbol(t *table) (uint32, error) {
	for {
		e := t.entries[z.bb&(1<<t.bits-1)]
		if e&kindMask == kindLink {
			e = t.entries[int(e>>16)+int(z.bb>>t.bits)&(1<<(e>>8&15)-1)]
		}
		n := uint(e & 31)
		if e&kindMask == kindInvalid {
			return 0, z.corrupt()
		}
		if n <= z.nb {
			z.bb >>= n
			z.nb -= n
			return e, nil
		}
		if err := z.need(z.nb + 1); err != nil {
			return 0, err
		}
	}
}

// copyStored copies a stored block's bytes, in the pieces compress/flate reads them: up to
// the end of its 32 KiB ring buffer at a time.
func (z *Reader) copyStored() error {
	for z.stored > 0 && z.w < outLimit {
		n := min(z.stored, windowSize-int((z.total+int64(z.w))%windowSize))
		err := z.readBytes(z.out[z.w : z.w+n])
		if err != nil {
			// compress/flate keeps what io.ReadFull got before the error; which bytes that
			// was does not matter here: the stream is cut, and the error is all that is left.
			return noEOF(err)
		}
		z.w += n
		z.stored -= n
	}
	if z.stored == 0 {
		z.inBlock = false
	}
	return nil
}

// huffman decodes a Huffman-coded block until its end or until the output reaches outLimit.
// The loop keeps the bit buffer, input and output positions in locals; while eight input
// bytes are buffered it refills the bit buffer with one load, otherwise byte by byte with
// need's semantics, so it never reads src before compress/flate would.
func (z *Reader) huffman() error {
	// Only what the literal path uses lives across the loop, which halved the compiler's
	// spills to the stack; the rest is loaded from z when a length or a long code needs it.
	var (
		bb   = z.bb
		nb   = z.nb
		in   = &z.in
		end  = z.end
		pos  = z.pos
		out  = (*[outSize]byte)(z.out)
		w    = z.w
		litP = (*[1 << litBits]uint32)(z.lit.entries)
	)
decoding:
	for w < outLimit {
		// huffmanFast (amd64 with BMI2) decodes while there is room and input; this loop
		// goes on from the symbol it stops at, and decodes the same symbols without it.
		if hasHuffmanFast && pos+8 <= end {
			bb, nb, pos, w = huffmanFast(in, out, &litP[0], &z.dist.entries[0], bb, nb, pos, end, w)
			if w >= outLimit {
				break
			}
		}
		if pos+8 <= end {
			bb |= binary.LittleEndian.Uint64(in[pos:pos+8]) << (nb & 63)
			pos += int((63 - nb) >> 3)
			nb |= 56
		} else {
			for nb <= 56 && pos < end {
				bb |= uint64(in[pos]) << nb
				pos++
				nb += 8
			}
		}
		e := litP[bb&(1<<litBits-1)]
		if e&kindMask == kindLink {
			e = z.lit.entries[int(e>>16)+int(bb>>litBits)&(1<<(e>>8&15)-1)]
		}
		if n := uint(e & 31); n <= nb {
			switch e & kindMask {
			case kindLiteral:
				// One or two literals; the second byte written is overwritten next if unused.
				// A literal entry's kind bits are 0, so e&63 is its length: a shift masks its
				// count to six bits itself, so the next lookup waits for the load and the shift
				// only, not for an AND between them too.
				binary.LittleEndian.PutUint16(out[w:w+2], uint16(e>>16))
				w += int(e >> 8 & 3)
				bb >>= e & 63
				nb -= n
				// And one or two more without a refill when the bits are there.
				e = litP[bb&(1<<litBits-1)]
				if e&kindMask == kindLiteral && uint(e&31) <= nb {
					binary.LittleEndian.PutUint16(out[w:w+2], uint16(e>>16))
					w += int(e >> 8 & 3)
					bb >>= e & 63
					nb -= uint(e & 31)
				}
				continue
			case kindEnd:
				bb >>= n
				nb -= n
				z.inBlock = false
				break decoding
			case kindInvalid:
				z.bb, z.nb, z.pos, z.w = bb, nb, pos, w
				return z.corrupt()
			}
			// A length, then a distance: peek all their bits before taking any, so that a
			// symbol cut by the end of the buffered input is decoded again whole after a read.
			lx := uint(e >> 8 & 15)
			if used := n + lx; used <= nb {
				length := int(e>>16) + int(bb>>n&(1<<lx-1))
				dist := z.dist.entries
				d := dist[bb>>used&(1<<distBits-1)]
				if d&kindMask == kindLink {
					d = dist[int(d>>16)+int(bb>>(used+distBits))&(1<<(d>>8&15)-1)]
				}
				dn := uint(d & 31)
				if d&kindMask == kindInvalid && used+dn <= nb {
					z.bb, z.nb, z.pos, z.w = bb, nb, pos, w
					return z.corrupt()
				}
				dx := uint(d >> 8 & 15)
				if all := used + dn + dx; all <= nb {
					dst := int(d>>16) + int(bb>>(used+dn)&(1<<dx-1))
					bb >>= all
					nb -= all
					if dst > w {
						z.bb, z.nb, z.pos, z.w = bb, nb, pos, w
						return z.corrupt()
					}
					to := w + length
					if dst >= length {
						copy(out[w:to], out[w-dst:])
						w = to
					} else {
						src := w - dst
						for w < to {
							w += copy(out[w:to], out[src:w])
						}
					}
					continue
				}
			}
		}
		// The symbol runs past the bits there are, which happens only once the buffered
		// input is used up (the refill above stops short only then): read on, as
		// compress/flate would now, and decode the symbol again.
		z.bb, z.nb, z.pos = bb, nb, pos
		if err := z.need(nb + 8); err != nil {
			z.w = w
			return err
		}
		bb, nb, pos, end = z.bb, z.nb, z.pos, z.end
	}
	z.bb, z.nb, z.pos, z.w = bb, nb, pos, w
	return nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: a zlib stream may not end early.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Adler-32 (RFC 1950): adlerMod is its modulus, adlerNMax the most bytes that can be summed
// before reducing without overflowing 32 bits (255n(n+1)/2 + (n+1)(adlerMod-1) < 2^32).
const (
	adlerMod  = 65521
	adlerNMax = 5552
)

// adler32Update is hash/adler32's running checksum of p after adler, sixteen bytes at a
// time: s2 takes 16*s1 plus the bytes weighted 16..1, which is what sixteen one-byte steps
// add, without their chain of dependent additions (hash/adler32 was 3% of a PNG->JPEG's
// CPU). Each eight bytes are one load split into 16-bit lanes, the even bytes and the odd
// ones, and each sum is the top lane of multiplies: lane i times weight j lands in lane
// i+j, so the top lane gets the lanes weighted by the constant's lanes reversed. No lane of
// the sums can carry into the next (the largest, the top one, is at most 255*136 = 34680).
//
// With AVX2 (amd64), the whole 32-byte blocks of each reduction block go to adler32AVX2,
// five to ten times as fast again (BenchmarkAdler32Update: 2.0 -> 10-20 GB/s, by the
// machine's load), and the rest to the loop below.
func adler32Update(adler uint32, p []byte) uint32 {
	const (
		lanes = 0x00ff_00ff_00ff_00ff
		ones  = 0x0001_0001_0001_0001
		even  = 0x0010_000e_000c_000a // bytes 0, 2, 4, 6 weigh 16, 14, 12, 10
		odd   = 0x000f_000d_000b_0009 // bytes 1, 3, 5, 7 weigh 15, 13, 11, 9
		even2 = 0x0008_0006_0004_0002 // bytes 8, 10, 12, 14 weigh 8, 6, 4, 2
		odd2  = 0x0007_0005_0003_0001 // bytes 9, 11, 13, 15 weigh 7, 5, 3, 1
	)
	s1, s2 := adler&0xffff, adler>>16
	for len(p) > 0 {
		q := p[:min(len(p), adlerNMax)]
		p = p[len(q):]
		if hasAVX2 && len(q) >= 32 {
			k := len(q) &^ 31
			s1, s2 = adler32AVX2(s1, s2, q[:k])
			q = q[k:]
		}
		for len(q) >= 16 {
			x, y := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:16])
			e, o := x&lanes, x>>8&lanes
			e2, o2 := y&lanes, y>>8&lanes
			s2 += 16*s1 + uint32((e*even+o*odd+e2*even2+o2*odd2)>>48)
			s1 += uint32((e + o + e2 + o2) * ones >> 48)
			q = q[16:]
		}
		for _, c := range q {
			s1 += uint32(c)
			s2 += s1
		}
		s1 %= adlerMod
		s2 %= adlerMod
	}
	return s2<<16 | s1
}

// Reset makes z a decoder of the zlib stream in src, as NewReader(src) would return, having
// read its header: what it reads and returns from then on is NewReader's. It keeps z's input
// buffer and the storage of its Huffman tables, and its output buffer (one from the pool if z
// was closed), so a caller decoding many small streams in turn (tiffstrip's deflate tiles)
// allocates nothing per stream. On a header error z is closed, as NewReader closes its
// decoder; it can be Reset again.
func (z *Reader) Reset(src io.Reader) error {
	out := z.out
	if out == nil {
		out = outBuffers.Get().(*[outSize]byte)[:]
	}
	z.src, z.err = src, nil
	z.pos, z.end, z.srcErr, z.bb, z.nb = 0, 0, nil, 0, 0
	z.out, z.r, z.w, z.total, z.adler, z.summed = out, 0, 0, 0, 1, 0
	z.inBlock, z.final, z.stored, z.lit, z.dist = false, false, 0, nil, nil
	if err := z.readHeader(); err != nil {
		z.Close()
		return err
	}
	return nil
}
