package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// ppmBytes writes a binary PPM (gray false) or PGM of testimg.Photo's pixels, with a comment
// in the header and the given maxval (samples scaled down to it).
func ppmBytes(w, h int, gray bool, maxval int) []byte {
	photo := testimg.Photo(w, h)
	var b bytes.Buffer
	magic := "P6"
	if gray {
		magic = "P5"
	}
	fmt.Fprintf(&b, "%s\n# made by a test\n%d %d\n%d\n", magic, w, h, maxval)
	for i := 0; i < w*h; i++ {
		px := photo.Pix[4*i : 4*i+3]
		if gray {
			px = px[1:2]
		}
		for _, v := range px {
			v := int(v) * maxval / 255
			if maxval > 255 {
				b.WriteByte(byte(v >> 8))
			}
			b.WriteByte(byte(v))
		}
	}
	return b.Bytes()
}

// runPPMPipeline converts a Netpbm file with ppmToJPEG after ReadHeader, as streamConvert does.
func runPPMPipeline(ctx context.Context, t testing.TB, data []byte, w io.Writer, opts convert.Options) (bool, error) {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	codec := CodecByID("ppm")
	cfg, err := ReadHeader(ctx, in, codec, convert.Limits{}.Normalized())
	if err != nil {
		return true, err
	}
	return ppmToJPEG(ctx, in, w, codec, cfg, opts)
}

// The streamed PGM/PPM -> JPEG writes the whole-image path's bytes exactly, at one strip, at
// many, and with a short last strip.
func TestStreamPPMToJPEG_SameBytesAsWholeImage(t *testing.T) {
	for _, sz := range []image.Point{{1, 1}, {300, 300}, {1000, 517}, {257, 2000}} {
		for _, gray := range []bool{false, true} {
			data := ppmBytes(sz.X, sz.Y, gray, 255)
			for _, q := range []int{0, 35} {
				t.Run(fmt.Sprintf("%dx%d/gray=%v/q%d", sz.X, sz.Y, gray, q), func(t *testing.T) {
					checkGoroutines(t)
					var out bytes.Buffer
					handled, err := runPPMPipeline(context.Background(), t, data, &out, convert.Options{Quality: q})
					if err != nil || !handled {
						t.Fatalf("handled %v, err %v", handled, err)
					}
					if want := wholeImage(t, "ppm", "jpeg", data, convert.Options{Quality: q}); !bytes.Equal(out.Bytes(), want) {
						t.Fatalf("streamed output (%d bytes) differs from the whole-image path's (%d bytes)", out.Len(), len(want))
					}
				})
			}
		}
	}
}

// Netpbm files other than binary 8-bit PGM/PPM are left to the whole-image path, with
// nothing written; and a conversion through the catalog of each still gives the
// whole-image path's bytes.
func TestStreamPPMToJPEG_OthersFallBack(t *testing.T) {
	plain := []byte("P3\n2 1\n255\n1 2 3 4 5 6\n")
	pam := []byte("P7\nWIDTH 2\nHEIGHT 1\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n\x01\x02\x03\x04\x05\x06")
	pbm := []byte("P4\n8 2\n\xaa\x55")
	c := testCatalog(convert.Limits{})
	for name, data := range map[string][]byte{
		"maxval-100": ppmBytes(40, 30, false, 100), "pgm-16bit": ppmBytes(40, 30, true, 1000),
		"plain": plain, "pam": pam, "pbm": pbm,
	} {
		var out bytes.Buffer
		handled, err := runPPMPipeline(context.Background(), t, data, &out, convert.Options{})
		if handled || err != nil || out.Len() != 0 {
			t.Errorf("%s: handled %v, err %v, %d bytes written; want it left to the whole-image path", name, handled, err, out.Len())
		}
		out.Reset()
		path := convtest.WriteTemp(t, data).Name()
		if _, err := c.Convert(context.Background(), "ppm", "jpeg", convert.Options{}, openFile(t, path), &out, t.TempDir()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := wholeImage(t, "ppm", "jpeg", data, convert.Options{}); !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: the catalog's output differs from the whole-image path's", name)
		}
	}
}

