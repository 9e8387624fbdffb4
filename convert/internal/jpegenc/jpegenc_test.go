package jpegenc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/jpegdct"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// same fails t unless Encode writes exactly jpeg.Encode's bytes for m and o.
func same(t *testing.T, name string, m image.Image, o *jpeg.Options) {
	t.Helper()
	var want, got bytes.Buffer
	panicked, wantErr := stdEncode(&want, m, o)
	gotErr := Encode(&got, m, o)
	if panicked {
		// image/jpeg panics on some malformed images (NewYCbCr with a negative origin can
		// make planes that do not cover the bounds); jpegenc must refuse them instead.
		if !errors.Is(gotErr, ErrBadImage) {
			t.Fatalf("%s: image/jpeg panicked (%v), jpegenc returned %v, want ErrBadImage", name, wantErr, gotErr)
		}
		return
	}
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%s: errors differ: image/jpeg %v, jpegenc %v", name, wantErr, gotErr)
	}
	if wantErr == nil && want.Len() < 100 && !m.Bounds().Empty() {
		t.Fatalf("%s: image/jpeg wrote only %d bytes", name, want.Len())
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		i := 0
		for i < min(got.Len(), want.Len()) && got.Bytes()[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("%s: output differs from image/jpeg at byte %d (lengths %d, %d)", name, i, got.Len(), want.Len())
	}
}

// stdEncode is jpeg.Encode, reporting a panic as an error.
func stdEncode(w io.Writer, m image.Image, o *jpeg.Options) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("panic: %v", r)
		}
	}()
	return false, jpeg.Encode(w, m, o)
}

// images returns one image of every type image/jpeg handles differently (and some it does
// not), w x h, with origin (ox, oy), filled from rng.
func images(rng *rand.Rand, ox, oy, w, h int) map[string]image.Image {
	r := image.Rect(ox, oy, ox+w, oy+h)
	fill := func(p []byte) {
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
	}
	rgba := image.NewRGBA(r)
	fill(rgba.Pix)
	nrgba := image.NewNRGBA(r)
	fill(nrgba.Pix)
	opaque := image.NewNRGBA(r)
	fill(opaque.Pix)
	for i := 3; i < len(opaque.Pix); i += 4 {
		opaque.Pix[i] = 0xff
	}
	gray := image.NewGray(r)
	fill(gray.Pix)
	pal := image.NewPaletted(r, palette.Plan9)
	fill(pal.Pix)
	small := image.NewPaletted(r, color.Palette{color.Black, color.White, color.RGBA{200, 10, 30, 255}, color.NRGBA{1, 2, 3, 4}})
	for i := range small.Pix {
		small.Pix[i] = byte(rng.IntN(4))
	}
	rgba64 := image.NewRGBA64(r)
	fill(rgba64.Pix)
	nrgba64 := image.NewNRGBA64(r)
	fill(nrgba64.Pix)
	cmyk := image.NewCMYK(r)
	fill(cmyk.Pix)
	m := map[string]image.Image{
		"RGBA": rgba, "NRGBA": nrgba, "NRGBA-opaque": opaque, "Gray": gray, "Paletted": pal,
		"Paletted-4": small, "RGBA64": rgba64, "NRGBA64": nrgba64, "CMYK": cmyk,
	}
	for _, ss := range []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	} {
		y := image.NewYCbCr(r, ss)
		fill(y.Y)
		fill(y.Cb)
		fill(y.Cr)
		m["YCbCr-"+ss.String()] = y
	}
	return m
}

func TestEncode_SmallSizesAllTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for h := 1; h <= 40; h++ {
		for w := 1; w <= 40; w++ {
			if h > 3 && w > 3 && (w*h)%7 != 0 && w != 40 && h != 40 && w != 17 {
				continue // keep the run short: every row and column count still appears
			}
			ox, oy := rng.IntN(7)-3, rng.IntN(7)-3
			for name, m := range images(rng, ox, oy, w, h) {
				q := 1 + rng.IntN(100)
				same(t, fmt.Sprintf("%s %dx%d at (%d,%d) q%d", name, w, h, ox, oy, q), m, &jpeg.Options{Quality: q})
			}
		}
	}
}

