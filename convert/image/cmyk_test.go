package image

import (
	"bytes"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/icc"
)

// cmykPatches are the device colours of the CMYK test image: paper, each ink, overprints,
// a rich black, greys of K alone and a skin tone.
var cmykPatches = [][4]uint8{
	{0, 0, 0, 0}, {255, 0, 0, 0}, {0, 255, 0, 0}, {0, 0, 255, 0}, {0, 0, 0, 255},
	{255, 255, 0, 0}, {0, 255, 255, 0}, {255, 0, 255, 0}, {153, 102, 51, 230},
	{0, 0, 0, 128}, {20, 60, 80, 10}, {200, 30, 120, 40},
}

// TestCMYK_ThroughProfile: an Adobe CMYK JPEG (inverted samples, APP14) with an embedded CMYK
// profile (a lut16 table to Lab, this project's own, written by ImageMagick into the JPEG)
// converts through the profile: every patch within ΔE 2 of vips icc_transform (Little CMS,
// relative colorimetric; 0.8 measured), on the full decode and on shrink-on-load, to PNG and
// JPEG, for ImageMagick's YCCK and vips's plain (inverted) CMYK, with no
// color_profile_dropped warning. The naive conversion it replaces is checked to be far off, so
// the comparison can tell them apart.
func TestCMYK_ThroughProfile(t *testing.T) {
	magick := needTool(t, "convert")
	vips := needTool(t, "vips")
	dir := t.TempDir()
	const side = 32
	raw := make([]byte, 0, 4*side*side*len(cmykPatches))
	for range side {
		for _, c := range cmykPatches {
			for range side {
				raw = append(raw, c[:]...)
			}
		}
	}
	rawPath := writeFile(t, dir, "patches.cmyk", raw)
	profPath := writeFile(t, dir, "sample-cmyk.icc", icc.SampleCMYK())
	in := filepath.Join(dir, "in.jpg")
	run(t, magick, "-size", "384x32", "-depth", "8", "cmyk:"+rawPath, "-profile", profPath, "-sampling-factor", "1x1", "-quality", "98", in)
	want := filepath.Join(dir, "want.png")
	run(t, vips, "icc_transform", in, want, "srgb", "--embedded", "--intent", "relative")
	wantImg := readImage(t, want)

	src, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("Adobe")) {
		t.Fatal("ImageMagick wrote no Adobe APP14 segment")
	}
	naive := To8Bit(readImage(t, in))
	// vips writes the same pixels as plain Adobe CMYK (APP14 transform 0: inverted CMYK
	// samples rather than ImageMagick's YCCK).
	plain := filepath.Join(dir, "plain.jpg")
	run(t, vips, "copy", in, plain+"[Q=98]")

	for _, c := range []struct {
		in, to string
		width  int
	}{{in, "png", 0}, {in, "png", 192}, {in, "jpeg", 0}, {plain, "png", 0}, {plain, "png", 96}} {
		opts := convert.Options{Width: c.width}
		if c.to == "jpeg" {
			opts.Quality = 98
		}
		out, ws, err := convertFile(t, "jpeg", c.to, c.in, opts)
		if err != nil {
			t.Fatalf("%s to %s %d: %v", filepath.Base(c.in), c.to, c.width, err)
		}
		for _, w := range ws {
			if w.Code == convert.WarnColorProfileDropped {
				t.Errorf("%s to %s %d: warned %v for a profile it converted", filepath.Base(c.in), c.to, c.width, w)
			}
		}
		got, _ := decodeOutput(t, c.to, out)
		scale := 1
		if c.width != 0 {
			scale = 384 / c.width
		}
		worst := 0.0
		for i, p := range cmykPatches {
			x, y := (side*i+side/2)/scale, side/2/scale
			g, w := nrgbaAt(got, x, y), nrgbaAt(wantImg, side*i+side/2, side/2)
			d := deltaE(g, w)
			worst = max(worst, d)
			if d > 2 {
				t.Errorf("%s to %s %d: CMYK %v: got %v, vips %v, ΔE %.2f", filepath.Base(c.in), c.to, c.width, p, g, w, d)
			}
		}
		t.Logf("%s to %s %d: the largest ΔE from vips is %.2f", filepath.Base(c.in), c.to, c.width, worst)
	}
	far := 0.0
	for i := range cmykPatches {
		far = max(far, deltaE(nrgbaAt(naive, side*i+side/2, side/2), nrgbaAt(wantImg, side*i+side/2, side/2)))
	}
	if far < 10 {
		t.Errorf("the naive conversion is within ΔE %.1f of vips: the test cannot tell them apart", far)
	}
}

// TestCMYK_NoProfile: a CMYK JPEG without a profile still converts (naively, as image/jpeg
// does) with no profile warning.
func TestCMYK_NoProfile(t *testing.T) {
	magick := needTool(t, "convert")
	dir := t.TempDir()
	raw := bytes.Repeat([]byte{0, 255, 255, 0}, 16*16)
	rawPath := writeFile(t, dir, "red.cmyk", raw)
	in := filepath.Join(dir, "in.jpg")
	run(t, magick, "-size", "16x16", "-depth", "8", "cmyk:"+rawPath, "-quality", "98", in)
	out, ws, err := convertFile(t, "jpeg", "png", in, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 0 {
		t.Errorf("warnings %v", ws)
	}
	m, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if c := nrgbaAt(m, 8, 8); deltaE(c, color.NRGBA{255, 0, 0, 255}) > 3 {
		t.Errorf("M+Y without a profile: %v, want red", c)
	}
}
