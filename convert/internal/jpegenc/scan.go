// Copyright 2011 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package jpegenc

import (
	"encoding/binary"
	"image"
	"image/color"
)

// mcu is one 16x16 MCU of colour samples: four luminance blocks in image/jpeg's order (top
// left, top right, bottom left, bottom right) and the two chroma blocks already subsampled
// the way image/jpeg's scale does it, (sum of 2x2 + 2) >> 2.
type mcu struct {
	y      [4 * blockSize]int32
	cb, cr block
}

// yIndex is where luminance sample (x, y) of an MCU goes in mcu.y.
func yIndex(x, y int) int {
	return ((y>>3)*2+(x>>3))*blockSize + (y&7)*8 + (x & 7)
}

// ycc is color.RGBToYCbCr with int32 results. The chroma sums cannot be negative, so the
// standard library's clamp reduces to min(x>>16, 255) (TestYCCExhaustive checks every
// colour).
func ycc(r, g, b int32) (y, cb, cr int32) {
	y = (19595*r + 38470*g + 7471*b + 1<<15) >> 16
	cb = min((-11056*r-21712*g+32768*b+257<<15)>>16, 255)
	cr = min((32768*r-27440*g-5328*b+257<<15)>>16, 255)
	return y, cb, cr
}

// writeSOS writes the scan, converting m MCU by MCU with the fastest path its type has.
func (e *encoder) writeSOS(m image.Image) {
	bounds := m.Bounds()
	if g, ok := m.(*image.Gray); ok {
		e.out = append(e.out, sosHeaderY...)
		var b block
		var prevDC int32
		for y := bounds.Min.Y; y < bounds.Max.Y && e.err == nil; y += 8 {
			for x := bounds.Min.X; x < bounds.Max.X; x += 8 {
				grayToY(g, x, y, &b)
				e.room()
				prevDC = e.writeBlock(&b, 0, prevDC)
			}
		}
		e.finishScan()
		return
	}
	e.out = append(e.out, sosHeaderYCbCr...)
	var (
		u                           mcu
		prevDCY, prevDCCb, prevDCCr int32
		xo                          [16]int
		yo                          [16]int
	)
	conv := e.converter(m)
	for y := bounds.Min.Y; y < bounds.Max.Y && e.err == nil; y += 16 {
		for j := range yo {
			yo[j] = min(y+j, bounds.Max.Y-1)
		}
		for x := bounds.Min.X; x < bounds.Max.X; x += 16 {
			for i := range xo {
				xo[i] = min(x+i, bounds.Max.X-1)
			}
			conv(&u, &xo, &yo)
			e.room()
			prevDCY = e.writeBlock((*block)(u.y[0:64]), 0, prevDCY)
			prevDCY = e.writeBlock((*block)(u.y[64:128]), 0, prevDCY)
			prevDCY = e.writeBlock((*block)(u.y[128:192]), 0, prevDCY)
			e.room()
			prevDCY = e.writeBlock((*block)(u.y[192:256]), 0, prevDCY)
			prevDCCb = e.writeBlock(&u.cb, 1, prevDCCb)
			prevDCCr = e.writeBlock(&u.cr, 1, prevDCCr)
		}
	}
	e.finishScan()
}

// converter returns the function that fills an MCU from the pixels at columns xo and rows
// yo (already clamped to the bounds, which is image/jpeg's edge replication).
func (e *encoder) converter(m image.Image) func(u *mcu, xo, yo *[16]int) {
	switch m := m.(type) {
	case *image.RGBA:
		return func(u *mcu, xo, yo *[16]int) { rgbaMCU(m.Pix, m.Stride, m.Rect.Min, u, xo, yo, false) }
	case *image.NRGBA:
		// image/jpeg reads an NRGBA through At, which premultiplies by alpha.
		return func(u *mcu, xo, yo *[16]int) { rgbaMCU(m.Pix, m.Stride, m.Rect.Min, u, xo, yo, true) }
	case *image.YCbCr:
		return func(u *mcu, xo, yo *[16]int) { yCbCrMCU(m, u, xo, yo) }
	case *image.RGBA64:
		return func(u *mcu, xo, yo *[16]int) { rgba64MCU(m.Pix, m.Stride, m.Rect.Min, u, xo, yo, false) }
	case *image.NRGBA64:
		return func(u *mcu, xo, yo *[16]int) { rgba64MCU(m.Pix, m.Stride, m.Rect.Min, u, xo, yo, true) }
	case *image.Paletted:
		// check has made sure that every index in bounds has a non-nil palette entry.
		var lut [256][3]int32
		for i, c := range m.Palette[:min(len(m.Palette), 256)] {
			if c != nil {
				r, g, b, _ := c.RGBA()
				lut[i][0], lut[i][1], lut[i][2] = ycc(int32(r>>8), int32(g>>8), int32(b>>8))
			}
		}
		return func(u *mcu, xo, yo *[16]int) { palettedMCU(m, &lut, u, xo, yo) }
	default:
		return func(u *mcu, xo, yo *[16]int) { genericMCU(m, u, xo, yo) }
	}
}

