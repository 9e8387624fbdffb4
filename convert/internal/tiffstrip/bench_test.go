package tiffstrip

import (
	"bytes"
	"compress/zlib"
	"context"
	"image"
	"image/draw"
	"io"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/convert/internal/tiffenc"
)

// openZlib is tiffstrip's deflate strip reader before convert/internal/inflate, and
// x/image/tiff's: compress/zlib under io.LimitReader.
func openZlib(r io.ReaderAt, off, n, limit int64) (io.ReadCloser, error) {
	z, err := zlib.NewReader(io.NewSectionReader(r, off, n))
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(z, limit), z}, nil
}

// benchTIFF is a 12 MP (4000x3000) photo-like RGB TIFF as convsvc writes it (tiffenc: 64-row
// deflate strips with the horizontal predictor), the file of docs/benchmarks.md's TIFF -> JPEG.
var benchTIFF = sync.OnceValues(func() ([]byte, error) {
	src := testimg.Photo(4000, 3000)
	m := image.NewRGBA(src.Bounds())
	draw.Draw(m, m.Bounds(), src, image.Point{}, draw.Src)
	var b bytes.Buffer
	err := tiffenc.Encode(context.Background(), &b, m, nil)
	return b.Bytes(), err
})

// BenchmarkDeflateStrips decodes benchTIFF in 64-row strips, as the TIFF -> JPEG pipeline
// does, with the shipped inflater and with compress/zlib.
//
//	go test ./convert/internal/tiffstrip -run XXX -bench DeflateStrips -benchmem -count 5
func BenchmarkDeflateStrips(b *testing.B) {
	data, err := benchTIFF()
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		open func(*Decoder, int64, int64, int64) (io.ReadCloser, error)
	}{
		{"inflate", (*Decoder).openDeflateReused},
		{"inflate-new-reader", func(d *Decoder, off, n, limit int64) (io.ReadCloser, error) { return openDeflate(d.r, off, n, limit) }},
		{"compress-zlib", func(d *Decoder, off, n, limit int64) (io.ReadCloser, error) { return openZlib(d.r, off, n, limit) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			defer func(old func(*Decoder, int64, int64, int64) (io.ReadCloser, error)) { openDeflateBlock = old }(openDeflateBlock)
			openDeflateBlock = v.open
			d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
			if !ok || err != nil {
				b.Fatalf("NewDecoder: %v %v", ok, err)
			}
			if d.compression != cDeflate || !d.predictor {
				b.Fatalf("compression %d, predictor %v: not what tiffenc writes", d.compression, d.predictor)
			}
			w, h := d.Bounds().Dx(), d.Bounds().Dy()
			buf := make([]byte, d.BytesPerPixel()*w*64)
			b.SetBytes(int64(w * h * 3))
			b.ReportAllocs()
			for b.Loop() {
				d, _, _ := NewDecoder(bytes.NewReader(data), int64(len(data)))
				for y := 0; y < h; y += 64 {
					if err := d.ReadRows(d.StripImage(buf, image.Rect(0, y, w, min(y+64, h)))); err != nil {
						b.Fatal(err)
					}
				}
				if err := d.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