func TestEncode_EveryQuality(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ims := images(rng, 0, 0, 37, 29)
	photo := testimg.Photo(61, 45)
	for q := -2; q <= 102; q++ {
		o := &jpeg.Options{Quality: q}
		same(t, fmt.Sprintf("photo q%d", q), photo, o)
		same(t, fmt.Sprintf("RGBA q%d", q), ims["RGBA"], o)
		same(t, fmt.Sprintf("Gray q%d", q), ims["Gray"], o)
	}
	for name, m := range ims {
		same(t, name+" nil options", m, nil)
	}
}

// TestEncode_SubImages encodes sub-images with every alignment relative to the MCU grid.
func TestEncode_SubImages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for name, m := range images(rng, -5, 3, 50, 47) {
		si, ok := m.(interface {
			SubImage(image.Rectangle) image.Image
		})
		if !ok {
			t.Fatalf("%s has no SubImage", name)
		}
		for i := range 20 {
			x0, y0 := -5+rng.IntN(20), 3+rng.IntN(20)
			r := image.Rect(x0, y0, x0+1+rng.IntN(30), y0+1+rng.IntN(27))
			same(t, fmt.Sprintf("%s sub %d %v", name, i, r), si.SubImage(r), &jpeg.Options{Quality: 1 + rng.IntN(100)})
		}
	}
}

func TestEncode_Photo1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1000x1000 images in -short")
	}
	photo := testimg.Photo(1000, 1000)
	rgba := image.NewRGBA(photo.Rect)
	copy(rgba.Pix, photo.Pix)
	gray := image.NewGray(photo.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	for _, q := range []int{1, 50, 85, 100} {
		o := &jpeg.Options{Quality: q}
		same(t, fmt.Sprintf("RGBA q%d", q), rgba, o)
		same(t, fmt.Sprintf("Gray q%d", q), gray, o)
	}
	same(t, "NRGBA alpha q85", testimg.PhotoAlpha(1000, 1000), &jpeg.Options{Quality: 85})
	same(t, "NRGBA opaque q75", photo, nil)
	same(t, "NRGBA64 q85", testimg.Photo16(1000, 1000), &jpeg.Options{Quality: 85})
}

// TestEncode_Extremes encodes images that push the FDCT and the DC differences to their
// limits: alternating black and white blocks, checkerboards and flat extremes at quality
// 100 (divisor 8), where quantized values are largest.
func TestEncode_Extremes(t *testing.T) {
	r := image.Rect(0, 0, 64, 64)
	pats := map[string]func(x, y int) uint8{
		"blocks":  func(x, y int) uint8 { return uint8(255 * ((x/8 + y/8) & 1)) },
		"checker": func(x, y int) uint8 { return uint8(255 * ((x + y) & 1)) },
		"stripes": func(x, y int) uint8 { return uint8(255 * (x & 1)) },
		"white":   func(x, y int) uint8 { return 255 },
		"black":   func(x, y int) uint8 { return 0 },
		"halves":  func(x, y int) uint8 { return uint8(255 * (x % 8 / 4)) },
	}
	for name, f := range pats {
		g := image.NewGray(r)
		c := image.NewRGBA(r)
		for y := range 64 {
			for x := range 64 {
				v := f(x, y)
				g.SetGray(x, y, color.Gray{v})
				c.SetRGBA(x, y, color.RGBA{v, 255 - v, v, 255})
			}
		}
		for _, q := range []int{1, 50, 100} {
			same(t, fmt.Sprintf("%s gray q%d", name, q), g, &jpeg.Options{Quality: q})
			same(t, fmt.Sprintf("%s rgba q%d", name, q), c, &jpeg.Options{Quality: q})
		}
	}
}

