package jpegscale

import "math"

// blockBytes is the memory one block of coefficients takes ([blockSize]int32).
const blockBytes = blockSize * 4

// scaledBits is the fixed-point precision of scaledMatrix.
const scaledBits = 14

// scaledMatrix[shift] holds, for the n = 8>>shift outputs k and the 8 frequencies u, the
// mean of the 1-D inverse DCT's basis function over the s = 1<<shift samples output k covers:
//
//	M[k][u] = C(u)/2 * (1/s) * sum(x = k*s .. k*s+s-1) cos((2x+1)*u*pi/16), C(0) = 1/sqrt(2).
//
// Applied along both axes to all 64 coefficients it gives the box-filtered (s x s mean)
// pixels of the full inverse DCT, without computing them.
var scaledMatrix [4][8][8]int64

func init() {
	for shift := 1; shift <= 3; shift++ {
		s := 1 << shift
		for k := 0; k < 8/s; k++ {
			for u := 0; u < 8; u++ {
				cu := 1.0
				if u == 0 {
					cu = 1 / math.Sqrt2
				}
				sum := 0.0
				for x := k * s; x < k*s+s; x++ {
					sum += math.Cos(float64(2*x+1) * float64(u) * math.Pi / 16)
				}
				scaledMatrix[shift][k][u] = int64(math.Round(cu / 2 * sum / float64(s) * (1 << scaledBits)))
			}
		}
	}
}

// idctScaled turns the quantized coefficients in b (natural order), dequantized with q
// (natural order), into the n x n (n = 8>>shift) box-filtered pixels of their inverse DCT,
// level shift not applied, written row by row to b[:n*n].
func idctScaled(b *block, q *block, shift uint) {
	n := 8 >> shift
	if shift == 3 {
		// The 1x1 output is the block's mean, F(0,0)/8, whatever the AC coefficients are.
		b[0] = int32((int64(b[0])*int64(q[0]) + 4) >> 3)
		return
	}
	m := &scaledMatrix[shift]
	// Columns first: t[k][u] = sum over v of M[k][v] * F(v, u), skipping rows of zeros.
	var t [4][8]int64
	rows := 0
	for v := 0; v < 8; v++ {
		row := b[v*8 : v*8+8 : v*8+8]
		if row[0]|row[1]|row[2]|row[3]|row[4]|row[5]|row[6]|row[7] == 0 {
			continue
		}
		rows |= 1 << v
		qr := q[v*8 : v*8+8 : v*8+8]
		var f [8]int64
		for u := range f {
			f[u] = int64(row[u]) * int64(qr[u])
		}
		if rows == 1 && f[1]|f[2]|f[3]|f[4]|f[5]|f[6]|f[7] == 0 {
			// So far only the DC coefficient; t[k][0] alone.
			for k := 0; k < n; k++ {
				t[k][0] = m[k][0] * f[0]
			}
			continue
		}
		for k := 0; k < n; k++ {
			mk := m[k][v]
			tk := &t[k]
			for u := range f {
				tk[u] += mk * f[u]
			}
		}
	}
	if rows <= 1 && t[0][1]|t[0][2]|t[0][3]|t[0][4]|t[0][5]|t[0][6]|t[0][7] == 0 {
		// DC only: every output is the block's mean.
		v := int32(0)
		if rows == 1 {
			v = int32((int64(b[0])*int64(q[0]) + 4) >> 3)
		}
		for i := 0; i < n*n; i++ {
			b[i] = v
		}
		return
	}
	// Then rows: out[ky][kx] = sum over u of M[kx][u] * t[ky][u].
	const round = 1 << (2*scaledBits - 1)
	for ky := 0; ky < n; ky++ {
		tk := &t[ky]
		for kx := 0; kx < n; kx++ {
			mk := &m[kx]
			acc := mk[0]*tk[0] + mk[1]*tk[1] + mk[2]*tk[2] + mk[3]*tk[3] +
				mk[4]*tk[4] + mk[5]*tk[5] + mk[6]*tk[6] + mk[7]*tk[7]
			b[ky*n+kx] = int32((acc + round) >> (2 * scaledBits))
		}
	}
}

