package flacenc

import (
	"encoding/binary"
	"math/bits"
)

// maxPartOrder bounds the Rice partition order tried (16-sample partitions at 4096).
const maxPartOrder = 8

// Subframe kinds of a subPlan.
const (
	subConstant = iota
	subVerbatim
	subFixed
	subLPC
)

// subPlan is the cheapest coding found for one subframe and its size in bits.
type subPlan struct {
	kind   int
	order  int // fixed predictor order
	wasted int // low bits zero in every sample, shifted out (the subframe's "wasted bits")
	lpc    lpcPlan
	bits   uint64
}

// subframe writes x (bps bits per sample) as the cheapest of a constant, a fixed-predictor,
// an LPC or a verbatim subframe. fixed is the best fixed predictor order when the caller
// knows it (bestFixedOrder), or -1.
func (f *frameEncoder) subframe(x []int32, bps, fixed int) {
	p := f.planSubframe(x, bps, fixed)
	f.writeSubframe(x, bps, &p)
}

// wastedBits returns how many low bits are zero in every sample of x (0 when x is all zero).
func wastedBits(x []int32) int {
	var or int32
	for _, v := range x {
		or |= v
		if or&1 != 0 {
			return 0
		}
	}
	if or == 0 {
		return 0
	}
	return bits.TrailingZeros32(uint32(or))
}

// planSubframe chooses the cheapest coding of x (bps bits per sample). When it returns with
// f.ready set to x, f's residuals and Rice plan (and shifted samples, for wasted bits) are those
// of the chosen predictor.
func (f *frameEncoder) planSubframe(x []int32, bps, fixed int) subPlan {
	f.ready = nil
	constant := true
	for _, v := range x[1:] {
		if v != x[0] {
			constant = false
			break
		}
	}
	if constant {
		return subPlan{kind: subConstant, bits: uint64(8 + bps)}
	}
	xs := x
	w := wastedBits(x)
	if w > 0 {
		xs = f.shifted(x, w)
	}
	// Shifting every sample by w divides every fixed residual by 2^w: the best order stays.
	p := f.planBody(xs, bps-w, fixed)
	p.wasted = w
	p.bits += uint64(w) // the wasted-bit count, in unary
	if f.ready != nil {
		f.ready = &x[0]
	}
	return p
}

// shifted returns x shifted right by w bits, in f's scratch buffer.
func (f *frameEncoder) shifted(x []int32, w int) []int32 {
	f.wbuf = grow(f.wbuf, len(x))
	for i, v := range x {
		f.wbuf[i] = v >> uint(w)
	}
	return f.wbuf
}

// planBody chooses the cheapest of a fixed-predictor, an LPC or a verbatim subframe for x,
// which is not constant; f.ready is set when f holds the chosen predictor's residuals.
func (f *frameEncoder) planBody(x []int32, bps, order int) subPlan {
	n := len(x)
	verbatim := subPlan{kind: subVerbatim, bits: uint64(8 + n*bps)}
	if n <= 2*4 {
		return verbatim
	}
	if order < 0 {
		order = bestFixedOrder(x)
	}
	fixed := subPlan{kind: subFixed, order: order, bits: f.residualPlan(x, order) + uint64(8+order*bps+6)}
	if p, ok := f.planLPC(x, bps); ok && p.order < n {
		if f.lpcResiduals(x, &p) {
			lcost := f.ricePlan(n, p.order) + uint64(8+p.order*(bps+p.prec)+4+5+6)
			if lcost < fixed.bits && lcost < verbatim.bits {
				f.ready = &x[0]
				return subPlan{kind: subLPC, lpc: p, bits: lcost}
			}
		}
		if fixed.bits < verbatim.bits {
			// Back to the fixed predictor: its residuals again.
			f.residualPlan(x, order)
		}
	}
	if fixed.bits < verbatim.bits {
		f.ready = &x[0]
		return fixed
	}
	return verbatim
}

// writeSubframe writes x as p says, computing its residuals again unless planSubframe's last
// call was for x.
func (f *frameEncoder) writeSubframe(x []int32, bps int, p *subPlan) {
	bw := &f.bw
	ready := f.ready == &x[0]
	f.ready = nil
	if p.kind == subConstant {
		bw.write(0, 8)
		bw.write(uint64(uint32(x[0]))&(uint64(1)<<uint(bps)-1), uint(bps))
		return
	}
	w := p.wasted
	if w > 0 {
		if ready {
			x = f.wbuf[:len(x)]
		} else {
			x = f.shifted(x, w)
		}
		bps -= w
	}
	// The subframe header: a zero bit, six bits of type, the wasted-bits flag, then the
	// wasted-bit count minus one in unary.
	var typ uint64
	switch p.kind {
	case subFixed:
		typ = uint64(8 | p.order)
	case subLPC:
		typ = uint64(0x20 | (p.lpc.order - 1))
	default:
		typ = 1
	}
	if w > 0 {
		bw.write(typ<<1|1, 8)
		bw.write(1, uint(w))
	} else {
		bw.write(typ<<1, 8)
	}
	switch p.kind {
	case subFixed:
		if !ready {
			f.residualPlan(x, p.order)
		}
		f.writeFixed(x, p.order, bps)
	case subLPC:
		if !ready {
			f.lpcResiduals(x, &p.lpc)
			f.ricePlan(len(x), p.lpc.order)
		}
		f.writeLPC(x, &p.lpc, bps)
	default:
		mask := uint64(1)<<uint(bps) - 1
		for _, v := range x {
			bw.write(uint64(uint32(v))&mask, uint(bps))
		}
	}
}