func TestEncode_Empty(t *testing.T) {
	for _, m := range []image.Image{image.NewRGBA(image.Rect(0, 0, 0, 0)), image.NewGray(image.Rect(3, 3, 3, 9)), image.NewNRGBA(image.Rect(0, 0, 5, 0))} {
		same(t, fmt.Sprintf("%T %v", m, m.Bounds()), m, nil)
	}
}

// TestEncode_Writers checks that a *bufio.Writer is used and flushed as image/jpeg does, and
// that a failing writer's error comes back wrapped.
func TestEncode_Writers(t *testing.T) {
	m := testimg.Photo(300, 200)
	var want, got bytes.Buffer
	if err := jpeg.Encode(&want, m, nil); err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(&got)
	if err := Encode(bw, m, nil); err != nil {
		t.Fatal(err)
	}
	if bw.Buffered() != 0 || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("through bufio: %d buffered, equal %v", bw.Buffered(), bytes.Equal(got.Bytes(), want.Bytes()))
	}
	boom := errors.New("boom")
	for _, n := range []int{0, 10, 20000} {
		fw := &failWriter{n: n, err: boom}
		err := Encode(fw, testimg.Photo(400, 400), nil)
		if !errors.Is(err, boom) {
			t.Fatalf("failing after %d bytes: got %v, want %v wrapped", n, err, boom)
		}
	}
	if err := Encode(shortWriter{}, m, nil); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short writer: got %v", err)
	}
}

func TestEncode_Refused(t *testing.T) {
	big := &image.Gray{Rect: image.Rect(0, 0, 1<<16, 1)}
	if err := Encode(&bytes.Buffer{}, big, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("65536 wide: got %v", err)
	}
	if jpeg.Encode(&bytes.Buffer{}, big, nil) == nil {
		t.Fatal("image/jpeg accepts 65536 wide: update ErrTooLarge")
	}
	bad := map[string]image.Image{
		"short RGBA":         &image.RGBA{Pix: make([]byte, 10), Stride: 40, Rect: image.Rect(0, 0, 10, 10)},
		"negative stride":    &image.NRGBA{Pix: make([]byte, 400), Stride: -40, Rect: image.Rect(0, 0, 10, 10)},
		"short NRGBA64":      &image.NRGBA64{Pix: make([]byte, 799), Stride: 80, Rect: image.Rect(0, 0, 10, 10)},
		"short Gray":         &image.Gray{Pix: make([]byte, 99), Stride: 10, Rect: image.Rect(0, 0, 10, 10)},
		"empty palette":      &image.Paletted{Pix: make([]byte, 100), Stride: 10, Rect: image.Rect(0, 0, 10, 10)},
		"index past palette": &image.Paletted{Pix: append(make([]byte, 99), 2), Stride: 10, Rect: image.Rect(0, 0, 10, 10), Palette: color.Palette{color.Black, color.White}},
		"nil colour":         &image.Paletted{Pix: append(make([]byte, 99), 1), Stride: 10, Rect: image.Rect(0, 0, 10, 10), Palette: color.Palette{color.Black, nil}},
		"short YCbCr":        &image.YCbCr{Y: make([]byte, 100), Cb: make([]byte, 10), Cr: make([]byte, 25), YStride: 10, CStride: 5, SubsampleRatio: image.YCbCrSubsampleRatio420, Rect: image.Rect(0, 0, 10, 10)},
	}
	for name, m := range bad {
		if err := Encode(&bytes.Buffer{}, m, nil); !errors.Is(err, ErrBadImage) {
			t.Errorf("%s: got %v, want ErrBadImage", name, err)
		}
	}
}

