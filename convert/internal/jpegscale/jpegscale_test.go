package jpegscale

import (
	"bytes"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// samples are image/jpeg's own test files: 4:4:4, 4:2:2, 4:4:0, 4:2:0, 4:1:1, 4:1:0, gray,
// CMYK, RGB, progressive (with separate DC scans), restart markers and a truncated file.
func samples(t testing.TB) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob("testdata/*.jpeg")
	if err != nil || len(names) < 10 {
		t.Fatalf("testdata: %v (%d files)", err, len(names))
	}
	m := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(n)] = b
	}
	return m
}

// photoJPEG encodes testimg.Photo with image/jpeg (4:2:0, quality q).
func photoJPEG(t testing.TB, w, h, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, testimg.Photo(w, h), &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecode_SameAsImageJPEG(t *testing.T) {
	for name, data := range samples(t) {
		want, werr := jpeg.Decode(bytes.NewReader(data))
		got, gerr := Decode(bytes.NewReader(data))
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: error %v, image/jpeg %v", name, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: image differs from image/jpeg's", name)
		}
		wc, _ := jpeg.DecodeConfig(bytes.NewReader(data))
		gc, _ := DecodeConfig(bytes.NewReader(data))
		if wc != gc {
			t.Errorf("%s: config %+v, image/jpeg %+v", name, gc, wc)
		}
	}
}

// plane is one channel of a decoded image: step bytes between pixels.
type plane struct {
	pix          []byte
	stride, step int
	w, h         int
}

func (p plane) at(x, y int) int { return int(p.pix[y*p.stride+x*p.step]) }

// planes returns an image's channels as stored, so that the scaled decode can be compared
// with the full one channel by channel (chroma at its own resolution).
//
// rgbChroma is how much an RGB file's G and B components are subsampled (both ways): those
// channels are compared at the resolution they are stored at.
func planes(t testing.TB, img image.Image, rgbChroma int) []plane {
	t.Helper()
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray:
		return []plane{{m.Pix, m.Stride, 1, b.Dx(), b.Dy()}}
	case *image.YCbCr:
		cw, ch := b.Dx(), b.Dy()
		switch m.SubsampleRatio {
		case image.YCbCrSubsampleRatio422:
			cw = (cw + 1) / 2
		case image.YCbCrSubsampleRatio420:
			cw, ch = (cw+1)/2, (ch+1)/2
		case image.YCbCrSubsampleRatio440:
			ch = (ch + 1) / 2
		case image.YCbCrSubsampleRatio411:
			cw = (cw + 3) / 4
		case image.YCbCrSubsampleRatio410:
			cw, ch = (cw+3)/4, (ch+1)/2
		}
		return []plane{{m.Y, m.YStride, 1, b.Dx(), b.Dy()}, {m.Cb, m.CStride, 1, cw, ch}, {m.Cr, m.CStride, 1, cw, ch}}
	case *image.RGBA:
		c := rgbChroma
		cw, ch := (b.Dx()+c-1)/c, (b.Dy()+c-1)/c
		return []plane{{m.Pix, m.Stride, 4, b.Dx(), b.Dy()}, {m.Pix[1:], c * m.Stride, 4 * c, cw, ch}, {m.Pix[2:], c * m.Stride, 4 * c, cw, ch}}
	case *image.CMYK:
		var ps []plane
		for c := 0; c < 4; c++ {
			ps = append(ps, plane{m.Pix[c:], m.Stride, 4, b.Dx(), b.Dy()})
		}
		return ps
	}
	t.Fatalf("unexpected image type %T", img)
	return nil
}

// boxStats compares the scaled decode with the s x s means of the full decode, plane by
// plane, over the boxes wholly inside the image in which no full-size sample is clipped (0 or
// 255): clipping before or after the mean is the one thing that may differ by more than
// rounding. It returns the largest difference and the PSNR over every whole box.
func boxStats(t testing.TB, full, scaled image.Image, s, rgbChroma int) (maxUnclipped int, psnr float64) {
	t.Helper()
	fp, sp := planes(t, full, rgbChroma), planes(t, scaled, rgbChroma)
	if len(fp) != len(sp) {
		t.Fatalf("%d planes, full decode has %d", len(sp), len(fp))
	}
	var se float64
	var n int
	for i := range fp {
		f, g := fp[i], sp[i]
		for y := 0; y < g.h && (y+1)*s <= f.h; y++ {
			for x := 0; x < g.w && (x+1)*s <= f.w; x++ {
				sum, clipped := 0, false
				for dy := 0; dy < s; dy++ {
					for dx := 0; dx < s; dx++ {
						v := f.at(x*s+dx, y*s+dy)
						sum += v
						clipped = clipped || v == 0 || v == 255
					}
				}
				mean := float64(sum) / float64(s*s)
				d := math.Abs(mean - float64(g.at(x, y)))
				se += d * d
				n++
				if !clipped && int(math.Round(d)) > maxUnclipped {
					maxUnclipped = int(math.Round(d))
				}
			}
		}
	}
	if n == 0 {
		return maxUnclipped, math.Inf(1)
	}
	mse := se / float64(n)
	if mse == 0 {
		return maxUnclipped, math.Inf(1)
	}
	return maxUnclipped, 10 * math.Log10(255*255/mse)
}

