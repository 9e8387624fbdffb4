package flacenc

import (
	"math"
	"math/bits"
)

// Linear prediction (as flac -5 does): the block is windowed with tukey(0.5), its
// autocorrelation up to maxLPCOrder lags gives the predictors of every order by
// Levinson-Durbin, the order with the fewest expected bits is quantised and its residuals are
// Rice-coded like a fixed predictor's. subframe keeps whichever of the two is smaller.

// maxLPCOrder is the highest LPC order tried (flac -5 uses 8).
const maxLPCOrder = 8

// lpcPlan is the chosen quantised predictor of a block.
type lpcPlan struct {
	order int
	prec  int // bits of each coefficient (2 to 15)
	shift int // right shift of the prediction (0 to 15)
	coef  [maxLPCOrder]int32
}

// lpcPrecision is libFLAC's coefficient precision for a block size and the stream's sample
// depth: 12 bits for 16-bit samples at 4096, 15 for 24-bit ones. (Below 16 bits libFLAC
// guesses 2 + bits/2; the 16-bit table is kept there.)
func lpcPrecision(n, streamBits int) int {
	switch {
	case streamBits > 16:
		switch {
		case n <= 384:
			return 13
		case n <= 1152:
			return 14
		}
		return 15
	case n <= 192:
		return 7
	case n <= 384:
		return 8
	case n <= 576:
		return 9
	case n <= 1152:
		return 10
	case n <= 2304:
		return 11
	case n <= 4608:
		return 12
	}
	return 13
}

// lpcMaxPrecision is libFLAC's cap on the precision of an order's coefficients in a subframe
// of bps bits per sample: up to 17 bits, what keeps a decoder's prediction in 32-bit
// arithmetic.
func lpcMaxPrecision(bps, order int) int {
	if bps > 17 {
		return 15
	}
	return min(max(32-bps-(bits.Len(uint(order))-1), 1), 15)
}

// tukeyWindow fills w with the tukey(0.5) window of len(w) samples (libFLAC's definition).
func tukeyWindow(w []float64) {
	n := len(w)
	for i := range w {
		w[i] = 1
	}
	np := int(0.5/2*float64(n)) - 1
	if np <= 0 {
		return
	}
	for i := 0; i <= np; i++ {
		w[i] = 0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(np))
		w[n-np-1+i] = 0.5 - 0.5*math.Cos(math.Pi*float64(i+np)/float64(np))
	}
}

// planLPC chooses and quantises a predictor for x (bps bits per sample). ok is false when no
// usable predictor exists (silence, or coefficients too large to quantise).
func (f *frameEncoder) planLPC(x []int32, bps int) (p lpcPlan, ok bool) {
	n := len(x)
	maxOrder := min(maxLPCOrder, n-1)
	if maxOrder < 1 {
		return p, false
	}
	if len(f.window) != n {
		f.window = make([]float64, n)
		tukeyWindow(f.window)
	}
	f.wx = growF(f.wx, n)
	wx, win := f.wx[:n], f.window[:n]
	for i, v := range x {
		wx[i] = float64(v) * win[i]
	}
	autoc := autocorrelation(wx, maxOrder)
	if autoc[0] == 0 {
		return p, false
	}
	// Levinson-Durbin: lp[o-1] holds the predictor of order o, errs[o-1] its error.
	var lp [maxLPCOrder][maxLPCOrder]float64
	var errs [maxLPCOrder]float64
	var a, prev [maxLPCOrder]float64
	e := autoc[0]
	orders := 0
	for i := range maxOrder {
		r := autoc[i+1]
		for j := range i {
			r -= a[j] * autoc[i-j]
		}
		r /= e
		prev = a
		a[i] = r
		for j := range i {
			a[j] = prev[j] - r*prev[i-1-j]
		}
		e *= 1 - r*r
		lp[i] = a
		errs[i] = e
		orders = i + 1
		if e <= 0 {
			break
		}
	}
	// The order with the fewest expected bits: residual bits from the prediction error plus
	// the warm-up samples and coefficients.
	base := lpcPrecision(n, f.inf.Bits)
	best, bestBits := 0, math.Inf(1)
	scale := 0.5 / float64(n)
	for o := 1; o <= orders; o++ {
		bpr := 0.0
		if errs[o-1] > 0 {
			bpr = max(0.5*math.Log2(scale*errs[o-1]), 0)
		}
		b := bpr*float64(n-o) + float64(o*(bps+min(base, lpcMaxPrecision(bps, o))))
		if b < bestBits {
			best, bestBits = o, b
		}
	}
	// Quantise (libFLAC's method): the largest coefficient sets the shift; rounding errors are
	// carried to the next coefficient.
	prec := min(base, lpcMaxPrecision(bps, best))
	coef := lp[best-1][:best]
	cmax := 0.0
	for _, c := range coef {
		cmax = max(cmax, math.Abs(c))
	}
	if cmax <= 0 || math.IsNaN(cmax) || math.IsInf(cmax, 0) {
		return p, false
	}
	_, log2cmax := math.Frexp(cmax)
	shift := prec - 1 - log2cmax
	if shift > 15 {
		shift = 15
	}
	if shift < 0 {
		return p, false
	}
	qmax := int64(1)<<(prec-1) - 1
	qmin := -qmax - 1
	var carry float64
	for i, c := range coef {
		carry += c * float64(int64(1)<<shift)
		q := int64(math.RoundToEven(carry))
		q = min(max(q, qmin), qmax)
		carry -= float64(q)
		p.coef[i] = int32(q)
	}
	p.order, p.prec, p.shift = best, prec, shift
	return p, true
}

