package pngstream

import (
	"bytes"
	stdzlib "compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"sync"
	"testing"

	kpzlib "github.com/klauspost/compress/zlib"

	"github.com/convsvc/convsvc/convert/internal/inflate"
	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// benchFiles are 4000x3000 photo-like PNGs (convert/internal/testimg.Photo, opaque, so
// image/png writes 8-bit RGB) at BestSpeed and at the default level, made once per process;
// PNGSTREAM_BENCH_PNG adds a file of your own (for example bench/genimg's big.png).
var benchFiles = sync.OnceValue(func() []benchFile {
	img := testimg.Photo(4000, 3000)
	var files []benchFile
	for _, l := range []struct {
		name  string
		level png.CompressionLevel
	}{{"speed", png.BestSpeed}, {"default", png.DefaultCompression}} {
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: l.level}).Encode(&buf, img); err != nil {
			panic(err)
		}
		files = append(files, benchFile{l.name, buf.Bytes()})
	}
	if p := os.Getenv("PNGSTREAM_BENCH_PNG"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		files = append(files, benchFile{"file", b})
	}
	return files
})

type benchFile struct {
	name string
	data []byte
}

func stdNewZlib(r io.Reader) (io.ReadCloser, error) { return stdzlib.NewReader(r) }
func kpNewZlib(r io.Reader) (io.ReadCloser, error)  { return kpzlib.NewReader(r) }

// ourNewZlib is the shipped inflater (newZlib's default).
func ourNewZlib(r io.Reader) (io.ReadCloser, error) {
	z, err := inflate.NewReader(r)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// BenchmarkDecode compares the whole decode: image/png, pngstream as shipped
// (klauspost/compress inflate), and pngstream with compress/zlib, which isolates what the
// row loops gain over image/png's.
//
//	go test ./convert/internal/pngstream -run XXX -bench Decode -benchmem -count 3
func BenchmarkDecode(b *testing.B) {
	for _, f := range benchFiles() {
		b.Run(f.name+"/stdlib", func(b *testing.B) {
			b.SetBytes(int64(len(f.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := png.Decode(bytes.NewReader(f.data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, v := range []struct {
			name string
			z    func(io.Reader) (io.ReadCloser, error)
		}{{"pngstream", ourNewZlib}, {"pngstream-klauspost", kpNewZlib}, {"pngstream-stdzlib", stdNewZlib}} {
			b.Run(f.name+"/"+v.name, func(b *testing.B) {
				defer func(old func(io.Reader) (io.ReadCloser, error)) { newZlib = old }(newZlib)
				newZlib = v.z
				b.SetBytes(int64(len(f.data)))
				b.ReportAllocs()
				for b.Loop() {
					d, ok, err := NewDecoder(bytes.NewReader(f.data))
					if err != nil || !ok {
						b.Fatal(ok, err)
					}
					if err := d.Decode(func(int) {}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// onlyReader hides ReadByte, so the inflater wraps the stream in a bufio.Reader exactly as it
// does over the IDAT reader.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// BenchmarkInflate compares compress/zlib, klauspost/compress/zlib and convert/internal/inflate
// on the files' IDAT streams alone, read row by row as Decode reads them.
//
//	go test ./convert/internal/pngstream -run XXX -bench Inflate -benchmem -count 3
func BenchmarkInflate(b *testing.B) {
	for _, f := range benchFiles() {
		z, rowLen := idatStream(b, f.data)
		for _, v := range []struct {
			name string
			z    func(io.Reader) (io.ReadCloser, error)
		}{{"stdlib", stdNewZlib}, {"klauspost", kpNewZlib}, {"inflate", ourNewZlib}} {
			b.Run(f.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(z)))
				b.ReportAllocs()
				row := make([]byte, rowLen)
				for b.Loop() {
					zr, err := v.z(onlyReader{bytes.NewReader(z)})
					if err != nil {
						b.Fatal(err)
					}
					for {
						if _, err := io.ReadFull(zr, row); err != nil {
							if err == io.EOF {
								break
							}
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// idatStream returns the concatenated IDAT data of a PNG and its filtered row length.
func idatStream(b testing.TB, data []byte) (z []byte, rowLen int) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	img, _ := png.Decode(bytes.NewReader(data))
	bpp := map[string]int{"*image.RGBA": 3, "*image.NRGBA": 4, "*image.Gray": 1, "*image.Paletted": 1}[typeName(img)]
	for p := 8; p+8 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[p:]))
		if string(data[p+4:p+8]) == "IDAT" {
			z = append(z, data[p+8:p+8+n]...)
		}
		p += 12 + n
	}
	return z, 1 + bpp*cfg.Width
}

func typeName(img image.Image) string {
	switch img.(type) {
	case *image.RGBA:
		return "*image.RGBA"
	case *image.NRGBA:
		return "*image.NRGBA"
	case *image.Gray:
		return "*image.Gray"
	case *image.Paletted:
		return "*image.Paletted"
	}
	return ""
}

// BenchmarkUnfilter times the row loops alone over a 4000x3000 image, per filter type and
// layout, writing into a fresh image each time as Decode does.
//
//	go test ./convert/internal/pngstream -run XXX -bench Unfilter -count 3
func BenchmarkUnfilter(b *testing.B) {
	const w, h = 4000, 3000
	for _, l := range []struct {
		name     string
		src, dst int
		f        func(byte, []byte, []byte, []byte)
	}{{"gray", 1, 1, unfilter1}, {"ga", 2, 4, unfilterGA}, {"rgb", 3, 4, unfilterRGB}, {"rgba", 4, 4, unfilter4}} {
		cur := make([]byte, l.src*w)
		for i := range cur {
			cur[i] = byte(i * 7)
		}
		for ft := range byte(5) {
			b.Run(fmt.Sprintf("%s/filter%d", l.name, ft), func(b *testing.B) {
				b.SetBytes(int64(l.dst * w * h))
				for b.Loop() {
					pix := make([]byte, l.dst*w*h)
					prev := make([]byte, l.dst*w)
					for y := range h {
						dst := pix[y*l.dst*w : (y+1)*l.dst*w]
						l.f(ft, dst, cur, prev)
						prev = dst
					}
				}
			})
		}
	}
}
