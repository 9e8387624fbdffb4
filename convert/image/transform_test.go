package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/exif"
	"github.com/convsvc/convsvc/convert/internal/icc"
)

// needTool returns the path of an external tool the test compares with; it skips without it,
// and fails under CI=true, where every tool is installed.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// asymmetric is a w x h picture whose every turn and mirror differs: a gradient with a red
// block near the top-left corner and a blue one near the right edge.
func asymmetric(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255}
			switch {
			case x < w/4 && y < h/3:
				c = color.NRGBA{230, 20, 20, 255}
			case x > w*3/4 && y > h/2:
				c = color.NRGBA{20, 20, 230, 255}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readImage(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return m
}

// meanDiff is the mean absolute difference of two images' RGB samples; -1 when the sizes differ.
func meanDiff(a, b image.Image) float64 {
	if a.Bounds().Size() != b.Bounds().Size() {
		return -1
	}
	var sum float64
	ab, bb := a.Bounds(), b.Bounds()
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			p, q := nrgbaAt(a, ab.Min.X+x, ab.Min.Y+y), nrgbaAt(b, bb.Min.X+x, bb.Min.Y+y)
			sum += float64(absDiff(p.R, q.R) + absDiff(p.G, q.G) + absDiff(p.B, q.B))
		}
	}
	return sum / float64(3*ab.Dx()*ab.Dy())
}

func convertFile(t *testing.T, from, to, path string, opts convert.Options) ([]byte, []convert.Warning, error) {
	t.Helper()
	var out bytes.Buffer
	ws, err := testCatalog(convert.Limits{}).Convert(context.Background(), from, to, opts, openFile(t, path), &out, t.TempDir())
	return out.Bytes(), ws, err
}

// TestOrientation_AllEight: a JPEG, PNG (eXIf), TIFF and WebP tagged with each EXIF orientation
// comes out upright, as vips autorot turns it (ImageMagick's -auto-orient ignores PNG's
// eXIf), on the whole-image path, on
// JPEG shrink-on-load and on PNG/TIFF strip resizing; auto_orient false leaves it as stored.
func TestOrientation_AllEight(t *testing.T) {
	exiftool := needTool(t, "exiftool")
	magick := needTool(t, "convert")
	vips := needTool(t, "vips")
	dir := t.TempDir()
	src := asymmetric(240, 160)
	var jb, pb bytes.Buffer
	jpeg.Encode(&jb, src, &jpeg.Options{Quality: 95})
	png.Encode(&pb, src)
	for _, format := range []string{"jpeg", "png", "tiff", "webp"} {
		for v := 1; v <= 8; v++ {
			if testing.Short() && format != "jpeg" && v != 6 {
				continue // -short: every orientation of JPEG, the phone's portrait (6) of the others
			}
			t.Run(fmt.Sprintf("%s-%d", format, v), func(t *testing.T) {
				var in string
				switch format {
				case "jpeg":
					in = writeFile(t, dir, fmt.Sprintf("o%d.jpg", v), jb.Bytes())
				case "png":
					in = writeFile(t, dir, fmt.Sprintf("o%d.png", v), pb.Bytes())
				case "tiff":
					in = filepath.Join(dir, fmt.Sprintf("o%d.tif", v))
					run(t, magick, writeFile(t, dir, fmt.Sprintf("t%d.png", v), pb.Bytes()), "-compress", "none", in)
				case "webp":
					in = filepath.Join(dir, fmt.Sprintf("o%d.webp", v))
					run(t, vips, "copy", writeFile(t, dir, fmt.Sprintf("w%d.png", v), pb.Bytes()), in+"[lossless]")
				}
				run(t, exiftool, "-q", "-overwrite_original", fmt.Sprintf("-Orientation=%d", v), "-n", in)
				want := filepath.Join(dir, fmt.Sprintf("want-%s-%d.png", format, v))
				run(t, vips, "autorot", in, want)
				wantImg := readImage(t, want)

				out, _, err := convertFile(t, format, "png", in, convert.Options{})
				if err != nil {
					t.Fatal(err)
				}
				got := readImage(t, writeFile(t, dir, fmt.Sprintf("got-%s-%d.png", format, v), out))
				if d := meanDiff(got, wantImg); d < 0 || d > 2 {
					t.Fatalf("upright: %v vs ImageMagick's %v, mean difference %.2f", got.Bounds().Size(), wantImg.Bounds().Size(), d)
				}

				// Resized: shrink-on-load for JPEG, strips for PNG and TIFF.
				wantSmall := filepath.Join(dir, fmt.Sprintf("want-small-%s-%d.png", format, v))
				run(t, magick, want, "-resize", "60x60", wantSmall)
				out, _, err = convertFile(t, format, "png", in, convert.Options{Width: 60, Height: 60})
				if err != nil {
					t.Fatal(err)
				}
				gotSmall, _ := png.Decode(bytes.NewReader(out))
				if d := meanDiff(gotSmall, readImage(t, wantSmall)); d < 0 || d > 6 {
					t.Fatalf("resized upright: %v vs %v, mean difference %.2f", gotSmall.Bounds().Size(), readImage(t, wantSmall).Bounds().Size(), d)
				}

				off := false
				out, _, err = convertFile(t, format, "png", in, convert.Options{AutoOrient: &off})
				if err != nil {
					t.Fatal(err)
				}
				stored, _ := png.Decode(bytes.NewReader(out))
				if d := meanDiff(stored, src); d < 0 || d > 2 {
					t.Fatalf("auto_orient false: %v, mean difference %.2f from the stored pixels", stored.Bounds().Size(), d)
				}
			})
		}
	}
}

