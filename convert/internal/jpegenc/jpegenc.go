// Copyright 2011 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package jpegenc is a derived copy of the standard library's baseline JPEG encoder
// (image/jpeg's writer.go and dct.go, go1.26, BSD licence, notices kept in each file) that
// writes exactly the bytes jpeg.Encode writes, for every image and quality, only faster.
//
// Why a copy and not image/jpeg or a module: PNG->JPEG spends about half of its CPU in
// jpeg.Encode (docs/benchmarks.md section 5), and no maintained pure-Go encoder writes the
// same bytes faster. Keeping the output identical keeps every property the rest of convsvc
// relies on (tables, 4:2:0 subsampling, edge replication, segment order, the strip splice in
// jpegstrip) and makes the test total: bytes.Equal against jpeg.Encode.
//
// What is changed, each for measured speed (BenchmarkEncode: about a third of image/jpeg's
// CPU time on photo-like RGBA, 1 MP and 12 MP): quantisation is an exact reciprocal multiply
// instead of 64 integer divisions per block, fused with the FDCT's row pass and unrolled
// (fdctq.go, written by gen_fdctq.go; the FDCT arithmetic is the standard library's); the
// entropy coder keeps a 64-bit bit accumulator, writes whole words with 0xFF stuffing into a
// 64 KiB buffer and walks the non-zero coefficients with a bit mask instead of emitting bit
// by bit through a ByteWriter; colour conversion works on whole 16x16 MCUs, with fast paths
// for *image.RGBA, *image.NRGBA (image/jpeg reads it through At, which premultiplies by
// alpha: so does this), *image.RGBA64, *image.NRGBA64, *image.Gray, *image.YCbCr and
// *image.Paletted, and At for every other
// type as image/jpeg does.
//
// Images image/jpeg would panic on (pixel buffers or planes that do not cover the bounds, a
// palette index without a colour) give ErrBadImage instead.
package jpegenc

import (
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math/bits"
	"sync"
)

// ErrTooLarge reports an image with a side of 65536 pixels or more, which baseline JPEG
// cannot describe (image/jpeg refuses the same images).
var ErrTooLarge = errors.New("jpegenc: image is too large to encode (JPEG allows at most 65535 pixels a side)")

// ErrBadImage reports an image whose pixel buffer or palette does not cover its bounds;
// image/jpeg would panic on it.
var ErrBadImage = errors.New("jpegenc: malformed image")

// unscaledQuant are the unscaled quantization tables in zig-zag order (section K.1 of the
// spec), scaled by quality as image/jpeg does.
var unscaledQuant = [2][blockSize]byte{
	// Luminance.
	{
		16, 11, 12, 14, 12, 10, 16, 14,
		13, 14, 18, 17, 16, 19, 24, 40,
		26, 24, 22, 22, 24, 49, 35, 37,
		29, 40, 58, 51, 61, 60, 57, 51,
		56, 55, 64, 72, 92, 78, 64, 68,
		87, 69, 55, 56, 80, 109, 81, 87,
		95, 98, 103, 104, 103, 62, 77, 113,
		121, 112, 100, 120, 92, 101, 103, 99,
	},
	// Chrominance.
	{
		17, 18, 18, 24, 21, 24, 47, 26,
		26, 47, 99, 66, 56, 66, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
	},
}

// huffmanSpec specifies a Huffman encoding: count[i] codes of length i+1, then the values.
type huffmanSpec struct {
	count [16]byte
	value []byte
}

