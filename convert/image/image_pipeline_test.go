package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/jpegstrip"
	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// rawPNG builds a non-interlaced 8-bit PNG from unfiltered rows (filter type 0), with
// optional PLTE and tRNS chunks: layouts image/png's encoder never writes (gray+alpha,
// pixel indices past the palette).
func rawPNG(t testing.TB, w, h int, colorType byte, rows []byte, plte, trns []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out.Write(n[:])
		crc := crc32.NewIEEE()
		io.WriteString(crc, typ)
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		out.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, colorType
	chunk("IHDR", ihdr)
	if plte != nil {
		chunk("PLTE", plte)
	}
	if trns != nil {
		chunk("tRNS", trns)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	rowLen := len(rows) / h
	for y := range h {
		zw.Write([]byte{0})
		zw.Write(rows[y*rowLen : (y+1)*rowLen])
	}
	zw.Close()
	// Two IDAT chunks, so a file error can sit in either.
	idat := z.Bytes()
	chunk("IDAT", idat[:len(idat)/2])
	chunk("IDAT", idat[len(idat)/2:])
	chunk("IEND", nil)
	return out.Bytes()
}

func encodePNGBytes(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pipelineSamples are PNGs of every layout pngstream decodes, at sizes of one strip, a few
// strips, and not multiples of the MCU.
func pipelineSamples(t testing.TB) map[string][]byte {
	samples := map[string][]byte{}
	for _, sz := range []image.Point{{1, 1}, {17, 33}, {300, 200}, {640, 1000}} {
		w, h := sz.X, sz.Y
		photo := testimg.Photo(w, h)
		samples[fmt.Sprintf("rgb-%dx%d", w, h)] = encodePNGBytes(t, photo)
		samples[fmt.Sprintf("rgba-%dx%d", w, h)] = encodePNGBytes(t, testimg.PhotoAlpha(w, h))
		gray := image.NewGray(photo.Rect)
		for i := range gray.Pix {
			gray.Pix[i] = photo.Pix[4*i+1]
		}
		samples[fmt.Sprintf("gray-%dx%d", w, h)] = encodePNGBytes(t, gray)

		ga := make([]byte, 2*w*h)
		for i := range w * h {
			ga[2*i], ga[2*i+1] = photo.Pix[4*i], byte(i*7)
		}
		samples[fmt.Sprintf("grayalpha-%dx%d", w, h)] = rawPNG(t, w, h, 4, ga, nil, nil)

		// 6 palette entries, 3 with alpha; indices go up to 9, past the palette's end.
		plte := []byte{255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 200, 100, 50, 1, 2, 3}
		idx := make([]byte, w*h)
		for i := range idx {
			idx[i] = byte((i*31 + i/w) % 10)
		}
		samples[fmt.Sprintf("paletted-%dx%d", w, h)] = rawPNG(t, w, h, 3, idx, plte, []byte{0, 128, 255})
		// A tRNS longer than PLTE lengthens the palette (image/png allows it).
		samples[fmt.Sprintf("paletted-longtrns-%dx%d", w, h)] = rawPNG(t, w, h, 3, idx, plte[:6], []byte{0, 9, 99, 200})
	}
	return samples
}

// jpegBefore converts the way encodeJPEG did before the pipeline: decode everything, flatten,
// jpeg.Encode on one core.
func jpegBefore(t testing.TB, data []byte, quality int) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var src image.Image = img
	if _, ok := img.(*image.Gray); !ok {
		src = flattenWhite(To8Bit(img))
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, src, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// runPipeline runs pngToJPEG on data the way imageRun does.
func runPipeline(ctx context.Context, t testing.TB, data []byte, w io.Writer, opts convert.Options) (bool, error) {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID("png")
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	return pngToJPEG(ctx, in, w, codec, cfg, opts, nil)
}

// sameDecodedJPEG fails unless both JPEGs decode (image/jpeg) to the same pixels.
func sameDecodedJPEG(t testing.TB, got, want []byte) {
	t.Helper()
	g, err := jpeg.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("decoding the output: %v", err)
	}
	w, err := jpeg.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	switch wm := w.(type) {
	case *image.Gray:
		if gm, ok := g.(*image.Gray); !ok || gm.Rect != wm.Rect || !bytes.Equal(gm.Pix, wm.Pix) {
			t.Fatalf("output decodes to other pixels (%T, want gray)", g)
		}
	case *image.YCbCr:
		gm, ok := g.(*image.YCbCr)
		if !ok || gm.Rect != wm.Rect || !bytes.Equal(gm.Y, wm.Y) || !bytes.Equal(gm.Cb, wm.Cb) || !bytes.Equal(gm.Cr, wm.Cr) {
			t.Fatalf("output decodes to other pixels (%T)", g)
		}
	default:
		t.Fatalf("reference decoded as %T", w)
	}
}

// checkGoroutines fails the test if goroutines it started are still running shortly after.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(testtime.Scale(30 * time.Second))
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines still running:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

func TestPNGToJPEG_SameAsDecodeThenEncode(t *testing.T) {
	// Under -short (shortQualities) the default quality alone: -race -short ran the 96 cases
	// in 182 s at a load of 16, and every layout and size still runs.
	for name, data := range pipelineSamples(t) {
		for _, q := range shortQualities(0, 1, 60, 100) {
			t.Run(fmt.Sprintf("%s/q%d", name, q), func(t *testing.T) {
				checkGoroutines(t)
				var out bytes.Buffer
				handled, err := runPipeline(context.Background(), t, data, &out, convert.Options{Quality: q})
				if err != nil || !handled {
					t.Fatalf("handled %v, err %v", handled, err)
				}
				quality := q
				if q == 0 {
					quality = JPEGQuality
				}
				sameDecodedJPEG(t, out.Bytes(), jpegBefore(t, data, quality))
			})
		}
	}
}

// The catalog's png -> jpeg goes through the pipeline, and still resizes when asked to.
func TestPNGToJPEG_ThroughCatalog(t *testing.T) {
	c := testCatalog(convert.Limits{})
	data := encodePNGBytes(t, testimg.PhotoAlpha(400, 300))
	path := convtest.WriteTemp(t, data).Name()
	sameDecodedJPEG(t, convertImageOpts(t, c, "png", "jpeg", path, convert.Options{Quality: 90}), jpegBefore(t, data, 90))

	out := convertImageOpts(t, c, "png", "jpeg", path, convert.Options{Width: 100})
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(out))
	if err != nil || cfg.Width != 100 || cfg.Height != 75 {
		t.Fatalf("resized output: %+v, %v", cfg, err)
	}
}

// Layouts pngstream leaves to image/png are not handled, and the usual path converts them.
func TestPNGToJPEG_FallsBack(t *testing.T) {
	m := image.NewRGBA64(image.Rect(0, 0, 40, 30))
	for i := range m.Pix {
		m.Pix[i] = byte(i * 13)
	}
	data := encodePNGBytes(t, m)
	var out bytes.Buffer
	handled, err := runPipeline(context.Background(), t, data, &out, convert.Options{})
	if handled || err != nil || out.Len() != 0 {
		t.Fatalf("16-bit PNG: handled %v, err %v, %d bytes written", handled, err, out.Len())
	}
	c := testCatalog(convert.Limits{})
	got := convertImageBytes(t, c, "png", "jpeg", convtest.WriteTemp(t, data).Name())
	sameDecodedJPEG(t, got, jpegBefore(t, data, JPEGQuality))
}

// A broken PNG gives the error decoding it whole gives, wherever the damage is, and leaves
// no goroutine behind.
func TestPNGToJPEG_CorruptFiles(t *testing.T) {
	photo := testimg.Photo(500, 400)
	rgb := make([]byte, 0, 3*500*400)
	for i := 0; i < len(photo.Pix); i += 4 {
		rgb = append(rgb, photo.Pix[i:i+3]...)
	}
	good := rawPNG(t, 500, 400, 2, rgb, nil, nil) // two IDAT chunks
	idat1 := bytes.Index(good, []byte("IDAT"))
	idat2 := bytes.LastIndex(good, []byte("IDAT"))
	iend := bytes.Index(good, []byte("IEND"))
	len1 := int(binary.BigEndian.Uint32(good[idat1-4:]))
	len2 := int(binary.BigEndian.Uint32(good[idat2-4:]))
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x55
		return b
	}
	// refixCRC recomputes the CRC of the chunk whose type starts at typ, so the damage inside
	// reaches the inflater instead of the CRC check.
	refixCRC := func(b []byte, typ int) []byte {
		n := int(binary.BigEndian.Uint32(b[typ-4:]))
		binary.BigEndian.PutUint32(b[typ+4+n:], crc32.ChecksumIEEE(b[typ:typ+4+n]))
		return b
	}
	cases := map[string][]byte{
		"truncated early":       good[:idat1+200],
		"truncated mid-IDAT":    good[:idat2+len2/2],
		"truncated before IEND": good[:iend-4],
		"no IEND":               good[:iend+4],
		"bad IDAT CRC":          flip(idat1 + 4 + len1),
		"bad deflate data":      refixCRC(flip(idat1+4+len1/3), idat1),
		"bad zlib checksum":     refixCRC(flip(idat2+4+len2-1), idat2), // found after the last row
		"bad IEND CRC":          flip(iend + 4),
		"bad filter type":       badFilterPNG(t),
	}
	// Damage before the first IDAT, where pngstream's NewDecoder reads.
	pal := rawPNG(t, 30, 20, 3, make([]byte, 30*20), []byte{1, 2, 3, 4, 5, 6}, []byte{0, 9})
	plte := bytes.Index(pal, []byte("PLTE"))
	badPLTE := bytes.Clone(pal)
	badPLTE[plte+4+6] ^= 1 // its CRC
	cases["bad PLTE CRC"] = badPLTE
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
			codec := CodecByID("png")
			var wantErr error
			cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
			if err == nil {
				_, wantErr = DecodePixels(context.Background(), in, codec, cfg)
			}
			if wantErr == nil && err == nil {
				t.Fatal("image/png decodes this file")
			}
			_, gotErr := runPipeline(context.Background(), t, data, io.Discard, convert.Options{})
			if err != nil {
				wantErr = err
			}
			var ce *convert.Error
			if gotErr == nil || !errors.As(gotErr, &ce) || gotErr.Error() != wantErr.Error() {
				t.Fatalf("got %v, want %v", gotErr, wantErr)
			}
			t.Log(gotErr)
		})
	}
}

