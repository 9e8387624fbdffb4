// Command gensamples writes the image samples, hostile samples and fuzz seeds that convert's
// tests use. Run it from the module root:
//
//	go run ./convert/internal/gensamples
//
// The WebP samples need Debian's cwebp (apt-get install webp); without it they are left as they are.
package main

import (
	"bytes"
	"compress/lzw"
	"compress/zlib"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/soniakeys/quant/median"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

func main() {
	root := flag.String("root", ".", "module root")
	flag.Parse()
	images := filepath.Join(*root, "testdata", "images")
	hostile := filepath.Join(*root, "testdata", "hostile")
	seeds := filepath.Join(*root, "convert", "testdata", "fuzz", "FuzzDecodeImage")
	for _, d := range []string{images, hostile, seeds} {
		must(os.MkdirAll(d, 0o755))
	}

	photo := testimg.Photo(64, 48)
	alpha := testimg.PhotoAlpha(64, 48)
	write(images, "sample.png", encodePNG(photo))
	write(images, "sample-alpha.png", encodePNG(alpha))
	write(images, "sample-16bit.png", encodePNG(testimg.Photo16(64, 48)))
	write(images, "sample.jpeg", encodeJPEG(photo))
	write(images, "sample.gif", encodeGIF(photo))
	write(images, "sample.bmp", encodeBMP(photo))
	write(images, "sample.tiff", encodeTIFF(photo))

	if _, err := exec.LookPath("cwebp"); err == nil {
		cwebp(filepath.Join(images, "sample.png"), filepath.Join(images, "sample.webp"), "-q", "80")
		cwebp(filepath.Join(images, "sample.png"), filepath.Join(images, "sample-lossless.webp"), "-lossless")
		cwebp(filepath.Join(images, "sample-alpha.png"), filepath.Join(images, "sample-alpha.webp"), "-q", "80")
	} else {
		log.Print("cwebp not found: WebP samples left as they are")
	}

	jpegBytes := encodeJPEG(photo)
	pngBytes := encodePNG(photo)
	write(hostile, "png-bomb.png", pngBomb())
	write(hostile, "gif-bomb.gif", gifBomb())
	write(hostile, "tiff-bomb.tiff", tiffBomb(100000, 100000, 0, 0))
	write(hostile, "tiff-tile-bomb.tiff", tiffBomb(16, 16, 60000, 60000))
	write(hostile, "bmp-bomb.bmp", bmpBomb(100000, 100000))
	write(hostile, "bmp-zero.bmp", bmpBomb(0, 10))
	write(hostile, "jpeg-bomb.jpeg", jpegBomb())
	write(hostile, "webp-bomb.webp", webpBomb())
	write(hostile, "truncated.png", pngBytes[:len(pngBytes)/2])
	write(hostile, "truncated.jpeg", jpegBytes[:len(jpegBytes)/2])
	write(hostile, "wrong-magic.png", jpegBytes)
	write(hostile, "text.png", []byte("hello, this is not an image\n"))
	write(hostile, "empty.png", nil)

	// Fuzz seeds: tiny images of every format plus every hostile file.
	tiny := testimg.PhotoAlpha(8, 6)
	for name, data := range map[string][]byte{
		"tiny-png":   encodePNG(tiny),
		"tiny-jpeg":  encodeJPEG(tiny),
		"tiny-gif":   encodeGIF(tiny),
		"tiny-bmp":   encodeBMP(tiny),
		"tiny-tiff":  encodeTIFF(tiny),
		"tiny-tiffu": encodeTIFFRaw(tiny),
	} {
		writeSeed(seeds, name, data)
	}
	for _, dir := range []string{hostile, images} {
		entries, err := os.ReadDir(dir)
		must(err)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			must(err)
			if len(data) <= 4096 || filepath.Ext(e.Name()) == ".webp" {
				writeSeed(seeds, filepath.Base(dir)+"-"+e.Name(), data)
			}
		}
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func write(dir, name string, data []byte) {
	must(os.WriteFile(filepath.Join(dir, name), data, 0o644))
}

func writeSeed(dir, name string, data []byte) {
	write(dir, name, []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(data))+")\n"))
}

func cwebp(in, out string, args ...string) {
	cmd := exec.Command("cwebp", append(append([]string{"-quiet", "-metadata", "none"}, args...), in, "-o", out)...)
	cmd.Stderr = os.Stderr
	must(cmd.Run())
}

func encodePNG(m image.Image) []byte {
	var b bytes.Buffer
	must(png.Encode(&b, m))
	return b.Bytes()
}

func encodeJPEG(m image.Image) []byte {
	var b bytes.Buffer
	must(jpeg.Encode(&b, m, &jpeg.Options{Quality: 85}))
	return b.Bytes()
}

func encodeGIF(m image.Image) []byte {
	var b bytes.Buffer
	must(gif.Encode(&b, m, &gif.Options{NumColors: 256, Quantizer: median.Quantizer(256), Drawer: draw.FloydSteinberg}))
	return b.Bytes()
}

func encodeBMP(m image.Image) []byte {
	var b bytes.Buffer
	must(bmp.Encode(&b, m))
	return b.Bytes()
}

func encodeTIFF(m image.Image) []byte {
	var b bytes.Buffer
	must(tiff.Encode(&b, m, &tiff.Options{Compression: tiff.Deflate}))
	return b.Bytes()
}