// quarterSymmetric says that scaledMatrix[2] has the symmetry idctQuarter relies on:
// M[1][u] = (-1)^u M[0][u] and M[k][4] = 0 (the four samples of cos(4(2x+1)pi/16) sum to 0).
var quarterSymmetric = func() bool {
	m := &scaledMatrix[2]
	for u := 0; u < 8; u++ {
		if m[1][u] != m[0][u]*int64(1-2*(u&1)) {
			return false
		}
	}
	return m[0][4] == 0
}()

// idctQuarter is idctScaled at shift 2 (2x2 outputs), giving the same integers: the sums are
// the same products added in another order (exact in int64, wrapping included), split into
// even and odd frequencies so that the two outputs of each axis share them, and without the
// products by M[k][4], which are zero. Coefficients of row 4 and column 4 are never read,
// nor rows past the last one that zig-zag index last reaches (the rest of b must be zero).
//
// qm is q with row v multiplied by M[0][v] (decoder.quantQuarter): M[0][v]*(F*q) is the same
// int64 as F*(M[0][v]*q), wrapping included.
func idctQuarter(b *block, q *block, qm *[blockSize]int64, last int32) {
	if last == 0 {
		// DC only, as below.
		v := int32((int64(b[0])*int64(q[0]) + 4) >> 3)
		b[0], b[1], b[2], b[3] = v, v, v, v
		return
	}
	m := &scaledMatrix[2][0]
	// e and o are the column pass's sums over the even and the odd rows v:
	// t[0][u] = e[u] + o[u], t[1][u] = e[u] - o[u].
	var e, o [8]int64
	rest := int32(0) // every coefficient outside row 0, ORed (row 4 included, as idctScaled).
	for v := 1; v <= int(lastRow[last&(blockSize-1)]); v++ {
		row := b[v*8 : v*8+8 : v*8+8]
		r := row[0] | row[1] | row[2] | row[3] | row[4] | row[5] | row[6] | row[7]
		rest |= r
		if r == 0 || v == 4 {
			continue
		}
		qr := qm[v*8 : v*8+8 : v*8+8]
		acc := &e
		if v&1 != 0 {
			acc = &o
		}
		acc[0] += int64(row[0]) * qr[0]
		acc[1] += int64(row[1]) * qr[1]
		acc[2] += int64(row[2]) * qr[2]
		acc[3] += int64(row[3]) * qr[3]
		acc[5] += int64(row[5]) * qr[5]
		acc[6] += int64(row[6]) * qr[6]
		acc[7] += int64(row[7]) * qr[7]
	}
	var f [8]int64
	for u := range f {
		f[u] = int64(b[u]) * int64(q[u])
	}
	if rest == 0 && f[1]|f[2]|f[3]|f[4]|f[5]|f[6]|f[7] == 0 {
		// DC only: every output is the block's mean, as idctScaled gives it.
		v := int32((f[0] + 4) >> 3)
		b[0], b[1], b[2], b[3] = v, v, v, v
		return
	}
	m0 := m[0]
	for u := range f {
		e[u] += m0 * f[u]
	}
	const round = 1 << (2*scaledBits - 1)
	for ky := 0; ky < 2; ky++ {
		var t [8]int64
		if ky == 0 {
			for u := range t {
				t[u] = e[u] + o[u]
			}
		} else {
			for u := range t {
				t[u] = e[u] - o[u]
			}
		}
		ev := m[0]*t[0] + m[2]*t[2] + m[6]*t[6]
		od := m[1]*t[1] + m[3]*t[3] + m[5]*t[5] + m[7]*t[7]
		b[ky*2] = int32((ev + od + round) >> (2 * scaledBits))
		b[ky*2+1] = int32((ev - od + round) >> (2 * scaledBits))
	}
}

// lastRow[z] is the lowest row (in natural order) of the zig-zag indexes 0..z.
var lastRow = func() (r [blockSize]uint8) {
	for z := range r {
		row := uint8(unzig[z] / 8)
		if z > 0 {
			row = max(row, r[z-1])
		}
		r[z] = row
	}
	return r
}()