// TestQuantizeExhaustive checks quantize against image/jpeg's div for every divisor the
// quantization tables can give (8 times 1..255) and every dividend within +-65535, eight
// times the FDCT's range (TestFDCTRange).
func TestQuantizeExhaustive(t *testing.T) {
	for q := int32(1); q <= 255; q++ {
		d := 8 * q
		half, recip := divisor(uint32(d))
		for a := int32(-65535); a <= 65535; a++ {
			if got, want := quantize(a, half, recip), div(a, d); got != want {
				t.Fatalf("quantize(%d, /%d) = %d, want %d", a, d, got, want)
			}
		}
	}
}

// TestFDCTRange drives every FDCT output to its extremes (each output's own sign pattern of
// 0 and 255 inputs, plus random blocks) and checks they stay within +-8192, the range
// quantize and the Huffman symbol arithmetic rely on.
func TestFDCTRange(t *testing.T) {
	// The FDCT is linear up to rounding: measure each output's response to each input.
	var resp [blockSize][blockSize]int32
	for i := range blockSize {
		var b block
		for k := range b {
			b[k] = 128
		}
		b[i] = 255
		fdct(&b)
		for k := range b {
			resp[k][i] = b[k]
		}
	}
	check := func(b *block) {
		fdct(b)
		for k, v := range b {
			if v < -8192 || v > 8192 {
				t.Fatalf("FDCT output %d = %d, outside +-8192", k, v)
			}
		}
	}
	for k := range blockSize {
		for _, sign := range []int32{1, -1} {
			var b block
			for i := range b {
				if sign*resp[k][i] > 0 {
					b[i] = 255
				}
			}
			check(&b)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		var b block
		for i := range b {
			b[i] = int32(rng.IntN(2) * 255)
			if rng.IntN(4) == 0 {
				b[i] = rng.Int32N(256)
			}
		}
		check(&b)
	}
}

// TestYCCExhaustive checks ycc against color.RGBToYCbCr for every colour.
func TestYCCExhaustive(t *testing.T) {
	for c := range 1 << 24 {
		r, g, b := uint8(c>>16), uint8(c>>8), uint8(c)
		y, cb, cr := ycc(int32(r), int32(g), int32(b))
		wy, wcb, wcr := color.RGBToYCbCr(r, g, b)
		if y != int32(wy) || cb != int32(wcb) || cr != int32(wcr) {
			t.Fatalf("ycc(%d,%d,%d) = %d,%d,%d, want %d,%d,%d", r, g, b, y, cb, cr, wy, wcb, wcr)
		}
	}
}

// failWriter fails every write once n bytes have been written.
type failWriter struct {
	n   int
	err error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, w.err
	}
	w.n -= len(p)
	return len(p), nil
}

// shortWriter accepts one byte less than asked, without an error.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return max(len(p)-1, 0), nil }

// TestRGBARowsExhaustive runs every colour, as the first pixel of a pair in one row and as
// the second in the other (RGBA and NRGBA, every pair of rows), through rgbaRows and checks
// the luminances and the 2x2 chroma against color.RGBToYCbCr and image/jpeg's rounding: the
// SSE2 version on amd64 (rgbaRows), and outside -short the Go one (rgbaRowsGo) too.
func TestRGBARowsExhaustive(t *testing.T) {
	impls := []func(p0, p1 *[64]byte, u *mcu, j int, nrgba bool){rgbaRows}
	if !testing.Short() {
		impls = append(impls, rgbaRowsGo)
	}
	for _, rows := range impls {
		rgbaRowsExhaustive(t, rows)
	}
}