func TestDecodeScaled_BoxOfFullDecode(t *testing.T) {
	files := samples(t)
	files["photo-q85.jpeg"] = photoJPEG(t, 1000, 750, 85)
	files["photo-q95.jpeg"] = photoJPEG(t, 333, 251, 95)
	for name, data := range files {
		full, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			if _, gerr := DecodeScaled(bytes.NewReader(data), 4); gerr == nil || gerr.Error() != err.Error() {
				t.Errorf("%s: scaled decode error %v, image/jpeg %v", name, gerr, err)
			}
			continue
		}
		for _, s := range []int{2, 4, 8} {
			got, err := DecodeScaled(bytes.NewReader(data), s)
			if err != nil {
				t.Fatalf("%s at 1/%d: %v", name, s, err)
			}
			fb := full.Bounds()
			w, h := ScaledSize(fb.Dx(), fb.Dy(), s)
			if got.Bounds() != image.Rect(0, 0, w, h) {
				t.Fatalf("%s at 1/%d: bounds %v, want %dx%d", name, s, got.Bounds(), w, h)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(full) {
				t.Fatalf("%s at 1/%d: %T, full decode %T", name, s, got, full)
			}
			rgbChroma := 1
			if name == "video-001.rgb.jpeg" {
				rgbChroma = 2 // R at 2x2, G and B at 1x1
			}
			maxd, psnr := boxStats(t, full, got, s, rgbChroma)
			t.Logf("%s at 1/%d: %dx%d, max diff %d (unclipped boxes), PSNR %.1f dB vs box of full decode", name, s, w, h, maxd, psnr)
			// YCCK->CMYK converts colour after the mean: allow for the non-linear clip.
			limit := 2
			if _, ok := full.(*image.CMYK); ok {
				limit = 6
			}
			if maxd > limit {
				t.Errorf("%s at 1/%d: a box mean differs by %d (limit %d)", name, s, maxd, limit)
			}
			if psnr < 40 {
				t.Errorf("%s at 1/%d: PSNR %.1f dB vs box of full decode, want >= 40", name, s, psnr)
			}
		}
	}
}

func TestDecodeScaled_BadInput(t *testing.T) {
	data := photoJPEG(t, 64, 48, 80)
	for _, s := range []int{0, 3, 16, -1} {
		if _, err := DecodeScaled(bytes.NewReader(data), s); err == nil {
			t.Errorf("scale 1/%d: no error", s)
		}
	}
	for cut := 0; cut < len(data); cut += 7 {
		for _, s := range []int{1, 2, 4, 8} {
			_, err := DecodeScaled(bytes.NewReader(data[:cut]), s)
			_, werr := jpeg.Decode(bytes.NewReader(data[:cut]))
			if (err == nil) != (werr == nil) {
				t.Fatalf("cut at %d, 1/%d: error %v, image/jpeg %v", cut, s, err, werr)
			}
		}
	}
	// Flipped bytes: never a panic.
	for i := 2; i < len(data); i += 3 {
		c := bytes.Clone(data)
		c[i] ^= 0x5a
		for _, s := range []int{2, 8} {
			_, _ = DecodeScaled(bytes.NewReader(c), s)
		}
	}
}

