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
)

var imdctWinData = [4][36]float32{}

func init() {
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

var dct4N18T [18][18]float32 // [m][k], transposed
var dct4N6 [6][6]float32

func init() {
	for k := 0; k < 18; k++ {
		for m := 0; m < 18; m++ {
			dct4N18T[m][k] = float32(math.Cos(math.Pi / 72 * float64((2*k+1)*(2*m+1))))
		}
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
	// Column by column: independent sums (no dependency chain) and zero inputs skipped.
	var z [18]float32
	for m := 0; m < 18; m += 2 { // two columns per pass: half the loads and stores of z
		x0, x1 := in[m], in[m+1]
		if x0 == 0 && x1 == 0 {
			continue
		}
		c0, c1 := &dct4N18T[m], &dct4N18T[m+1]
		for k := range z {
			z[k] += x0*c0[k] + x1*c1[k]
		}
	}
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
