// Copyright 2017 Hajime Hoshi
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package imdct

import (
	"math"
	"sync"
)

var imdctWinData = [4][36]float32{}

// Prepare fills the windows and rotations on first call (frame.Read calls it): made at first
// use, not at package initialisation, so a process that decodes no MP3 pays nothing for them.
var Prepare = sync.OnceFunc(func() {
	prepareWindows()
	prepareDCT()
})

func prepareWindows() {
	for i := 0; i < 36; i++ {
		imdctWinData[0][i] = float32(math.Sin(math.Pi / 36 * (float64(i) + 0.5)))
	}
	for i := 0; i < 18; i++ {
		imdctWinData[1][i] = float32(math.Sin(math.Pi / 36 * (float64(i) + 0.5)))
	}
	for i := 18; i < 24; i++ {
		imdctWinData[1][i] = 1.0
	}
	for i := 24; i < 30; i++ {
		imdctWinData[1][i] = float32(math.Sin(math.Pi / 12 * (float64(i) + 0.5 - 18.0)))
	}
	for i := 30; i < 36; i++ {
		imdctWinData[1][i] = 0.0
	}
	for i := 0; i < 12; i++ {
		imdctWinData[2][i] = float32(math.Sin(math.Pi / 12 * (float64(i) + 0.5)))
	}
	for i := 12; i < 36; i++ {
		imdctWinData[2][i] = 0.0
	}
	for i := 0; i < 6; i++ {
		imdctWinData[3][i] = 0.0
	}
	for i := 6; i < 12; i++ {
		imdctWinData[3][i] = float32(math.Sin(math.Pi / 12 * (float64(i) + 0.5 - 6.0)))
	}
	for i := 12; i < 18; i++ {
		imdctWinData[3][i] = 1.0
	}
	for i := 18; i < 36; i++ {
		imdctWinData[3][i] = float32(math.Sin(math.Pi / 36 * (float64(i) + 0.5)))
	}
}

// convsvc change (issue 21): the IMDCT is an N/2-point DCT-IV (18 or 6 points, half the
// multiplications of go-mp3's N x N/2 matrix) whose outputs are unfolded by the IMDCT's symmetry
// into the N values, windowed in place, without allocation.

var dct4N6 [6][6]float32

// The 18-point DCT-IV as a 9-point complex DFT between two rotations (issue 21, round three):
// v[n] = (x[2n] + i x[17-2n]) e^{-iπ(4n+1)/72}, V = DFT9(v) (3 x 3 Cooley-Tukey),
// w[k] = V[k] e^{-iπk/18}, z[2k] = Re w[k], z[17-2k] = -Im w[k]: about 110 multiplications
// instead of the 324 of the matrix.
var pre18, post18 [9][2]float32 // cos θ, sin θ
var tw9 [5][2]float32           // W9^e = cos(2πe/9) - i sin(2πe/9), e = 0..4
var sqrt3h = float32(math.Sqrt(3) / 2)

func prepareDCT() {
	for n := 0; n < 9; n++ {
		a := math.Pi * float64(4*n+1) / 72
		pre18[n] = [2]float32{float32(math.Cos(a)), float32(math.Sin(a))}
		b := math.Pi * float64(n) / 18
		post18[n] = [2]float32{float32(math.Cos(b)), float32(math.Sin(b))}
	}
	for e := range tw9 {
		a := 2 * math.Pi * float64(e) / 9
		tw9[e] = [2]float32{float32(math.Cos(a)), float32(math.Sin(a))}
	}
	for k := 0; k < 6; k++ {
		for m := 0; m < 6; m++ {
			dct4N6[k][m] = float32(math.Cos(math.Pi / 24 * float64((2*k+1)*(2*m+1))))
		}
	}
}

// Win writes to out the windowed IMDCT of the 18 values in (block type 0, 1 or 3: one 36-point
// transform; type 2: three 12-point transforms of the interleaved short windows, overlapped).
func Win(in *[18]float32, blockType int, out *[36]float32) {
	iwd := &imdctWinData[blockType&3]
	if blockType == 2 {
		*out = [36]float32{}
		for i := 0; i < 3; i++ {
			var z [6]float32
			for k := range z {
				row := &dct4N6[k]
				var sum float32
				for m := 0; m < 6; m++ {
					sum += in[i+3*m] * row[m]
				}
				z[k] = sum
			}
			// out12[p] = z[p+3] (p < 3), -z[8-p] (3 <= p < 9), -z[p-9] (p >= 9)
			o := (*[12]float32)(out[6*i+6 : 6*i+18])
			for p := 0; p < 3; p++ {
				o[p] += z[p+3] * iwd[p]
			}
			for p := 3; p < 9; p++ {
				o[p] -= z[8-p] * iwd[p]
			}
			for p := 9; p < 12; p++ {
				o[p] -= z[p-9] * iwd[p]
			}
		}
		return
	}
	var z [18]float32
	dct4N18(in, &z)
	// out[p] = z[p+9] (p < 9), -z[26-p] (9 <= p < 27), -z[p-27] (p >= 27)
	for p := 0; p < 9; p++ {
		out[p] = z[p+9] * iwd[p]
	}
	for p := 9; p < 27; p++ {
		out[p] = -z[26-p] * iwd[p]
	}
	for p := 27; p < 36; p++ {
		out[p] = -z[p-27] * iwd[p]
	}
}

// dft3 is the 3-point DFT of (a0, a1, a2) (real parts r, imaginary parts i), in place.
func dft3(r, i *[3]float32) {
	sr, si := r[1]+r[2], i[1]+i[2]
	dr, di := (r[1]-r[2])*sqrt3h, (i[1]-i[2])*sqrt3h
	tr, ti := r[0]-0.5*sr, i[0]-0.5*si
	r[0], i[0] = r[0]+sr, i[0]+si
	r[1], i[1] = tr+di, ti-dr
	r[2], i[2] = tr-di, ti+dr
}

// dct4N18 writes to z the 18-point DCT-IV of x, z[k] = Σ x[m] cos(π(2k+1)(2m+1)/72).
func dct4N18(x *[18]float32, z *[18]float32) {
	// u[b] holds v[b], v[3+b], v[6+b]; after the first pass of 3-point DFTs, U_b[k1].
	var ur, ui [3][3]float32
	for n := 0; n < 9; n++ {
		a, b := x[2*n], x[17-2*n]
		c, s := pre18[n][0], pre18[n][1]
		ur[n%3][n/3], ui[n%3][n/3] = a*c+b*s, b*c-a*s
	}
	for b := 0; b < 3; b++ {
		dft3(&ur[b], &ui[b])
	}
	for b := 1; b < 3; b++ {
		for k1 := 1; k1 < 3; k1++ {
			c, s := tw9[b*k1][0], tw9[b*k1][1]
			r, i := ur[b][k1], ui[b][k1]
			ur[b][k1], ui[b][k1] = r*c+i*s, i*c-r*s
		}
	}
	for k1 := 0; k1 < 3; k1++ {
		vr := [3]float32{ur[0][k1], ur[1][k1], ur[2][k1]}
		vi := [3]float32{ui[0][k1], ui[1][k1], ui[2][k1]}
		dft3(&vr, &vi)
		for k2 := 0; k2 < 3; k2++ {
			k := k1 + 3*k2
			c, s := post18[k][0], post18[k][1]
			z[2*k] = vr[k2]*c + vi[k2]*s
			z[17-2*k] = -(vi[k2]*c - vr[k2]*s)
		}
	}
}