func TestDecodeInfo(t *testing.T) {
	files := samples(t)
	for name, want := range map[string]Info{
		"video-001.q50.420.progressive.jpeg": {Progressive: true, Components: 3,
			// 150x103 in 16x16 MCUs: 10x7 MCUs, 4 luma + 2 chroma blocks each.
			CoefficientBytes: 10 * 7 * 6 * 256},
		"video-001.q50.444.jpeg":      {Components: 3},
		"video-005.gray.q50.2x2.jpeg": {Components: 1},
		"video-001.cmyk.jpeg":         {Components: 4},
	} {
		got, err := DecodeInfo(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, _ := jpeg.DecodeConfig(bytes.NewReader(files[name]))
		want.Config = cfg
		if got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}

// TestDecodeScaled_HugeHeader: a 65535x65535 frame header with no scan, or a scan cut short,
// is an error at every scale. (The image is allocated at the first scan, as image/jpeg does:
// callers check the header's size against their pixel limit first, as convert/image does.)
func TestDecodeScaled_HugeHeader(t *testing.T) {
	data := photoJPEG(t, 16, 16, 80)
	i := bytes.Index(data, []byte{0xff, 0xc0})
	if i < 0 {
		t.Fatal("no SOF0 in image/jpeg's output")
	}
	huge := bytes.Clone(data)
	huge[i+5], huge[i+6], huge[i+7], huge[i+8] = 0xff, 0xff, 0xff, 0xff
	info, err := DecodeInfo(bytes.NewReader(huge))
	if err != nil || info.Width != 65535 || info.Height != 65535 {
		t.Fatalf("DecodeInfo: %+v, %v", info, err)
	}
	sos := bytes.Index(huge, []byte{0xff, 0xda})
	for _, s := range []int{1, 2, 4, 8} {
		if _, err := DecodeScaled(bytes.NewReader(huge[:sos]), s); err == nil {
			t.Errorf("1/%d, no scan: no error", s)
		}
	}
	// At 1/8 the 8192x8192 image fits in memory; the scan ends long before it is filled.
	if _, err := DecodeScaled(bytes.NewReader(huge), 8); err == nil {
		t.Error("1/8, 65535x65535 header with a 16x16 scan: no error")
	}
}

// TestDecode_SameAsImageJPEG_Damaged: damaged copies of the samples (bytes overwritten in the
// entropy-coded data with values including 0xFF, stuffing zeros and RST markers, garbage
// inserted, the file cut short) decode to exactly image/jpeg's image and error, so the bit
// reader's refill of whole bytes ahead keeps image/jpeg's behaviour at markers and on errors.
func TestDecode_SameAsImageJPEG_Damaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 21))
	inputs := samples(t)
	inputs["photo"] = photoJPEG(t, 96, 64, 85)
	tries := 60
	if testing.Short() {
		tries = 15
	}
	for name, data := range inputs {
		sos := bytes.LastIndex(data, []byte{0xff, 0xda})
		if sos < 0 {
			continue
		}
		for i := range tries {
			b := damage(rng, data, sos, i)
			want, werr := jpeg.Decode(bytes.NewReader(b))
			got, gerr := Decode(bytes.NewReader(b))
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Errorf("%s #%d: error %v, image/jpeg %v", name, i, gerr, werr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s #%d: image differs from image/jpeg's", name, i)
			}
			if _, serr := DecodeScaled(bytes.NewReader(b), 4); (werr == nil) != (serr == nil) || (werr != nil && werr.Error() != serr.Error()) {
				t.Errorf("%s #%d: at 1/4 error %v, image/jpeg %v", name, i, serr, werr)
			}
		}
	}
}

// damage returns a copy of data with its scan data (after the SOS marker at sos) damaged in
// the i%3th way: a few bytes overwritten, two bytes of garbage or a marker inserted, or cut
// short.
func damage(rng *rand.Rand, data []byte, sos, i int) []byte {
	special := []byte{0xff, 0x00, 0xd0, 0xd1, 0xd7, 0xd9, 0xda, 0xc4}
	b := append([]byte(nil), data...)
	switch i % 3 {
	case 0: // overwrite a few bytes of scan data
		for range 1 + rng.IntN(3) {
			at := sos + 2 + rng.IntN(len(b)-sos-2)
			v := byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				v = special[rng.IntN(len(special))]
			}
			b[at] = v
		}
	case 1: // insert garbage or a marker
		at := sos + 2 + rng.IntN(len(b)-sos-2)
		ins := []byte{byte(rng.IntN(256)), byte(rng.IntN(256))}
		if rng.IntN(2) == 0 {
			ins = []byte{0xff, special[rng.IntN(len(special))]}
		}
		b = append(b[:at], append(ins, b[at:]...)...)
	case 2: // cut short
		b = b[:sos+2+rng.IntN(len(b)-sos-2)]
	}
	return b
}