func rgbaRowsExhaustive(t *testing.T, rows func(p0, p1 *[64]byte, u *mcu, j int, nrgba bool)) {
	var p [2][64]byte
	var u mcu
	want := func(c int) (y, cb, cr int32) {
		wy, wcb, wcr := color.RGBToYCbCr(uint8(c>>16), uint8(c>>8), uint8(c))
		return int32(wy), int32(wcb), int32(wcr)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for base := 0; base < 1<<24; base += 16 {
		var cols [2][16]int
		for i := range 16 {
			cols[0][i] = base + i
			cols[1][i] = base + i ^ 1
			if i&1 == 1 && base&32 != 0 {
				cols[0][i] = rng.IntN(1 << 24) // vary the partner of each colour too
			}
			for r := range 2 {
				c := cols[r][i]
				p[r][4*i], p[r][4*i+1], p[r][4*i+2], p[r][4*i+3] = byte(c>>16), byte(c>>8), byte(c), 0xff
			}
		}
		j := base >> 4 & 14
		nrgba := base&64 != 0
		rows(&p[0], &p[1], &u, j, nrgba)
		for i := 0; i < 16; i += 2 {
			var cbs, crs int32
			for r := range 2 {
				y0, cb0, cr0 := want(cols[r][i])
				y1, cb1, cr1 := want(cols[r][i+1])
				cbs += cb0 + cb1
				crs += cr0 + cr1
				yo := ((j>>3)*2+i>>3)*blockSize + (j&7+r)*8 + i&7
				if u.y[yo] != y0 || u.y[yo+1] != y1 {
					t.Fatalf("row %d colours %06x, %06x: y %d %d, want %d %d", r, cols[r][i], cols[r][i+1], u.y[yo], u.y[yo+1], y0, y1)
				}
			}
			k := 8*(j>>1) + i>>1
			if wcb, wcr := (cbs+2)>>2, (crs+2)>>2; u.cb[k] != wcb || u.cr[k] != wcr {
				t.Fatalf("colours %06x %06x / %06x %06x: cb %d cr %d, want %d %d",
					cols[0][i], cols[0][i+1], cols[1][i], cols[1][i+1], u.cb[k], u.cr[k], wcb, wcr)
			}
		}
	}
}

// TestFDCTQuantize checks fdctQuantize (the generated Go, or AVX2) against fdct followed by
// image/jpeg's div in zig-zag order, for testBlock's blocks at every quality.
func TestFDCTQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var e encoder
	for quality := 1; quality <= 100; quality++ {
		e.setQuality(&jpeg.Options{Quality: quality})
		for n := range 200 {
			b := testBlock(rng, n)
			ref := b
			fdct(&ref)
			var zz [blockSize]int32
			nz := fdctQuantize(&b, &e.qt[n&1], &zz)
			for z := range blockSize {
				want := div(ref[jpegdct.Unzig[z]], 8*int32(e.quant[n&1][z]))
				if zz[z] != want || (nz>>z&1 == 1) != (want != 0) {
					t.Fatalf("quality %d block %d zig %d: got %d (mask %v), want %d", quality, n, z, zz[z], nz>>z&1, want)
				}
			}
		}
	}
}

// TestEncode_Concurrent encodes from several goroutines at once (the encoders come from a
// pool; run with -race).
func TestEncode_Concurrent(t *testing.T) {
	ims := []image.Image{testimg.Photo(123, 77), testimg.PhotoAlpha(64, 90)}
	var wants [][]byte
	for _, m := range ims {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, m, nil); err != nil {
			t.Fatal(err)
		}
		wants = append(wants, b.Bytes())
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 20 {
				k := (g + i) % len(ims)
				var b bytes.Buffer
				if err := Encode(&b, ims[k], nil); err != nil || !bytes.Equal(b.Bytes(), wants[k]) {
					errs <- fmt.Errorf("goroutine %d image %d: err %v, equal %v", g, k, err, bytes.Equal(b.Bytes(), wants[k]))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestGeneratedIsCurrent fails when fdctq.go or fdctq_amd64.s differs from what gen_fdctq.go
// writes.
func TestGeneratedIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "gen_fdctq.go", "-o", filepath.Join(dir, "fdctq.go"), "-asm", filepath.Join(dir, "fdctq_amd64.s"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_fdctq.go: %v\n%s", err, b)
	}
	for _, name := range []string{"fdctq.go", "fdctq_amd64.s"} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s is stale: run go generate ./convert/internal/jpegenc", name)
		}
	}
}
