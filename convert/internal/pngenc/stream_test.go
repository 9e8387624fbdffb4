package pngenc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// streamBytes encodes m through a StreamEncoder, strip rows at a time.
func streamBytes(t *testing.T, m image.Image, gray bool, strip int, o *Options) []byte {
	t.Helper()
	b := m.Bounds()
	var buf bytes.Buffer
	e, err := NewStreamEncoder(context.Background(), &buf, b.Dx(), b.Dy(), gray, o)
	if err != nil {
		t.Fatal(err)
	}
	for y := b.Min.Y; y < b.Max.Y; y += strip {
		r := image.Rect(b.Min.X, y, b.Max.X, min(y+strip, b.Max.Y))
		if err := e.WriteRows(m.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The streamed PNG is byte for byte Encode's, for photos and graphics (whose bands take the
// other filter and deflater), RGB and gray, strips that do and do not line up with the bands,
// and non-default options.
func TestStreamEncoder_SameBytesAsEncode(t *testing.T) {
	photo := testimg.Photo(701, 389)
	graphic := image.NewRGBA(image.Rect(0, 0, 640, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 640; x++ {
			graphic.Set(x, y, color.RGBA{uint8(x / 64 * 20), uint8(y / 30 * 25), 90, 255})
		}
	}
	gray := image.NewGray(photo.Bounds())
	for y := 0; y < 389; y++ {
		for x := 0; x < 701; x++ {
			gray.Set(x, y, photo.At(x, y))
		}
	}
	cases := map[string]struct {
		m    image.Image
		gray bool
	}{"photo": {photo, false}, "graphic": {graphic, false}, "gray": {gray, true}}
	for name, c := range cases {
		for _, o := range []*Options{nil, {Workers: 3, BandRows: 7, Level: 5}, {Filter: FilterPaeth, Compressor: Stdlib}} {
			var want bytes.Buffer
			if err := Encode(context.Background(), &want, c.m, o); err != nil {
				t.Fatal(err)
			}
			for _, strip := range []int{1, 16, 50, 10000} {
				got := streamBytes(t, c.m, c.gray, strip, o)
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("%s, options %+v, %d-row strips: %d bytes differ from Encode's %d", name, o, strip, len(got), want.Len())
				}
			}
		}
	}
}

// A cancelled context stops the encoder: WriteRows or Close returns the context's error, and
// nothing after the header is ended as a PNG.
func TestStreamEncoder_Cancel(t *testing.T) {
	m := testimg.Photo(500, 400)
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	e, err := NewStreamEncoder(ctx, &buf, 500, 400, false, &Options{BandRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(m.SubImage(image.Rect(0, 0, 500, 100))); err != nil {
		t.Fatal(err)
	}
	cancel()
	werr := e.WriteRows(m.SubImage(image.Rect(0, 100, 500, 400)))
	cerr := e.Close()
	if !errors.Is(cerr, context.Canceled) || (werr != nil && !errors.Is(werr, context.Canceled)) {
		t.Fatalf("WriteRows %v, Close %v: want context.Canceled", werr, cerr)
	}
	if bytes.Contains(buf.Bytes(), []byte("IEND")) {
		t.Error("a cancelled PNG was ended with IEND")
	}
}

// Close reports missing rows instead of ending a short PNG.
func TestStreamEncoder_MissingRows(t *testing.T) {
	var buf bytes.Buffer
	e, err := NewStreamEncoder(context.Background(), &buf, 10, 10, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(image.NewGray(image.Rect(0, 0, 10, 4))); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after 4 of 10 rows: no error")
	}
}
