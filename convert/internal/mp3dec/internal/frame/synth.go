package frame

import "math"

// Fast polyphase synthesis (convsvc change, issue 21): the 64x32 matrix of go-mp3 is a 32-point
// DCT-II whose outputs are mirrored into the 64 V values, computed here with Lee's recursive
// factorisation (O(N log N)); the V history is a ring buffer instead of a 960-value shift per
// sample, and the window is applied straight from the ring.

// leeN[i] holds 1/(2 cos((2i+1)π/(2N))) for i < N/2: Lee's factors for the sizes 32, 16, 8, 4.
var lee32 [16]float32
var lee16 [8]float32
var lee8 [4]float32
var lee4 [2]float32

// cos4 is cos(π/4), the 2-point DCT-II's second coefficient.
var cos4 = float32(math.Cos(math.Pi / 4))

func prepareLee() {
	fill := func(dst []float32, n int) {
		for i := range dst {
			dst[i] = float32(1 / (2 * math.Cos(float64(2*i+1)*math.Pi/float64(2*n))))
		}
	}
	fill(lee32[:], 32)
	fill(lee16[:], 16)
	fill(lee8[:], 8)
	fill(lee4[:], 4)
}

// dct4 is the unnormalised 4-point DCT-II, X[k] = Σ x[n] cos((2n+1)kπ/8), in place: one more
// Lee step down to 2-point transforms.
func dct4(x *[4]float32) {
	a0, a1 := x[0]+x[3], x[1]+x[2]
	b0, b1 := (x[0]-x[3])*lee4[0], (x[1]-x[2])*lee4[1]
	A0, A1 := a0+a1, (a0-a1)*cos4
	B0, B1 := b0+b1, (b0-b1)*cos4
	x[0], x[1], x[2], x[3] = A0, B0+B1, A1, B1
}

// leeSplit is one step of Lee's recursion for a 2n-point DCT-II (n = len(a)): the sums
// a[i] = x[i] + x[2n-1-i] and the scaled differences b[i] = (x[i] - x[2n-1-i]) * lee[i], whose
// n-point DCT-IIs give the even and odd outputs.
func leeSplit(x, a, b, lee []float32) {
	n := len(a)
	x, b, lee = x[:2*n], b[:n], lee[:n]
	for i := range a {
		xi, xj := x[i], x[2*n-1-i]
		a[i] = xi + xj
		b[i] = (xi - xj) * lee[i]
	}
}

// leeMerge interleaves the transformed halves back into x: X[2k] = A[k], X[2k+1] = B[k] + B[k+1]
// (B[n] = 0).
func leeMerge(x, a, b []float32) {
	n := len(a) - 1
	for k := 0; k < n; k++ {
		x[2*k] = a[k]
		x[2*k+1] = b[k] + b[k+1]
	}
	x[2*n] = a[n]
	x[2*n+1] = b[n]
}

func dct8(x *[8]float32) {
	var a, b [4]float32
	leeSplit(x[:], a[:], b[:], lee8[:])
	dct4(&a)
	dct4(&b)
	leeMerge(x[:], a[:], b[:])
}

func dct16(x *[16]float32) {
	var a, b [8]float32
	leeSplit(x[:], a[:], b[:], lee16[:])
	dct8(&a)
	dct8(&b)
	leeMerge(x[:], a[:], b[:])
}

// dct32 is the unnormalised 32-point DCT-II, X[k] = Σ x[n] cos((2n+1)kπ/64), in place.
func dct32(x *[32]float32) {
	var a, b [16]float32
	leeSplit(x[:], a[:], b[:], lee32[:])
	dct16(&a)
	dct16(&b)
	leeMerge(x[:], a[:], b[:])
}

// synthV writes the 64 values V[i] = Σ s[j] cos((16+i)(2j+1)π/64) to v from X = DCT-II(s):
// V[i] = X[16+i] (i < 16), 0 (i = 16), -X[48-i] (16 < i ≤ 48), -X[i-48] (i > 48).
func synthV(v []float32, x *[32]float32) {
	v = v[:64]
	for i := 0; i < 16; i++ {
		v[i] = x[16+i]
	}
	v[16] = 0
	for i := 17; i <= 48; i++ {
		v[i] = -x[48-i]
	}
	for i := 49; i < 64; i++ {
		v[i] = -x[i-48]
	}
}

func (f *Frame) subbandSynthesis(gr int, ch int, out []byte) {
	vv := &f.v_vec[ch]
	var s [32]float32
	var pcm [32]float32
	nch := f.header.NumberOfChannels()
	d := &f.mainData.Is[gr][ch]
	out = out[:4*32*18]
	for ss := 0; ss < 18; ss++ {
		for i := range s {
			s[i] = d[i*18+ss]
		}
		dct32(&s)
		off := (f.vOff[ch] - 64) & 1023
		f.vOff[ch] = off
		synthV(vv[off:off+64], &s)
		synthWindow(&pcm, vv, off)
		o := (*[128]byte)(out[128*ss : 128*ss+128])
		// Each sample goes to its channel's two bytes of a stereo frame (both, in mono).
		for i, sum := range pcm {
			samp := int(sum * 32767)
			samp = max(min(samp, 32767), -32767)
			lo, hi := byte(samp), byte(samp>>8)
			p := (*[4]byte)(o[4*i : 4*i+4])
			if nch == 1 {
				p[0], p[1], p[2], p[3] = lo, hi, lo, hi
			} else {
				p[2*ch], p[2*ch+1] = lo, hi
			}
		}
	}
}

// synthWindowGo is the synthesis window in Go: pcm[i] = Σ over the 16 rows of V (the ring vv,
// newest at off) times synthDtbl, two rows at a time. synthWindow is this function, or on amd64
// the same float32 operations in the same order four lanes at a time (synth_amd64.s), bit for
// bit (TestSynthWindow_MatchesGo).
func synthWindowGo(pcm *[32]float32, vv *[1024]float32, off int) {
	*pcm = [32]float32{}
	for m := 0; m < 8; m += 2 { // two window rows per pass: half the loads and stores of pcm
		b1 := (off + 128*m) & 1023
		b2 := (off + 128*m + 96) & 1023
		b3 := (off + 128*m + 128) & 1023
		b4 := (off + 128*m + 224) & 1023
		v1 := (*[32]float32)(vv[b1 : b1+32])
		v2 := (*[32]float32)(vv[b2 : b2+32])
		v3 := (*[32]float32)(vv[b3 : b3+32])
		v4 := (*[32]float32)(vv[b4 : b4+32])
		d1 := (*[32]float32)(synthDtbl[64*m : 64*m+32])
		d2 := (*[32]float32)(synthDtbl[64*m+32 : 64*m+64])
		d3 := (*[32]float32)(synthDtbl[64*m+64 : 64*m+96])
		d4 := (*[32]float32)(synthDtbl[64*m+96 : 64*m+128])
		for i := range pcm {
			pcm[i] += (v1[i]*d1[i] + v2[i]*d2[i]) + (v3[i]*d3[i] + v4[i]*d4[i])
		}
	}
}