// bestFixedOrder returns the fixed predictor order (0 to 4) whose residuals have the smallest
// sum of magnitudes, computed for all five orders in one pass (as libFLAC does).
func bestFixedOrder(x []int32) int {
	order, _ := fixedEstimate(x)
	return order
}

// fixedEstimate returns the fixed predictor order (0 to 4) whose residuals have the smallest
// sum of magnitudes, and that sum.
func fixedEstimate(x []int32) (int, uint64) {
	var s0, s1, s2, s3, s4 uint64
	// Differences of successive orders, carried across samples.
	p0 := x[3]
	p1 := x[3] - x[2]
	p2 := p1 - (x[2] - x[1])
	p3 := p2 - ((x[2] - x[1]) - (x[1] - x[0]))
	for _, e0 := range x[4:] {
		e1 := e0 - p0
		e2 := e1 - p1
		e3 := e2 - p2
		e4 := e3 - p3
		s0 += absU(e0)
		s1 += absU(e1)
		s2 += absU(e2)
		s3 += absU(e3)
		s4 += absU(e4)
		p0, p1, p2, p3 = e0, e1, e2, e3
	}
	order, best := 0, s0
	for o, s := range [...]uint64{s1, s2, s3, s4} {
		if s < best {
			order, best = o+1, s
		}
	}
	return order, best
}

func absU(v int32) uint64 {
	m := v >> 31
	return uint64(uint32((v ^ m) - m))
}

// residualPlan computes the residuals of the fixed predictor of the given order into f.fold
// (zigzag-folded), chooses the Rice partition order and parameters into f.bestK, and
// returns the estimated bits of the residual section (without the 6 bits of method and order).
func (f *frameEncoder) residualPlan(x []int32, order int) uint64 {
	n := len(x)
	f.fold = growU(f.fold, n-order)
	u := f.fold
	switch order {
	case 0:
		for i, v := range x {
			u[i] = fold(v)
		}
	case 1:
		for i := 1; i < n; i++ {
			u[i-1] = fold(x[i] - x[i-1])
		}
	case 2:
		for i := 2; i < n; i++ {
			u[i-2] = fold(x[i] - 2*x[i-1] + x[i-2])
		}
	case 3:
		for i := 3; i < n; i++ {
			u[i-3] = fold(x[i] - 3*x[i-1] + 3*x[i-2] - x[i-3])
		}
	case 4:
		for i := 4; i < n; i++ {
			u[i-4] = fold(x[i] - 4*x[i-1] + 6*x[i-2] - 4*x[i-3] + x[i-4])
		}
	}
	return f.ricePlan(n, order)
}

// ricePlan chooses the Rice partition order and parameters into f.bestP and f.bestK for the
// n-order folded residuals in f.fold, and returns the estimated bits of the residual section
// (without the 6 bits of method and order).
func (f *frameEncoder) ricePlan(n, order int) uint64 {
	u := f.fold

	// The highest usable partition order: the block divides evenly and the first
	// partition holds at least one residual.
	maxP := 0
	for p := 1; p <= maxPartOrder; p++ {
		if n%(1<<p) != 0 || n>>p <= order {
			break
		}
		maxP = p
	}
	// Sums of the folded residuals per partition at maxP, then merged pairwise downwards.
	np := 1 << maxP
	f.sums = growU64(f.sums, 2*np)
	sums := f.sums
	psize := n >> maxP
	pos := 0
	for i := range np {
		m := psize
		if i == 0 {
			m -= order
		}
		var s uint64
		for _, v := range u[pos : pos+m] {
			s += uint64(v)
		}
		sums[i] = s
		pos += m
	}
	f.ks = growU8(f.ks, np)
	f.bestK = growU8(f.bestK, np)
	bestCost := ^uint64(0)
	bestP := 0
	level := sums[:np]
	next := sums[np:]
	for p := maxP; p >= 0; p-- {
		parts := 1 << p
		psize := n >> p
		var cost uint64
		maxK := uint8(0)
		for i := range parts {
			m := psize
			if i == 0 {
				m -= order
			}
			k, c := riceParam(level[i], uint64(m))
			f.ks[i] = k
			maxK = max(maxK, k)
			cost += c + 4
		}
		if maxK > 14 {
			cost += uint64(parts)
		}
		if cost < bestCost {
			bestCost, bestP = cost, p
			copy(f.bestK, f.ks[:parts])
		}
		if p > 0 {
			for i := range parts / 2 {
				next[i] = level[2*i] + level[2*i+1]
			}
			level, next = next[:parts/2], level
		}
	}
	f.bestP = bestP
	return bestCost
}