// autocorrelation returns the autocorrelation of x at lags 0 to maxOrder (all lags in one
// pass when maxOrder is 8 and x is longer).
func autocorrelation(x []float64, maxOrder int) (autoc [maxLPCOrder + 1]float64) {
	if maxOrder != 8 || len(x) <= 8 {
		for lag := 0; lag <= maxOrder; lag++ {
			var s float64
			a, b := x[lag:], x[:len(x)-lag]
			for i := range a {
				s += a[i] * b[i]
			}
			autoc[lag] = s
		}
		return autoc
	}
	// Samples 0 to 7 contribute to the lags that reach back to sample 0 only.
	for i := range 8 {
		for lag := 0; lag <= i; lag++ {
			autoc[lag] += x[i] * x[i-lag]
		}
	}
	var s0, s1, s2, s3, s4, s5, s6, s7, s8 float64
	for i := 8; i < len(x); i++ {
		h := (*[9]float64)(x[i-8 : i+1])
		v := h[8]
		s0 += v * h[8]
		s1 += v * h[7]
		s2 += v * h[6]
		s3 += v * h[5]
		s4 += v * h[4]
		s5 += v * h[3]
		s6 += v * h[2]
		s7 += v * h[1]
		s8 += v * h[0]
	}
	for lag, s := range [...]float64{s0, s1, s2, s3, s4, s5, s6, s7, s8} {
		autoc[lag] += s
	}
	return autoc
}

// lpcResiduals computes the residuals of p into f.fold (zigzag-folded). ok is false when a
// residual does not fit the 32-bit range decoders hold them in.
func (f *frameEncoder) lpcResiduals(x []int32, p *lpcPlan) bool {
	n, order := len(x), p.order
	f.fold = growU(f.fold, n-order)
	u := f.fold
	c := p.coef[:order]
	shift := uint(p.shift)
	// The first samples (before 8 are behind) one coefficient at a time, then all 8
	// coefficients (zero above the order) unrolled.
	head := min(maxLPCOrder, n)
	for i := order; i < head; i++ {
		var s int64
		h := x[i-order : i]
		for j, q := range c {
			s += int64(q) * int64(h[order-1-j])
		}
		r := int64(x[i]) - s>>shift
		if r < -(1<<30) || r >= 1<<30 {
			return false
		}
		u[i-order] = fold(int32(r))
	}
	var q [maxLPCOrder]int64
	for j, v := range c {
		q[j] = int64(v)
	}
	var bad int64
	u = u[head-order:]
	for i := head; i < n; i++ {
		h := (*[9]int32)(x[i-8 : i+1])
		s := q[0]*int64(h[7]) + q[1]*int64(h[6]) + q[2]*int64(h[5]) + q[3]*int64(h[4]) +
			q[4]*int64(h[3]) + q[5]*int64(h[2]) + q[6]*int64(h[1]) + q[7]*int64(h[0])
		r := int64(h[8]) - s>>shift
		// Residuals outside ±2^30 are flagged once the block is done.
		bad |= (r + 1<<30) >> 31
		u[i-head] = fold(int32(r))
	}
	return bad == 0
}

// writeLPC writes the body (after the header) of an LPC subframe whose residuals are in f.fold and whose Rice plan
// ricePlan left in f.bestP and f.bestK.
func (f *frameEncoder) writeLPC(x []int32, p *lpcPlan, bps int) {
	bw := &f.bw
	mask := uint64(1)<<uint(bps) - 1
	for _, v := range x[:p.order] {
		bw.write(uint64(uint32(v))&mask, uint(bps))
	}
	bw.write(uint64(p.prec-1), 4)
	bw.write(uint64(p.shift), 5)
	cmask := uint64(1)<<uint(p.prec) - 1
	for _, q := range p.coef[:p.order] {
		bw.write(uint64(uint32(q))&cmask, uint(p.prec))
	}
	f.writeResidual(len(x), p.order)
}

func growF(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
