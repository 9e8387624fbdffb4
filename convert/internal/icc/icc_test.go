package icc

import (
	"math"
	"testing"
)

func TestParse_RoundTrip(t *testing.T) {
	p := DisplayP3()
	got, err := Parse(Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != "Display P3" {
		t.Errorf("description %q", got.Description)
	}
	for i := range 3 {
		for j := range 3 {
			if math.Abs(got.Matrix[i][j]-p.Matrix[i][j]) > 1e-4 {
				t.Errorf("matrix[%d][%d] = %v, want %v", i, j, got.Matrix[i][j], p.Matrix[i][j])
			}
		}
	}
	for _, x := range []float64{0, 0.02, 0.5, 1} {
		if a, b := got.TRC[1].Eval(x), SRGBDecode(x); math.Abs(a-b) > 1e-3 {
			t.Errorf("TRC(%v) = %v, want %v", x, a, b)
		}
	}
	tr := got.ToSRGB()
	if tr == nil {
		t.Fatal("Display P3 taken for sRGB")
	}
	// P3's pure red is outside sRGB: clipped to red with a little negative green and blue.
	if r, g, b := tr.Pixel(255, 0, 0); r != 255 || g > 10 || b > 10 {
		t.Errorf("P3 red -> %d,%d,%d", r, g, b)
	}
	if r, g, b := tr.Pixel(255, 255, 255); r != 255 || g != 255 || b != 255 {
		t.Errorf("P3 white -> %d,%d,%d", r, g, b)
	}
}

func TestToSRGB_SRGBIsIdentity(t *testing.T) {
	srgb := Curve{Type: 3, Param: []float64{2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045, 0, 0}}
	p := &Profile{Matrix: [3][3]float64{
		{0.4360747, 0.3850649, 0.1430804},
		{0.2225045, 0.7168786, 0.0606169},
		{0.0139322, 0.0971045, 0.7141733},
	}, TRC: [3]Curve{srgb, srgb, srgb}}
	if p.ToSRGB() != nil {
		t.Fatal("sRGB profile gave a transform")
	}
}

func TestParse_Refuses(t *testing.T) {
	b := Encode(DisplayP3())
	cmyk := append([]byte(nil), b...)
	copy(cmyk[16:], "CMYK")
	if _, err := Parse(cmyk); err == nil {
		t.Error("CMYK profile parsed")
	}
	if _, err := Parse(b[:100]); err == nil {
		t.Error("truncated profile parsed")
	}
}

// FuzzParse: any bytes parse or fail without panicking, and a parsed profile's transform runs.
func FuzzParse(f *testing.F) {
	f.Add(Encode(DisplayP3()))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			return
		}
		if tr := p.ToSRGB(); tr != nil {
			tr.Pixel(1, 128, 255)
		}
	})
}