// riceParam returns the Rice parameter for m folded residuals summing to s, and the
// estimated bits of coding them: m*(k+1) + s>>k, which bounds the exact cost from above.
func riceParam(s, m uint64) (uint8, uint64) {
	if m == 0 {
		return 0, 0
	}
	kk := bits.Len64(s / m)
	bestK, bestC := 0, ^uint64(0)
	for k := max(kk-2, 0); k <= min(kk, 30); k++ {
		c := m*uint64(k+1) + s>>uint(k)
		if c < bestC {
			bestK, bestC = k, c
		}
	}
	return uint8(bestK), bestC
}

// writeFixed writes the body (after the header) of a fixed-predictor subframe whose residuals residualPlan left in f.fold.
func (f *frameEncoder) writeFixed(x []int32, order, bps int) {
	bw := &f.bw
	mask := uint64(1)<<uint(bps) - 1
	for _, v := range x[:order] {
		bw.write(uint64(uint32(v))&mask, uint(bps))
	}
	f.writeResidual(len(x), order)
}

// writeResidual writes the residual section (partitioned Rice) of the n-order residuals
// in f.fold with the plan in f.bestP and f.bestK.
func (f *frameEncoder) writeResidual(n, order int) {
	bw := &f.bw
	parts := 1 << f.bestP
	paramBits := uint(4)
	for _, k := range f.bestK[:parts] {
		if k > 14 {
			paramBits = 5
		}
	}
	bw.write(uint64(paramBits-4)<<4|uint64(f.bestP), 6)
	psize := n >> f.bestP
	u := f.fold
	pos := 0
	for i, k := range f.bestK[:parts] {
		m := psize
		if i == 0 {
			m -= order
		}
		bw.write(uint64(k), paramBits)
		kk := uint(k)
		lowMask := uint32(1)<<kk - 1
		for _, v := range u[pos : pos+m] {
			q := uint(v >> kk)
			if q+kk+1 <= 63 {
				bw.write(uint64(1<<kk|v&lowMask), q+kk+1)
				continue
			}
			for q >= 32 {
				bw.write(0, 32)
				q -= 32
			}
			bw.write(0, q)
			bw.write(uint64(1<<kk|v&lowMask), kk+1)
		}
		pos += m
	}
}

func fold(v int32) uint32 { return uint32(v<<1) ^ uint32(v>>31) }

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growU(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}

func growU64(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

func growU8(s []uint8, n int) []uint8 {
	if cap(s) < n {
		return make([]uint8, n)
	}
	return s[:n]
}

// bitWriter appends bits MSB first to buf through a 64-bit accumulator.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint // bits held in acc (< 64)
}

func (b *bitWriter) reset(buf []byte) { b.buf, b.acc, b.n = buf, 0, 0 }

// write appends the low nb bits of v (nb <= 63; v has no bits above nb).
func (b *bitWriter) write(v uint64, nb uint) {
	if b.n+nb < 64 {
		b.acc = b.acc<<nb | v
		b.n += nb
		return
	}
	rem := 64 - b.n
	b.acc = b.acc<<rem | v>>(nb-rem)
	b.buf = binary.BigEndian.AppendUint64(b.buf, b.acc)
	b.n = nb - rem
	b.acc = v & (uint64(1)<<b.n - 1)
}

// pad fills to a byte boundary with zeros and moves whole bytes to buf.
func (b *bitWriter) pad() {
	if r := b.n % 8; r != 0 {
		b.write(0, 8-r)
	}
	b.flushBytes()
}

// flushBytes moves the (byte-aligned) accumulator to buf and returns len(buf).
func (b *bitWriter) flushBytes() int {
	for b.n > 0 {
		b.n -= 8
		b.buf = append(b.buf, byte(b.acc>>b.n))
	}
	b.acc = 0
	return len(b.buf)
}

// writeUTF8 writes v in FLAC's extended UTF-8 coding (up to 36 bits).
func writeUTF8(b *bitWriter, v uint64) {
	if v < 0x80 {
		b.write(v, 8)
		return
	}
	nb := 2
	for v >= 1<<(5*nb+1) {
		nb++
	}
	lead := (uint64(0xFF00) >> nb) & 0xFF
	b.write(lead|v>>(6*(nb-1)), 8)
	for i := nb - 2; i >= 0; i-- {
		b.write(0x80|(v>>(6*i))&0x3F, 8)
	}
}

// rateCodes are the frame-header codes of common sample rates. 24 and 176.4 kHz are left to
// STREAMINFO, because mewkiz/flac logs a line for every such frame it decodes.
var rateCodes = map[int]uint64{
	88200: 1, 192000: 3, 8000: 4, 16000: 5, 22050: 6, 32000: 8, 44100: 9, 48000: 10, 96000: 11,
}

// depthCodes are the frame-header codes of sample depths (0: see STREAMINFO).
var depthCodes = [33]uint8{8: 1, 12: 2, 16: 4, 20: 5, 24: 6}