// rgbaMCU converts an MCU of RGBA (or, with nrgba, NRGBA) pixels. MCUs wholly inside the
// image, all but the last column, take rgbaRows: measured 1.3x faster than per-pixel clamped
// offsets (BenchmarkEncode).
func rgbaMCU(pix []byte, stride int, min image.Point, u *mcu, xo, yo *[16]int, nrgba bool) {
	if xo[15]-xo[0] == 15 {
		x0 := (xo[0] - min.X) * 4
		for j := 0; j < 16; j += 2 {
			o0 := (yo[j]-min.Y)*stride + x0
			o1 := (yo[j+1]-min.Y)*stride + x0
			rgbaRows((*[64]byte)(pix[o0:o0+64]), (*[64]byte)(pix[o1:o1+64]), u, j, nrgba)
		}
		return
	}
	var xb [16]int
	for i, x := range xo {
		xb[i] = (x - min.X) * 4
	}
	var p [2][64]byte
	for j := range 16 {
		row := pix[(yo[j]-min.Y)*stride:]
		for i, o := range xb {
			copy(p[j&1][4*i:4*i+4], row[o:o+4])
		}
		if j&1 == 1 {
			rgbaRows(&p[0], &p[1], u, j-1, nrgba)
		}
	}
}

// rgbaRows converts rows j and j+1 (j even) of an MCU from 16 RGBA pixels each: luminance
// into mcu.y, chroma into mcu.cb and mcu.cr as image/jpeg's scale makes it, (sum of 2x2 +
// 2) >> 2. Opaque pixel pairs are converted two at a time (measured faster than two ycc
// calls in BenchmarkEncode); two rows at a time sum each 2x2 block's chroma in registers,
// where a row at a time stored the even rows' sums for the odd rows to finish: with the
// four-multiply ycc, 30% fewer instructions and BenchmarkEncode jpegenc/1MP 12.1 -> 9.9 ms.
func rgbaRows(p0, p1 *[64]byte, u *mcu, j int, nrgba bool) {
	if hasRGBARowsFast && (!nrgba || opaqueRows(p0, p1)) {
		yo := (j>>3)*2*blockSize + (j&6)*8
		c := 8 * (j >> 1) & 63
		rgbaRowsFast(p0, p1, (*[blockSize + 16]int32)(u.y[yo:yo+blockSize+16]), (*[8]int32)(u.cb[c:c+8]), (*[8]int32)(u.cr[c:c+8]))
		return
	}
	rgbaRowsGo(p0, p1, u, j, nrgba)
}

// opaqueRows reports whether every pixel of both rows has alpha 0xff.
func opaqueRows(p0, p1 *[64]byte) bool {
	a := uint64(alpha2)
	for i := 0; i < 64; i += 8 {
		a &= binary.LittleEndian.Uint64(p0[i:]) & binary.LittleEndian.Uint64(p1[i:])
	}
	return a == alpha2
}

