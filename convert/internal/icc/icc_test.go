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

// TestCMYK_SampleProfile: the sample CMYK profile reads back, and its transform gives the
// model's own colours at the grid points: paper white, pure inks, black.
func TestCMYK_SampleProfile(t *testing.T) {
	p, err := ParseCMYK(SampleCMYK())
	if err != nil {
		t.Fatal(err)
	}
	if p.Description != "convsvc sample CMYK" {
		t.Errorf("description %q", p.Description)
	}
	tr := p.ToSRGB()
	for _, c := range []struct {
		c, m, y, k uint8
		want       [3]uint8
	}{
		{0, 0, 0, 0, [3]uint8{255, 255, 255}},   // paper: the PCS white
		{255, 0, 0, 0, [3]uint8{109, 225, 243}}, // cyan: 0.15, 0.75, 0.9 linear, sRGB-encoded
		{0, 0, 0, 255, [3]uint8{89, 89, 89}},    // black: a tenth of the paper
	} {
		r, g, b := tr.Pixel(c.c, c.m, c.y, c.k)
		got := [3]uint8{r, g, b}
		for i := range 3 {
			if d := int(got[i]) - int(c.want[i]); d < -1 || d > 1 {
				t.Errorf("CMYK %d,%d,%d,%d -> %v, want %v", c.c, c.m, c.y, c.k, got, c.want)
				break
			}
		}
	}
	if _, err := Parse(SampleCMYK()); err == nil {
		t.Error("Parse took the CMYK profile for RGB")
	}
	if _, err := ParseCMYK(Encode(DisplayP3())); err == nil {
		t.Error("ParseCMYK took an RGB profile")
	}
}

// FuzzParseCMYK: any bytes parse or fail without panicking, and a parsed profile's transform runs.
func FuzzParseCMYK(f *testing.F) {
	f.Add(smallCMYK())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseCMYK(b)
		if err != nil {
			return
		}
		tr := p.ToSRGB()
		tr.Pixel(0, 0, 0, 0)
		tr.Pixel(255, 128, 3, 255)
	})
}

// smallCMYK is a CMYK profile on a 3-point grid, small enough for the fuzzer to mutate quickly.
func smallCMYK() []byte {
	return EncodeCMYK("small", d50, 3, [4]func(float64) float64{}, func(c, m, y, k float64) (float64, float64, float64) {
		return 100 * (1 - k) * (1 - c/2), 60*m - 30*c, 60*y - 30*m
	})
}
