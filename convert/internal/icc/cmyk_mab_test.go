package icc

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// encodeMAB rewrites a profile made by EncodeCMYK with its A2B0 and A2B1 as one lutAtoB (mAB)
// table: the same 256-entry A curves, the colour table in 16 bits with the v4 Lab encoding,
// no M curves or matrix, identity B curves.
func encodeMAB(t *testing.T, prof []byte) []byte {
	t.Helper()
	tags, err := readTags(prof, func(string, string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLut(tags["A2B0"], true)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte("mAB \x00\x00\x00\x00\x04\x03\x00\x00")
	identity := []byte("curv\x00\x00\x00\x00\x00\x00\x00\x00")
	offB := 32
	offCLUT := offB + 3*len(identity)
	g := l.grid[0]
	clutLen := 20 + 2*len(l.clut)
	offA := (offCLUT + clutLen + 3) &^ 3
	for _, v := range []int{offB, 0, 0, offCLUT, offA} {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	for range 3 {
		b = append(b, identity...)
	}
	clut := make([]byte, 16)
	for i := range 4 {
		clut[i] = byte(g)
	}
	clut = append(clut, 2, 0, 0, 0)
	s := 65535.0 / 65280 // from lut16's legacy Lab encoding to v4's
	for _, v := range l.clut {
		clut = binary.BigEndian.AppendUint16(clut, uint16(math.Round(min(1, float64(v)*s)*65535)))
	}
	b = append(b, clut...)
	for len(b) < offA {
		b = append(b, 0)
	}
	for i := range 4 {
		b = append(b, "curv\x00\x00\x00\x00"...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.a[i].Table)))
		for _, v := range l.a[i].Table {
			b = binary.BigEndian.AppendUint16(b, v)
		}
	}
	return assemble("prtr", "CMYK", "Lab ", []tag{
		{"desc", mlucTag("convsvc sample CMYK (lutAtoB)")},
		{"cprt", mlucTag("-")},
		{"wtpt", tags["wtpt"]},
		{"A2B0", b},
		{"A2B1", b},
	})
}

// TestCMYK_LutAtoBSameAsVips: the sample profile's table as a lutAtoB (mAB) tag reads back and
// converts CMYK pixels within ΔE 2 of vips icc_transform (Little CMS, relative colorimetric),
// and within 1 level of the lut16 form it came from. vips and ImageMagick (which writes the
// CMYK JPEG) must be installed under CI=true.
func TestCMYK_LutAtoBSameAsVips(t *testing.T) {
	var tools []string
	for _, name := range []string{"convert", "vips"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed", name)
			}
			t.Skipf("%s is not installed", name)
		}
		tools = append(tools, p)
	}
	lut16 := SampleCMYK()
	mab := encodeMAB(t, lut16)
	pm, err := ParseCMYK(mab)
	if err != nil {
		t.Fatal(err)
	}
	if pm.lut.pcs != pcsLabV4 {
		t.Fatalf("PCS encoding %v, want v4 Lab", pm.lut.pcs)
	}
	p16, _ := ParseCMYK(lut16)
	tm, t16 := pm.ToSRGB(), p16.ToSRGB()
	for _, c := range [][4]uint8{{0, 0, 0, 0}, {255, 0, 0, 0}, {10, 200, 30, 90}, {255, 255, 255, 255}} {
		r1, g1, b1 := tm.Pixel(c[0], c[1], c[2], c[3])
		r2, g2, b2 := t16.Pixel(c[0], c[1], c[2], c[3])
		for _, d := range []int{int(r1) - int(r2), int(g1) - int(g2), int(b1) - int(b2)} {
			if d < -1 || d > 1 {
				t.Errorf("CMYK %v: lutAtoB %d,%d,%d, lut16 %d,%d,%d", c, r1, g1, b1, r2, g2, b2)
				break
			}
		}
	}

	patches := [][4]uint8{{0, 0, 0, 0}, {255, 0, 0, 0}, {0, 255, 0, 0}, {0, 0, 255, 0}, {0, 0, 0, 255}, {153, 102, 51, 230}, {20, 60, 80, 10}, {200, 30, 120, 40}}
	const side = 16
	var raw []byte
	for range side {
		for _, c := range patches {
			for range side {
				raw = append(raw, c[:]...)
			}
		}
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rawPath, profPath := write("p.cmyk", raw), write("mab.icc", mab)
	in := filepath.Join(dir, "in.jpg")
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(tools[0], "-size", strconv.Itoa(side*len(patches))+"x"+strconv.Itoa(side), "-depth", "8", "cmyk:"+rawPath, "-profile", profPath, "-sampling-factor", "1x1", "-quality", "98", in)
	want := filepath.Join(dir, "want.png")
	run(tools[1], "icc_transform", in, want+"[compression=0]", "srgb", "--embedded", "--intent", "relative")
	wantRaw := filepath.Join(dir, "want.rgb")
	run(tools[1], "rawsave", want, wantRaw)
	wantPix, err := os.ReadFile(wantRaw)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(in)
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := img.(*image.CMYK)
	if !ok {
		t.Fatalf("decoded %T, want CMYK", img)
	}
	got := tm.ConvertCMYK(cm)
	w := side * len(patches)
	for i, c := range patches {
		x, y := side*i+side/2, side/2
		g := got.Pix[got.PixOffset(x, y):]
		v := wantPix[3*(y*w+x):]
		if d := deltaE76(g[0], g[1], g[2], v[0], v[1], v[2]); d > 2 {
			t.Errorf("CMYK %v: got %v, vips %v, ΔE %.2f", c, g[:3], v[:3], d)
		}
	}
}

// deltaE76 is the CIE76 distance of two sRGB colours.
func deltaE76(r1, g1, b1, r2, g2, b2 uint8) float64 {
	lab := func(r, g, b uint8) [3]float64 {
		lin := [3]float64{SRGBDecode(float64(r) / 255), SRGBDecode(float64(g) / 255), SRGBDecode(float64(b) / 255)}
		m := invert3(xyzToSRGB)
		var xyz [3]float64
		for i := range 3 {
			xyz[i] = m[i][0]*lin[0] + m[i][1]*lin[1] + m[i][2]*lin[2]
		}
		L, a, bb := XYZToLab(xyz)
		return [3]float64{L, a, bb}
	}
	p, q := lab(r1, g1, b1), lab(r2, g2, b2)
	return math.Sqrt((p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1]) + (p[2]-q[2])*(p[2]-q[2]))
}