// rgbaRowsGo is rgbaRows in Go, for every pixel and alpha.
func rgbaRowsGo(p0, p1 *[64]byte, u *mcu, j int, nrgba bool) {
	c := 8 * (j >> 1) & 63
	cb := (*[8]int32)(u.cb[c : c+8])
	cr := (*[8]int32)(u.cr[c : c+8])
	for half := range 2 {
		yo := ((j>>3)*2+half)*blockSize + (j&6)*8
		yr0 := (*[8]int32)(u.y[yo : yo+8])
		yr1 := (*[8]int32)(u.y[yo+8 : yo+16])
		for i := range 4 {
			o := 32*half + 8*i
			q0 := (*[8]byte)(p0[o : o+8])
			q1 := (*[8]byte)(p1[o : o+8])
			v0, v1 := binary.LittleEndian.Uint64(q0[:]), binary.LittleEndian.Uint64(q1[:])
			var cbs, crs int32
			if nrgba && v0&v1&alpha2 != alpha2 {
				var cb0, cr0, cb1, cr1 int32
				yr0[2*i], yr0[2*i+1], cb0, cr0 = premulPair(q0)
				yr1[2*i], yr1[2*i+1], cb1, cr1 = premulPair(q1)
				cbs, crs = cb0+cb1, cr0+cr1
			} else {
				// ycc of two pixels at once, per row: one in each 32-bit half of every
				// product. Each pixel's sums are in [0, 2^25), so the halves never carry
				// into each other and the 64-bit arithmetic is exact
				// (TestRGBARowsExhaustive). Each row of coefficients sums to 0 or a power
				// of two, so 19595r + 38470g + 7471b = g<<16 + 19595(r-g) + 7471(b-g),
				// and the chroma likewise: four multiplies instead of seven. The
				// differences may borrow across the halves; the sums, in range, come out
				// exact. Chroma halves are 1..256 before the clamp to 255. (Written out
				// for both rows: as a function it is too big to inline.)
				const lanes = 0x000000ff_000000ff
				r0, g0, b0 := v0&lanes, v0>>8&lanes, v0>>16&lanes
				r1, g1, b1 := v1&lanes, v1>>8&lanes, v1>>16&lanes
				rg0, bg0 := r0-g0, b0-g0
				rg1, bg1 := r1-g1, b1-g1
				y0 := (g0<<16 + 19595*rg0 + 7471*bg0 + (1<<15)*(1<<32+1)) >> 16
				y1 := (g1<<16 + 19595*rg1 + 7471*bg1 + (1<<15)*(1<<32+1)) >> 16
				yr0[2*i], yr0[2*i+1] = int32(y0&0xff), int32(y0>>32)
				yr1[2*i], yr1[2*i+1] = int32(y1&0xff), int32(y1>>32)
				cb0 := (bg0<<15 - 11056*rg0 + (257<<15)*(1<<32+1)) >> 16
				cb1 := (bg1<<15 - 11056*rg1 + (257<<15)*(1<<32+1)) >> 16
				cr0 := (rg0<<15 - 5328*bg0 + (257<<15)*(1<<32+1)) >> 16
				cr1 := (rg1<<15 - 5328*bg1 + (257<<15)*(1<<32+1)) >> 16
				cb2 := cb0&0x1ff_0000_01ff - cb0>>8&0x1_0000_0001 + cb1&0x1ff_0000_01ff - cb1>>8&0x1_0000_0001
				cr2 := cr0&0x1ff_0000_01ff - cr0>>8&0x1_0000_0001 + cr1&0x1ff_0000_01ff - cr1>>8&0x1_0000_0001
				cbs, crs = int32(cb2&0x3ff+cb2>>32), int32(cr2&0x3ff+cr2>>32)
			}
			k := 4*half + i
			cb[k] = (cbs + 2) >> 2
			cr[k] = (crs + 2) >> 2
		}
	}
}

// premulPair converts two NRGBA pixels as image/jpeg does, through premul and ycc: their
// luminances and their chroma sums.
func premulPair(q *[8]byte) (y0, y1, cbs, crs int32) {
	r0, g0, b0 := premul(int32(q[0]), int32(q[1]), int32(q[2]), q[3])
	r1, g1, b1 := premul(int32(q[4]), int32(q[5]), int32(q[6]), q[7])
	y0, cb0, cr0 := ycc(r0, g0, b0)
	y1, cb1, cr1 := ycc(r1, g1, b1)
	return y0, y1, cb0 + cb1, cr0 + cr1
}

// alpha2 is the alpha bytes of two little-endian RGBA pixels.
const alpha2 = 0xff000000_ff000000

// premul is what color.NRGBA's RGBA method and image/jpeg's >>8 make of an NRGBA pixel.
func premul(r, g, b int32, a byte) (int32, int32, int32) {
	m := uint32(a)
	return int32((uint32(r) * 0x101 * m / 0xff) >> 8), int32((uint32(g) * 0x101 * m / 0xff) >> 8), int32((uint32(b) * 0x101 * m / 0xff) >> 8)
}