func encodeTIFFRaw(m image.Image) []byte {
	var b bytes.Buffer
	must(tiff.Encode(&b, m, nil))
	return b.Bytes()
}

func zlibBytes(data []byte) []byte {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	must(err)
	_, err = w.Write(data)
	must(err)
	must(w.Close())
	return b.Bytes()
}

// pngBomb is a valid-looking PNG whose header claims 100000x100000 RGBA pixels, i.e. 40 GB
// decoded, with a few rows of compressed zeros behind it.
func pngBomb() []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], 100000)
	binary.BigEndian.PutUint32(ihdr[4:], 100000)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", zlibBytes(make([]byte, 3*(4*100000+1))))
	chunk("IEND", nil)
	return b.Bytes()
}

// gifBomb claims a 65535x65535 screen and frame with a tiny LZW stream.
func gifBomb() []byte {
	var b bytes.Buffer
	b.WriteString("GIF89a")
	binary.Write(&b, binary.LittleEndian, [2]uint16{65535, 65535})
	b.Write([]byte{0x80, 0, 0}) // global color table of 2 entries
	b.Write([]byte{0, 0, 0, 255, 255, 255})
	b.WriteByte(0x2c) // image descriptor
	binary.Write(&b, binary.LittleEndian, [4]uint16{0, 0, 65535, 65535})
	b.WriteByte(0)
	b.WriteByte(2) // LZW minimum code size
	var lz bytes.Buffer
	w := lzw.NewWriter(&lz, lzw.LSB, 2)
	w.Write(make([]byte, 100000))
	w.Close()
	data := lz.Bytes()
	for len(data) > 0 {
		n := min(255, len(data))
		b.WriteByte(byte(n))
		b.Write(data[:n])
		data = data[n:]
	}
	b.WriteByte(0)
	b.WriteByte(0x3b)
	return b.Bytes()
}

// tiffBomb is an 8-bit grayscale deflate TIFF of w x h pixels; when tw and th are set it is
// tiled with one tile that size, else stripped with one strip.
func tiffBomb(w, h, tw, th uint32) []byte {
	data := zlibBytes(make([]byte, 1<<20))
	type entry struct {
		tag, typ uint16
		val      uint32
	}
	const dataOff = 8
	ifdOff := uint32(dataOff + len(data))
	ifdOff += ifdOff & 1
	// Entries must be sorted by tag.
	entries := []entry{{256, 4, w}, {257, 4, h}, {258, 3, 8}, {259, 3, 8}, {262, 3, 1}}
	if tw != 0 {
		entries = append(entries, entry{277, 3, 1}, entry{322, 4, tw}, entry{323, 4, th}, entry{324, 4, dataOff}, entry{325, 4, uint32(len(data))})
	} else {
		entries = append(entries, entry{273, 4, dataOff}, entry{277, 3, 1}, entry{278, 4, h}, entry{279, 4, uint32(len(data))})
	}
	var b bytes.Buffer
	b.WriteString("II*\x00")
	binary.Write(&b, binary.LittleEndian, ifdOff)
	b.Write(data)
	for uint32(b.Len()) < ifdOff {
		b.WriteByte(0)
	}
	binary.Write(&b, binary.LittleEndian, uint16(len(entries)))
	for _, e := range entries {
		binary.Write(&b, binary.LittleEndian, e.tag)
		binary.Write(&b, binary.LittleEndian, e.typ)
		binary.Write(&b, binary.LittleEndian, uint32(1))
		if e.typ == 3 {
			binary.Write(&b, binary.LittleEndian, [2]uint16{uint16(e.val), 0})
		} else {
			binary.Write(&b, binary.LittleEndian, e.val)
		}
	}
	binary.Write(&b, binary.LittleEndian, uint32(0))
	return b.Bytes()
}

// bmpBomb is a 24-bit BMP header claiming w x h pixels with no pixel data.
func bmpBomb(w, h int32) []byte {
	var b bytes.Buffer
	b.WriteString("BM")
	binary.Write(&b, binary.LittleEndian, []uint32{54 + 64, 0, 54})
	binary.Write(&b, binary.LittleEndian, []int32{40, w, h})
	binary.Write(&b, binary.LittleEndian, []uint16{1, 24})
	binary.Write(&b, binary.LittleEndian, []uint32{0, 0, 2835, 2835, 0, 0})
	b.Write(make([]byte, 64))
	return b.Bytes()
}

// jpegBomb has a start-of-frame claiming 65535x65535 three-component pixels.
func jpegBomb() []byte {
	var b bytes.Buffer
	b.Write([]byte{0xff, 0xd8})
	b.Write([]byte{0xff, 0xc0, 0, 17, 8, 0xff, 0xff, 0xff, 0xff, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0})
	b.Write([]byte{0xff, 0xda, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0})
	b.Write([]byte{0xff, 0xd9})
	return b.Bytes()
}

// webpBomb is an extended WebP whose canvas claims 40000x40000 pixels.
func webpBomb() []byte {
	var vp8x bytes.Buffer
	vp8x.WriteString("VP8X")
	binary.Write(&vp8x, binary.LittleEndian, uint32(10))
	vp8x.Write([]byte{0, 0, 0, 0})
	put24 := func(v uint32) { vp8x.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16)}) }
	put24(40000 - 1)
	put24(40000 - 1)
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(4+vp8x.Len()))
	b.WriteString("WEBP")
	b.Write(vp8x.Bytes())
	return b.Bytes()
}