// A truncated raster is refused as truncated before anything is written, as the whole-image
// path refuses it.
func TestStreamPPMToJPEG_Truncated(t *testing.T) {
	data := ppmBytes(300, 200, false, 255)
	data = data[:len(data)-1]
	var out bytes.Buffer
	handled, err := runPPMPipeline(context.Background(), t, data, &out, convert.Options{})
	var ce *convert.Error
	if !handled || !errors.As(err, &ce) || !strings.Contains(ce.Message, "truncated") {
		t.Fatalf("handled %v, err %v; want a truncated-input error", handled, err)
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes written for a truncated input", out.Len())
	}
}

// The budget charges a streamed PPM -> JPEG its strips: under a budget too small for the
// whole-image estimate it streams, holding exactly the stream estimate, while a PPM with
// maxval 1000, which does not stream, is refused for the budget.
func TestStreamPPMToJPEG_MemoryBudget(t *testing.T) {
	skipBudgetTestInShort(t)
	atMostProcs(t, 2)
	const w, h = 3000, 2000
	ppm, jpg := CodecByID("ppm"), CodecByID("jpeg")
	whole := memoryEstimate(ppm, jpg, 1, w*h, w*h, false, false)
	stream := BaseConversionMemory + streamJPEGCost(image.Rect(0, 0, w, h), false, 4)
	if stream*2 > whole {
		t.Fatalf("stream estimate %d MiB is not well under the whole-image %d MiB", stream>>20, whole>>20)
	}
	c := testCatalog(convert.Limits{MaxConversionMemory: (stream + whole) / 2})
	src := convtest.WriteTemp(t, ppmBytes(w, h, false, 255)).Name()

	if got := budgetWhileWriting(t, c, "ppm", src, "jpeg", convert.Options{}); got != stream {
		t.Errorf("budget in use %d while streaming, want the stream estimate %d", got, stream)
	}

	deep := convtest.WriteTemp(t, ppmBytes(w, h, false, 1000)).Name()
	_, err := c.Convert(context.Background(), "ppm", "jpeg", convert.Options{}, openFile(t, deep), io.Discard, t.TempDir())
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "conversion memory budget") {
		t.Errorf("maxval 1000: err = %v, want the budget exceeded", err)
	}
}

// FuzzPPMStripDecode reads any input a strip at a time and compares every row with
// decodeNetpbm's whole image: the same pixels, or both fail.
func FuzzPPMStripDecode(f *testing.F) {
	f.Add(ppmBytes(7, 5, false, 255))
	f.Add(ppmBytes(9, 4, true, 255))
	f.Add([]byte("P6 2 2 255\n\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"))
	f.Add([]byte("P5\n#c\n3 1\n255\n\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		h, err := readPNMHeader(in)
		if err != nil || int64(h.width)*int64(h.height) > 1<<16 {
			return
		}
		want, wantErr := decodeNetpbm(context.Background(), newInputReader(context.Background(), in), image.Config{})
		d, ok, err := newPPMStripDecoder(newInputReader(context.Background(), in))
		if !ok || err != nil {
			if ok || (err == nil) != ((h.format != '5' && h.format != '6') || h.maxval != 255) {
				t.Fatalf("ok %v, err %v for format P%c maxval %d", ok, err, h.format, h.maxval)
			}
			if err != nil && wantErr == nil {
				t.Fatalf("strip decoder refused %v, decodeNetpbm accepted", err)
			}
			return
		}
		b := d.Bounds()
		buf := make([]byte, d.BytesPerPixel()*b.Dx()*3)
		for y := 0; y < b.Dy(); y += 3 {
			r := image.Rect(0, y, b.Dx(), min(y+3, b.Dy()))
			m := d.StripImage(buf, r)
			if err := d.ReadRows(m); err != nil {
				if wantErr == nil {
					t.Fatalf("rows %v: %v, decodeNetpbm accepted", r, err)
				}
				return
			}
			if wantErr != nil {
				continue
			}
			for yy := r.Min.Y; yy < r.Max.Y; yy++ {
				for x := 0; x < b.Dx(); x++ {
					if g, w := m.At(x, yy), want.At(x, yy); g != w {
						t.Fatalf("pixel %d,%d: %v, decodeNetpbm %v", x, yy, g, w)
					}
				}
			}
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
		if wantErr != nil {
			t.Fatalf("strip decoder read every row, decodeNetpbm: %v", wantErr)
		}
	})
}