// badFilterPNG is a valid-looking PNG whose fifth row has filter type 7.
func badFilterPNG(t testing.TB) []byte {
	w, h := 64, 40
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	for y := range h {
		ft := byte(0)
		if y == 4 {
			ft = 7
		}
		zw.Write([]byte{ft})
		zw.Write(make([]byte, 3*w))
	}
	zw.Close()
	good := rawPNG(t, w, h, 2, make([]byte, 3*w*h), nil, nil)
	// Swap the image data: rebuild with the same header and the bad stream in one IDAT.
	var out bytes.Buffer
	out.Write(good[:8+25])
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(z.Len()))
	out.Write(n[:])
	body := append([]byte("IDAT"), z.Bytes()...)
	out.Write(body)
	binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(body))
	out.Write(n[:])
	out.Write(good[len(good)-12:])
	return out.Bytes()
}

// errWriter fails every write after the first n.
type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if w.n--; w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// cancelAtWrite cancels the conversion at its first write.
type cancelAtWrite struct{ cancel context.CancelFunc }

func (w cancelAtWrite) Write(p []byte) (int, error) { w.cancel(); return len(p), nil }

func TestPNGToJPEG_StopsCleanly(t *testing.T) {
	data := encodePNGBytes(t, testimg.Photo(800, 900))
	t.Run("cancelled before", func(t *testing.T) {
		checkGoroutines(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := runPipeline(ctx, t, data, io.Discard, convert.Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancelled while running", func(t *testing.T) {
		checkGoroutines(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		codec := CodecByID("png")
		cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pngToJPEG(ctx, in, cancelAtWrite{cancel}, codec, cfg, convert.Options{}, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("output fails", func(t *testing.T) {
		checkGoroutines(t)
		for n := range 3 {
			_, err := runPipeline(context.Background(), t, data, &errWriter{n: n}, convert.Options{})
			if err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("after %d writes: got %v", n, err)
			}
		}
	})
	t.Run("truncated and cancelled", func(t *testing.T) {
		checkGoroutines(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := runPipeline(ctx, t, data[:len(data)/2], io.Discard, convert.Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

// jpegSource on strips gives the pixels it gives on the whole image, for every layout
// to8bit and flattenWhite treat differently when the whole image is opaque or not.
func TestJPEGSource_StripsEqualWhole(t *testing.T) {
	half := testimg.PhotoAlpha(64, 64) // translucent on the left, opaque on the right
	opaqueRows := image.NewNRGBA(half.Rect)
	copy(opaqueRows.Pix, half.Pix)
	for y := 32; y < 64; y++ {
		for x := range 64 {
			opaqueRows.Pix[opaqueRows.PixOffset(x, y)+3] = 255
		}
	}
	pal := image.NewPaletted(half.Rect, color.Palette{color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 128}})
	for i := range pal.Pix {
		pal.Pix[i] = byte(i % 3) // index 2 is past the palette
	}
	for name, img := range map[string]image.Image{"nrgba": half, "opaque bottom": opaqueRows, "paletted": pal} {
		whole := jpegSource(img).(*image.RGBA)
		for y := 0; y < 64; y += 16 {
			r := image.Rect(0, y, 64, y+16)
			strip := jpegSource(img.(interface {
				SubImage(image.Rectangle) image.Image
			}).SubImage(r)).(*image.RGBA)
			for yy := r.Min.Y; yy < r.Max.Y; yy++ {
				a := whole.Pix[whole.PixOffset(0, yy):][:4*64]
				b := strip.Pix[strip.PixOffset(0, yy):][:4*64]
				if !bytes.Equal(a, b) {
					t.Fatalf("%s: row %d differs", name, yy)
				}
			}
		}
	}
}

// BenchmarkPNGToJPEG12MP compares, back to back in one process, the ways a 4000x3000
// photo-like PNG becomes a JPEG: "before" is what imageRun did before the pipeline
// (image/png then jpeg.Encode on one core), "decode-then-strips" decodes with image/png and
// encodes with jpegstrip (the fallback for layouts pngstream leaves alone), "pipeline" is
// pngToJPEG, which streams strips (its -benchmem B/op is the strips, not the image). Add -bench 'PNGToJPEG12MP/.*alpha' for the translucent variant.
func BenchmarkPNGToJPEG12MP(b *testing.B) {
	for _, variant := range []string{"rgb", "alpha"} {
		src := testimg.Photo(4000, 3000)
		if variant == "alpha" {
			src = testimg.PhotoAlpha(4000, 3000)
		}
		data := encodePNGBytes(b, src)
		codec := CodecByID("png")
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		cfg, err := ReadHeader(context.Background(), in, codec, convert.Limits{}.Normalized())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(variant+"/before", func(b *testing.B) {
			for b.Loop() {
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if err := jpeg.Encode(io.Discard, jpegSource(img), jpegOptions(convert.Options{})); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(variant+"/decode-then-strips", func(b *testing.B) {
			for b.Loop() {
				img, err := DecodePixels(context.Background(), in, codec, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := encodeJPEG(context.Background(), io.Discard, img, convert.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(variant+"/pipeline", func(b *testing.B) {
			for b.Loop() {
				if handled, err := pngToJPEG(context.Background(), in, io.Discard, codec, cfg, convert.Options{}, nil); !handled || err != nil {
					b.Fatal(handled, err)
				}
			}
		})
	}
}

// BenchmarkEncodeJPEGSize compares jpeg.Encode with jpegstrip.Encode on square photo-like
// images around jpegStripMinPixels.
func BenchmarkEncodeJPEGSize(b *testing.B) {
	for _, side := range []int{128, 256, 362, 512, 724, 1000} {
		img := jpegSource(testimg.Photo(side, side))
		opts := jpegOptions(convert.Options{})
		b.Run(fmt.Sprintf("%dx%d/jpeg.Encode", side, side), func(b *testing.B) {
			for b.Loop() {
				if err := jpeg.Encode(io.Discard, img, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dx%d/jpegstrip", side, side), func(b *testing.B) {
			for b.Loop() {
				if err := jpegstrip.Encode(context.Background(), io.Discard, img, opts, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