// TestTransforms_SameAsVips: crop, rotate and flip of a PNG give exactly the pixels of vips
// crop, rot and flip in that order, and resizing after them the size vips gives.
func TestTransforms_SameAsVips(t *testing.T) {
	vips := needTool(t, "vips")
	dir := t.TempDir()
	var pb bytes.Buffer
	png.Encode(&pb, asymmetric(240, 160))
	in := writeFile(t, dir, "in.png", pb.Bytes())
	for _, tt := range []struct {
		crop   *convert.Crop
		rotate int
		flip   string
	}{
		{nil, 90, ""}, {nil, 180, ""}, {nil, 270, ""}, {nil, 0, "horizontal"}, {nil, 0, "vertical"},
		{&convert.Crop{Left: 10, Top: 20, Width: 100, Height: 50}, 0, ""},
		{&convert.Crop{Left: 30, Top: 5, Width: 150, Height: 120}, 90, "vertical"},
		{&convert.Crop{Left: 0, Top: 0, Width: 240, Height: 1}, 270, "horizontal"},
	} {
		name := fmt.Sprintf("crop%v-rot%d-flip%s", tt.crop, tt.rotate, tt.flip)
		t.Run(name, func(t *testing.T) {
			cur := in
			steps := 0
			step := func(args ...string) {
				steps++
				next := filepath.Join(dir, fmt.Sprintf("%s-%d.png", strings.ReplaceAll(name, " ", "_"), steps))
				run(t, vips, append([]string{args[0], cur, next}, args[1:]...)...)
				cur = next
			}
			if c := tt.crop; c != nil {
				step("crop", fmt.Sprint(c.Left), fmt.Sprint(c.Top), fmt.Sprint(c.Width), fmt.Sprint(c.Height))
			}
			if tt.rotate != 0 {
				step("rot", fmt.Sprintf("d%d", tt.rotate))
			}
			if tt.flip != "" {
				step("flip", tt.flip)
			}
			out, _, err := convertFile(t, "png", "png", in, convert.Options{Crop: tt.crop, Rotate: tt.rotate, Flip: tt.flip})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := png.Decode(bytes.NewReader(out))
			want := readImage(t, cur)
			if d := meanDiff(got, want); d != 0 {
				t.Fatalf("%v vs vips %v: mean difference %.2f", got.Bounds().Size(), want.Bounds().Size(), d)
			}
		})
	}
	// Crop outside the upright image: a job error naming it.
	_, _, err := convertFile(t, "png", "png", in, convert.Options{Crop: &convert.Crop{Left: 200, Top: 0, Width: 100, Height: 10}})
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "240x160") {
		t.Fatalf("crop outside: %v", err)
	}
}

// TestBackground: transparency flattened onto the background colour for JPEG; white by default.
func TestBackground(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 32, 32)) // fully transparent
	in := encodeTemp(t, m)
	for _, tt := range []struct {
		bg   string
		want color.NRGBA
	}{{"", color.NRGBA{255, 255, 255, 255}}, {"#ff0000", color.NRGBA{255, 0, 0, 255}}, {"#1E90FF", color.NRGBA{0x1e, 0x90, 0xff, 255}}} {
		out, ws, err := convertFile(t, "png", "jpeg", in, convert.Options{Background: tt.bg})
		if err != nil {
			t.Fatal(err)
		}
		img, _ := jpeg.Decode(bytes.NewReader(out))
		got := nrgbaAt(img, 16, 16)
		if absDiff(got.R, tt.want.R) > 3 || absDiff(got.G, tt.want.G) > 3 || absDiff(got.B, tt.want.B) > 3 {
			t.Errorf("background %q: pixel %v, want %v", tt.bg, got, tt.want)
		}
		if len(ws) == 0 || ws[0].Code != convert.WarnAlphaDropped {
			t.Errorf("background %q: warnings %v, want alpha_dropped", tt.bg, ws)
		}
	}
}