// rgba64MCU converts an MCU of RGBA64 (or, with nrgba, NRGBA64) pixels to the 8 bits
// image/jpeg takes from At(x, y).RGBA() and hands each pair of rows to rgbaRows.
func rgba64MCU(pix []byte, stride int, min image.Point, u *mcu, xo, yo *[16]int, nrgba bool) {
	var p [2][64]byte
	for j := range 16 {
		row := pix[(yo[j]-min.Y)*stride:]
		for i, x := range xo {
			o := (x - min.X) * 8
			s := row[o : o+8 : o+8]
			q := (*[4]byte)(p[j&1][4*i : 4*i+4])
			q[0], q[1], q[2], q[3] = s[0], s[2], s[4], 0xff
			if nrgba && (s[6] != 0xff || s[7] != 0xff) {
				// color.NRGBA64's RGBA: c*a/0xffff, then >>8.
				a := uint32(s[6])<<8 | uint32(s[7])
				q[0] = byte((uint32(s[0])<<8 | uint32(s[1])) * a / 0xffff >> 8)
				q[1] = byte((uint32(s[2])<<8 | uint32(s[3])) * a / 0xffff >> 8)
				q[2] = byte((uint32(s[4])<<8 | uint32(s[5])) * a / 0xffff >> 8)
			}
		}
		if j&1 == 1 {
			rgbaRows(&p[0], &p[1], u, j-1, false)
		}
	}
}

// yCbCrMCU copies an MCU of YCbCr samples, as image/jpeg's yCbCrToYCbCr and scale do.
func yCbCrMCU(m *image.YCbCr, u *mcu, xo, yo *[16]int) {
	ys := &u.y
	for j2 := range 8 {
		for i2 := range 8 {
			var cbs, crs int32
			for k := range 4 {
				dx, dy := k&1, k>>1
				x, y := xo[2*i2+dx], yo[2*j2+dy]
				ci := m.COffset(x, y)
				ys[yIndex(2*i2+dx, 2*j2+dy)&(4*blockSize-1)] = int32(m.Y[m.YOffset(x, y)])
				cbs += int32(m.Cb[ci])
				crs += int32(m.Cr[ci])
			}
			u.cb[8*j2+i2] = (cbs + 2) >> 2
			u.cr[8*j2+i2] = (crs + 2) >> 2
		}
	}
}

// palettedMCU converts an MCU of palette indices through lut.
func palettedMCU(m *image.Paletted, lut *[256][3]int32, u *mcu, xo, yo *[16]int) {
	ys := &u.y
	for j2 := range 8 {
		for i2 := range 8 {
			var cbs, crs int32
			for k := range 4 {
				dx, dy := k&1, k>>1
				x, y := xo[2*i2+dx], yo[2*j2+dy]
				c := &lut[m.Pix[(y-m.Rect.Min.Y)*m.Stride+(x-m.Rect.Min.X)]]
				ys[yIndex(2*i2+dx, 2*j2+dy)&(4*blockSize-1)] = c[0]
				cbs += c[1]
				crs += c[2]
			}
			u.cb[8*j2+i2] = (cbs + 2) >> 2
			u.cr[8*j2+i2] = (crs + 2) >> 2
		}
	}
}

// genericMCU converts an MCU through At and RGBA, as image/jpeg's toYCbCr does for every
// other image type.
func genericMCU(m image.Image, u *mcu, xo, yo *[16]int) {
	ys := &u.y
	for j2 := range 8 {
		for i2 := range 8 {
			var cbs, crs int32
			for k := range 4 {
				dx, dy := k&1, k>>1
				r, g, b, _ := m.At(xo[2*i2+dx], yo[2*j2+dy]).RGBA()
				yy, cb, cr := color.RGBToYCbCr(uint8(r>>8), uint8(g>>8), uint8(b>>8))
				ys[yIndex(2*i2+dx, 2*j2+dy)&(4*blockSize-1)] = int32(yy)
				cbs += int32(cb)
				crs += int32(cr)
			}
			u.cb[8*j2+i2] = (cbs + 2) >> 2
			u.cr[8*j2+i2] = (crs + 2) >> 2
		}
	}
}

// grayToY stores the 8x8 region of m whose top-left corner is (x0, y0) in b, replicating
// the last row and column past the edges.
func grayToY(m *image.Gray, x0, y0 int, b *block) {
	xmax, ymax := m.Rect.Max.X-1, m.Rect.Max.Y-1
	var xo [8]int
	for i := range xo {
		xo[i] = min(x0+i, xmax) - m.Rect.Min.X
	}
	for j := range 8 {
		row := m.Pix[(min(y0+j, ymax)-m.Rect.Min.Y)*m.Stride:]
		for i, o := range xo {
			b[8*j+i] = int32(row[o])
		}
	}
}