// theHuffmanSpec is image/jpeg's (and section K.3's) Huffman tables: luminance DC,
// luminance AC, chrominance DC, chrominance AC.
var theHuffmanSpec = [4]huffmanSpec{
	{
		[16]byte{0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
		[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	},
	{
		[16]byte{0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125},
		[]byte{
			0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12,
			0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
			0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
			0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
			0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16,
			0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
			0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39,
			0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
			0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
			0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
			0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79,
			0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
			0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98,
			0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
			0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
			0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
			0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4,
			0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
			0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea,
			0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
			0xf9, 0xfa,
		},
	},
	{
		[16]byte{0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
		[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	},
	{
		[16]byte{0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119},
		[]byte{
			0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21,
			0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
			0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91,
			0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
			0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34,
			0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
			0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38,
			0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
			0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
			0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
			0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78,
			0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
			0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96,
			0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
			0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
			0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
			0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2,
			0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
			0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9,
			0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
			0xf9, 0xfa,
		},
	},
}

// huffLUT maps a symbol to its code: the low 16 bits hold the code, bits 24..31 its length.
// Symbols a table does not have map to 0; they cannot occur (see emitBlock).
type huffLUT [256]uint32

// theHuffmanLUT are the compiled theHuffmanSpec.
var theHuffmanLUT [4]huffLUT

func init() {
	for i, s := range theHuffmanSpec {
		code, k := uint32(0), 0
		for n := range s.count {
			for j := uint8(0); j < s.count[n]; j++ {
				theHuffmanLUT[i][s.value[k]] = uint32(n+1)<<24 | code
				code++
				k++
			}
			code <<= 1
		}
	}
}

// Segment headers, as image/jpeg writes them.
var (
	sosHeaderY     = []byte{0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00}
	sosHeaderYCbCr = []byte{0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00}
)

const (
	// outSize is the output buffer's capacity: the encoder writes to w in chunks of about
	// this size.
	outSize = 64 << 10
	// blockRoom is more than three blocks (what writeSOS codes between room calls) can
	// produce: a block is at most a 27-bit DC code and 63 AC codes of at most 26 bits
	// (1665 bits), doubled by 0xFF stuffing: 417 bytes.
	blockRoom = 2048
)

//go:generate go run gen_fdctq.go

// quantTable holds one scaled quantization table and, per coefficient in zig-zag order, the
// rounding term and reciprocal that replace image/jpeg's div (see quantize); halfT and
// recipT are the same in natural order transposed (column by column), as fdctQuantizeAVX2
// reads them (prepareSIMD). fdctq_amd64.s addresses halfT and recipT by their offsets.
type quantTable struct {
	half   [blockSize]uint32
	recip  [blockSize]uint32
	halfT  [blockSize]uint32
	recipT [blockSize]uint32
}

// encoder holds the state of one Encode call.
type encoder struct {
	w   io.Writer
	err error
	out []byte
	// acc holds nacc < 32 pending bits (the oldest highest) between blocks.
	acc  uint64
	nacc uint
	// quant is the scaled quantization tables in zig-zag order, as written to DQT.
	quant [2][blockSize]byte
	qt    [2]quantTable
}

var encoderPool = sync.Pool{New: func() any { return &encoder{out: make([]byte, 0, outSize)} }}

// Encode writes m to w in JPEG 4:2:0 baseline format with options o (nil: quality 75),
// exactly as jpeg.Encode(w, m, o) would. If w has image/jpeg's Flush, Write and WriteByte
// methods (a *bufio.Writer), it is flushed at the end, as jpeg.Encode does; otherwise w
// receives writes of up to 64 KiB.
func Encode(w io.Writer, m image.Image, o *jpeg.Options) error {
	b := m.Bounds()
	if b.Dx() >= 1<<16 || b.Dy() >= 1<<16 {
		return ErrTooLarge
	}
	if err := check(m); err != nil {
		return err
	}
	e := encoderPool.Get().(*encoder)
	defer func() {
		e.w, e.err = nil, nil
		e.out = e.out[:0]
		encoderPool.Put(e)
	}()
	e.w, e.acc, e.nacc = w, 0, 0
	e.setQuality(o)
	nComponent := 3
	_, gray := m.(*image.Gray)
	if gray {
		nComponent = 1
	}
	e.out = append(e.out, 0xff, 0xd8)
	e.writeDQT()
	e.writeSOF0(b.Size(), nComponent)
	e.writeDHT(nComponent)
	e.writeSOS(m)
	e.out = append(e.out, 0xff, 0xd9)
	e.flushOut()
	if f, ok := w.(interface {
		Flush() error
		io.Writer
		io.ByteWriter
	}); ok && e.err == nil {
		if err := f.Flush(); err != nil {
			e.err = fmt.Errorf("jpegenc: flush: %w", err)
		}
	}
	return e.err
}

// check returns ErrBadImage for the images whose pixels image/jpeg would read out of range.
func check(m image.Image) error {
	b := m.Bounds()
	if b.Empty() {
		return nil
	}
	pixOK := func(n, stride, pixSize int, r image.Rectangle) bool {
		if stride < r.Dx()*pixSize {
			return false
		}
		return (r.Dy()-1)*stride+r.Dx()*pixSize <= n
	}
	switch m := m.(type) {
	case *image.RGBA:
		if !pixOK(len(m.Pix), m.Stride, 4, m.Rect) {
			return fmt.Errorf("%w: RGBA pixels do not cover %v", ErrBadImage, m.Rect)
		}
	case *image.NRGBA:
		if !pixOK(len(m.Pix), m.Stride, 4, m.Rect) {
			return fmt.Errorf("%w: NRGBA pixels do not cover %v", ErrBadImage, m.Rect)
		}
	case *image.RGBA64:
		if !pixOK(len(m.Pix), m.Stride, 8, m.Rect) {
			return fmt.Errorf("%w: RGBA64 pixels do not cover %v", ErrBadImage, m.Rect)
		}
	case *image.NRGBA64:
		if !pixOK(len(m.Pix), m.Stride, 8, m.Rect) {
			return fmt.Errorf("%w: NRGBA64 pixels do not cover %v", ErrBadImage, m.Rect)
		}
	case *image.Gray:
		if !pixOK(len(m.Pix), m.Stride, 1, m.Rect) {
			return fmt.Errorf("%w: Gray pixels do not cover %v", ErrBadImage, m.Rect)
		}
	case *image.Paletted:
		if !pixOK(len(m.Pix), m.Stride, 1, m.Rect) {
			return fmt.Errorf("%w: Paletted pixels do not cover %v", ErrBadImage, m.Rect)
		}
		// image/jpeg panics on an index without a palette entry (or a nil entry).
		var used [256]bool
		for y := range m.Rect.Dy() {
			for _, c := range m.Pix[y*m.Stride : y*m.Stride+m.Rect.Dx()] {
				used[c] = true
			}
		}
		for i, u := range used {
			if u && (i >= len(m.Palette) || m.Palette[i] == nil) {
				return fmt.Errorf("%w: palette index %d has no colour (palette of %d)", ErrBadImage, i, len(m.Palette))
			}
		}
	case *image.YCbCr:
		if !ycbcrOK(m) {
			return fmt.Errorf("%w: YCbCr planes do not cover %v", ErrBadImage, m.Rect)
		}
	}
	return nil
}

// ycbcrOK reports whether m's planes hold every sample its bounds address. Offsets grow with
// x and y when the strides are not negative, so the corners decide.
func ycbcrOK(m *image.YCbCr) bool {
	if m.YStride < 0 || m.CStride < 0 {
		return false
	}
	for _, p := range []image.Point{m.Rect.Min, m.Rect.Max.Sub(image.Pt(1, 1))} {
		yi, ci := m.YOffset(p.X, p.Y), m.COffset(p.X, p.Y)
		if yi < 0 || yi >= len(m.Y) || ci < 0 || ci >= len(m.Cb) || ci >= len(m.Cr) {
			return false
		}
	}
	return true
}

// setQuality scales the quantization tables as image/jpeg does and derives their
// reciprocals.
func (e *encoder) setQuality(o *jpeg.Options) {
	quality := jpeg.DefaultQuality
	if o != nil {
		quality = min(max(o.Quality, 1), 100)
	}
	var scale int
	if quality < 50 {
		scale = 5000 / quality
	} else {
		scale = 200 - quality*2
	}
	for i := range e.quant {
		for j := range e.quant[i] {
			x := int(unscaledQuant[i][j])
			x = min(max((x*scale+50)/100, 1), 255)
			e.quant[i][j] = uint8(x)
			e.qt[i].half[j], e.qt[i].recip[j] = divisor(8 * uint32(x))
		}
		e.qt[i].prepareSIMD()
	}
}

// divisor returns the rounding term and reciprocal quantize uses to divide by d, 8 <= d <= 2040.
func divisor(d uint32) (half, recip uint32) {
	return d >> 1, uint32((1<<32 + uint64(d) - 1) / uint64(d))
}

// quantize returns a/d rounded to the nearest integer, halves away from zero: image/jpeg's
// div(a, d), for |a| < 1<<16 and d = 8..2040 (the FDCT's outputs are within +-8192). With
// recip = ceil(2^32/d) and e = recip*d - 2^32 < d, (n*recip)>>32 = n/d exactly while
// n*e < 2^32, that is for every n < 2^32/2040; TestQuantizeExhaustive checks every a and d.
func quantize(a int32, half, recip uint32) int32 {
	s := a >> 31
	u := uint32((a ^ s) - s)
	q := int32((uint64(u+half) * uint64(recip)) >> 32)
	return (q ^ s) - s
}

// div is image/jpeg's division with rounding, kept for the tests.
func div(a, b int32) int32 {
	if a >= 0 {
		return (a + (b >> 1)) / b
	}
	return -((-a + (b >> 1)) / b)
}

// flushOut writes the pending output to w.
func (e *encoder) flushOut() {
	if e.err == nil && len(e.out) > 0 {
		n, err := e.w.Write(e.out)
		if err == nil && n < len(e.out) {
			err = io.ErrShortWrite
		}
		if err != nil {
			e.err = fmt.Errorf("jpegenc: write: %w", err)
		}
	}
	e.out = e.out[:0]
}

// room makes sure one more block fits in the output buffer.
func (e *encoder) room() {
	if cap(e.out)-len(e.out) < blockRoom {
		e.flushOut()
	}
}

func (e *encoder) writeMarkerHeader(marker uint8, markerlen int) {
	e.out = append(e.out, 0xff, marker, uint8(markerlen>>8), uint8(markerlen))
}

func (e *encoder) writeDQT() {
	const markerlen = 2 + 2*(1+blockSize)
	e.writeMarkerHeader(0xdb, markerlen)
	for i := range e.quant {
		e.out = append(e.out, uint8(i))
		e.out = append(e.out, e.quant[i][:]...)
	}
}

func (e *encoder) writeSOF0(size image.Point, nComponent int) {
	e.writeMarkerHeader(0xc0, 8+3*nComponent)
	e.out = append(e.out, 8, uint8(size.Y>>8), uint8(size.Y), uint8(size.X>>8), uint8(size.X), uint8(nComponent))
	if nComponent == 1 {
		e.out = append(e.out, 1, 0x11, 0x00)
	} else {
		e.out = append(e.out, 1, 0x22, 0x00, 2, 0x11, 0x01, 3, 0x11, 0x01)
	}
}

func (e *encoder) writeDHT(nComponent int) {
	specs := theHuffmanSpec[:]
	if nComponent == 1 {
		specs = specs[:2]
	}
	markerlen := 2
	for _, s := range specs {
		markerlen += 1 + 16 + len(s.value)
	}
	e.writeMarkerHeader(0xc4, markerlen)
	for i, s := range specs {
		e.out = append(e.out, "\x00\x10\x01\x11"[i])
		e.out = append(e.out, s.count[:]...)
		e.out = append(e.out, s.value...)
	}
}

// writeBlock transforms, quantizes and entropy-codes b (natural order) with table q and
// returns its quantized DC, as image/jpeg's writeBlock does.
func (e *encoder) writeBlock(b *block, q int, prevDC int32) int32 {
	var zz [blockSize]int32
	nz := fdctQuantize(b, &e.qt[q&1], &zz)
	dcLUT, acLUT := &theHuffmanLUT[2*(q&1)], &theHuffmanLUT[2*(q&1)+1]
	acc, nacc := e.acc, e.nacc
	out := e.out

	// put appends n <= 32 bits; whenever 32 or more are pending, four bytes go out.
	put := func(v uint64, n uint) {
		acc = acc<<n | v
		nacc += n
		if nacc >= 32 {
			nacc -= 32
			w := uint32(acc >> nacc)
			if (^w-0x01010101)&w&0x80808080 == 0 { // no 0xFF byte
				out = append(out, byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
			} else {
				out = appendStuffed(out, w)
			}
		}
	}
	// The DC difference of quantized DCs is within +-2047: 11 bits, a DC symbol <= 11.
	dc := zz[0]
	d := dc - prevDC
	s := d >> 31
	a := uint32((d ^ s) - s)
	n := uint(bits.Len32(a))
	x := dcLUT[n&15]
	put(uint64(x&0xffff)<<n|uint64(uint32(d+s)&(1<<n-1)), uint(x>>24)+n)

	// AC coefficients are within +-1023: at most 10 bits, so run<<4|size is a valid symbol.
	last := 0
	for m := nz &^ 1; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		run := k - last - 1
		last = k
		for run > 15 {
			zrl := acLUT[0xf0]
			put(uint64(zrl&0xffff), uint(zrl>>24))
			run -= 16
		}
		v := zz[k&63]
		s := v >> 31
		a := uint32((v ^ s) - s)
		n := uint(bits.Len32(a))
		x := acLUT[(run<<4|int(n))&0xff]
		put(uint64(x&0xffff)<<n|uint64(uint32(v+s)&(1<<n-1)), uint(x>>24)+n)
	}
	if last != blockSize-1 {
		eob := acLUT[0x00]
		put(uint64(eob&0xffff), uint(eob>>24))
	}
	e.acc, e.nacc, e.out = acc, nacc, out
	return dc
}

// appendStuffed appends the four bytes of w, each 0xFF followed by a stuffed 0x00.
func appendStuffed(out []byte, w uint32) []byte {
	for sh := 24; sh >= 0; sh -= 8 {
		c := byte(w >> uint(sh))
		out = append(out, c)
		if c == 0xff {
			out = append(out, 0)
		}
	}
	return out
}

// finishScan pads the last byte with 1s, as image/jpeg's emit(0x7f, 7) does, and writes the
// whole bytes; image/jpeg drops the bits of an incomplete byte left after that, and so does
// this.
func (e *encoder) finishScan() {
	e.acc = e.acc<<7 | 0x7f
	e.nacc += 7
	for e.nacc >= 8 {
		e.nacc -= 8
		c := byte(e.acc >> e.nacc)
		e.out = append(e.out, c)
		if c == 0xff {
			e.out = append(e.out, 0)
		}
	}
	e.acc, e.nacc = 0, 0
}