// TestMaxBytes: a lossy target lowers its quality to fit in at most MaxBytesEncodes encodes
// and says so; one that cannot fit fails with error reason output_too_large; so does a
// lossless target over the bound.
func TestMaxBytes(t *testing.T) {
	var pb bytes.Buffer
	png.Encode(&pb, asymmetric(400, 300))
	in := convtestWrite(t, pb.Bytes())
	full, _, err := convertFile(t, "png", "jpeg", in, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(len(full)) * 2 / 3
	out, ws, err := convertFile(t, "png", "jpeg", in, convert.Options{MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) > limit || len(out) == 0 {
		t.Fatalf("output %d bytes, max_bytes %d", len(out), limit)
	}
	if _, err := jpeg.Decode(bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range ws {
		if w.Code == convert.WarnQualityReduced && strings.Contains(w.Message, "encodes") {
			found = true
		}
	}
	if !found {
		t.Fatalf("warnings %v, want quality_reduced", ws)
	}
	var n int
	fmt.Sscanf(ws[len(ws)-1].Message[strings.Index(ws[len(ws)-1].Message, "bytes, ")+7:], "%d", &n)
	if n < 2 || n > MaxBytesEncodes {
		t.Fatalf("%d encodes reported (%s), want 2 to %d", n, ws[len(ws)-1].Message, MaxBytesEncodes)
	}
	// Fits at once: no warning, same bytes as without the bound.
	out, ws, err = convertFile(t, "png", "jpeg", in, convert.Options{MaxBytes: int64(len(full))})
	if err != nil || !bytes.Equal(out, full) || len(ws) != 0 {
		t.Fatalf("max_bytes = the output's size: %d bytes, warnings %v, %v", len(out), ws, err)
	}
	for _, tt := range []struct{ to string }{{"jpeg"}, {"webp"}, {"png"}} {
		_, _, err := convertFile(t, "png", tt.to, in, convert.Options{MaxBytes: 100})
		if got := convert.ErrorReason(err); got != convert.ReasonOutputTooLarge {
			t.Errorf("%s under 100 bytes: reason %q, err %v", tt.to, got, err)
		}
	}
}

func convtestWrite(t *testing.T, b []byte) string {
	return writeFile(t, t.TempDir(), "in", b)
}

// withICC returns a PNG of m carrying profile prof in an iCCP chunk.
func withICC(t *testing.T, m image.Image, prof []byte) []byte {
	var b bytes.Buffer
	png.Encode(&b, m)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(prof)
	zw.Close()
	chunk := appendPNGChunk(nil, "iCCP", append([]byte("P3\x00\x00"), z.Bytes()...))
	data := b.Bytes()
	return append(append(append([]byte(nil), data[:33]...), chunk...), data[33:]...)
}

// lab converts 8-bit sRGB to CIE L*a*b* (D65).
func lab(c color.NRGBA) [3]float64 {
	lin := func(v uint8) float64 { return icc.SRGBDecode(float64(v) / 255) }
	r, g, b := lin(c.R), lin(c.G), lin(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

func deltaE(a, b color.NRGBA) float64 {
	p, q := lab(a), lab(b)
	return math.Sqrt((p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1]) + (p[2]-q[2])*(p[2]-q[2]))
}

// TestICC_DisplayP3: patches of a Display P3 PNG and JPEG land within ΔE 3 of what vips
// icc_transform gives for sRGB; with strip_metadata false the profile is carried instead and
// the pixels are left alone.
func TestICC_DisplayP3(t *testing.T) {
	vips := needTool(t, "vips")
	exiftool := needTool(t, "exiftool")
	dir := t.TempDir()
	patches := []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {200, 120, 40, 255}, {128, 128, 128, 255}, {30, 60, 200, 255}}
	m := image.NewNRGBA(image.Rect(0, 0, 16*len(patches), 16))
	for i, c := range patches {
		for y := range 16 {
			for x := range 16 {
				m.SetNRGBA(16*i+x, y, c)
			}
		}
	}
	prof := icc.Encode(icc.DisplayP3())
	pngIn := writeFile(t, dir, "p3.png", withICC(t, m, prof))
	want := filepath.Join(dir, "want.png")
	run(t, vips, "icc_transform", pngIn, want, "srgb", "--embedded")
	wantImg := readImage(t, want)

	out, ws, err := convertFile(t, "png", "png", pngIn, convert.Options{Width: m.Bounds().Dx()})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Code == convert.WarnColorProfileDropped {
			t.Errorf("warned %v for a profile it converted", w)
		}
	}
	got, _ := png.Decode(bytes.NewReader(out))
	for i := range patches {
		g, w := nrgbaAt(got, 16*i+8, 8), nrgbaAt(wantImg, 16*i+8, 8)
		if d := deltaE(g, w); d > 3 {
			t.Errorf("patch %v: got %v, vips %v, ΔE %.2f", patches[i], g, w, d)
		}
	}
	red := nrgbaAt(got, 8, 8)
	if red.R != 255 || red.G > 10 {
		t.Errorf("P3 red in sRGB: %v", red)
	}

	// Carried when kept: the pixels as they are, the profile in the PNG and in a JPEG.
	keep := false
	for _, to := range []string{"png", "jpeg", "webp"} {
		o := convert.Options{StripMetadata: &keep}
		if to == "webp" {
			lossless := true // lossy WebP's chroma alone moves a saturated patch past ΔE 3
			o.Lossless = &lossless
		}
		out, ws, err = convertFile(t, "png", to, pngIn, o)
		if err != nil {
			t.Fatal(err)
		}
		p := writeFile(t, dir, "kept."+to, out)
		if desc := run(t, exiftool, "-s3", "-ProfileDescription", p); desc != "Display P3\n" {
			t.Errorf("%s: profile carried: %q, want Display P3", to, desc)
		}
		kept, _ := decodeOutput(t, to, out)
		if c := nrgbaAt(kept, 16*5+8, 8); deltaE(c, patches[5]) > 3 {
			t.Errorf("%s: kept pixels changed: %v", to, c)
		}
		if len(ws) != 0 {
			t.Errorf("%s: warnings %v", to, ws)
		}
	}

	// A P3 JPEG (its profile in APP2) converts too.
	jpegIn := filepath.Join(dir, "kept.jpeg")
	wantJ := filepath.Join(dir, "want-jpeg.png")
	run(t, vips, "icc_transform", jpegIn, wantJ, "srgb", "--embedded")
	out, _, err = convertFile(t, "jpeg", "png", jpegIn, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = png.Decode(bytes.NewReader(out))
	wantJImg := readImage(t, wantJ)
	for i := range patches {
		g, w := nrgbaAt(got, 16*i+8, 8), nrgbaAt(wantJImg, 16*i+8, 8)
		if d := deltaE(g, w); d > 3 {
			t.Errorf("JPEG patch %v: got %v, vips %v, ΔE %.2f", patches[i], g, w, d)
		}
	}
}

// TestKeepMetadata: strip_metadata false carries EXIF into JPEG, PNG and WebP with the orientation
// reset to 1 once the pixels were turned; by default nothing is carried.
func TestKeepMetadata(t *testing.T) {
	exiftool := needTool(t, "exiftool")
	dir := t.TempDir()
	var jb bytes.Buffer
	jpeg.Encode(&jb, asymmetric(120, 80), nil)
	in := writeFile(t, dir, "in.jpg", jb.Bytes())
	run(t, exiftool, "-q", "-overwrite_original", "-Orientation=6", "-n", "-Artist=convsvc test", in)
	keep := false
	for _, to := range []string{"jpeg", "png", "webp"} {
		out, _, err := convertFile(t, "jpeg", to, in, convert.Options{StripMetadata: &keep, Width: 40})
		if err != nil {
			t.Fatal(err)
		}
		p := writeFile(t, dir, "out."+to, out)
		got := run(t, exiftool, "-s3", "-n", "-Orientation", "-Artist", p)
		if got != "1\nconvsvc test\n" {
			t.Errorf("%s: exiftool says %q, want orientation 1 and the artist", to, got)
		}
		img, _ := decodeOutput(t, to, out)
		if s := img.Bounds().Size(); s != image.Pt(40, 60) {
			t.Errorf("%s: %v, want 40x60 upright", to, s)
		}
		if m := readImageMeta(io.NewSectionReader(bytes.NewReader(out), 0, int64(len(out))), CodecByID(to)); exif.OrientationOf(m.exif) != 1 {
			t.Errorf("%s: orientation %d", to, exif.OrientationOf(m.exif))
		}
	}
	out, _, err := convertFile(t, "jpeg", "jpeg", in, convert.Options{Width: 40})
	if err != nil {
		t.Fatal(err)
	}
	if m := readImageMeta(io.NewSectionReader(bytes.NewReader(out), 0, int64(len(out))), CodecByID("jpeg")); m.exif != nil {
		t.Errorf("default: EXIF carried")
	}
}
