// Command gensamples writes the image samples, hostile samples and fuzz seeds that convert's
// tests use. Run it from the module root:
//
//	go run ./convert/internal/gensamples
//
// The WebP, AVIF, JPEG XL and HEIC samples need Debian's encoders (apt-get install webp
// libavif-bin libjxl-tools libheif-examples); without them those samples are left as they are.
package main

import (
	"bytes"
	"compress/lzw"
	"compress/zlib"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	ico "github.com/sergeymakinen/go-ico"
	"github.com/soniakeys/quant/median"
	"github.com/spakin/netpbm"
	"github.com/xfmoulet/qoi"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

func main() {
	root := flag.String("root", ".", "module root")
	flag.Parse()
	images := filepath.Join(*root, "testdata", "images")
	hostile := filepath.Join(*root, "testdata", "hostile")
	seeds := filepath.Join(*root, "convert", "image", "testdata", "fuzz", "FuzzDecodeImage")
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

	// Formats with pure-Go encoders outside convert: written here, byte for byte the same each run.
	write(images, "sample-anim.gif", encodeAnimatedGIF(64, 48, 4))
	write(images, "sample.qoi", encodeQOI(photo))
	write(images, "sample.ppm", encodeNetpbm(photo, netpbm.PPM, false))
	write(images, "sample-plain.ppm", encodeNetpbm(testimg.Photo(16, 12), netpbm.PPM, true))
	write(images, "sample.pgm", encodeNetpbm(gray(photo), netpbm.PGM, false))
	write(images, "sample.pbm", encodeNetpbm(gray(photo), netpbm.PBM, false))
	write(images, "sample.pam", encodeNetpbm(alpha, netpbm.PAM, false))
	write(images, "sample.ico", encodeICO(alpha))

	// Formats whose encoders are C tools (Debian: webp, libavif-bin, libjxl-tools,
	// libheif-examples): an independent encoder is the point, so they are not written with
	// the wasm builds convert decodes them with. HEIC is recognised, not converted: its sample
	// is there for sniffing.
	tool(images, "gif2webp", "sample-anim.webp", "-quiet", "-lossy", "-q", "80", filepath.Join(images, "sample-anim.gif"), "-o", filepath.Join(images, "sample-anim.webp"))
	tool(images, "avifenc", "sample.avif", "-j", "1", "-s", "8", "--min", "20", "--max", "30", "--minalpha", "20", "--maxalpha", "30", filepath.Join(images, "sample-alpha.png"), filepath.Join(images, "sample.avif"))
	tool(images, "avifenc", "sample-rotated.avif", "-j", "1", "-s", "8", "--min", "20", "--max", "30", "--irot", "1", filepath.Join(images, "sample.png"), filepath.Join(images, "sample-rotated.avif"))
	tool(images, "cjxl", "sample.jxl", "--quiet", "-d", "1", filepath.Join(images, "sample.png"), filepath.Join(images, "sample.jxl"))
	tool(images, "cjxl", "sample-lossless.jxl", "--quiet", "-d", "0", "--container=1", filepath.Join(images, "sample-alpha.png"), filepath.Join(images, "sample-lossless.jxl"))
	tool(images, "heif-enc", "sample.heic", "-q", "60", filepath.Join(images, "sample.png"), "-o", filepath.Join(images, "sample.heic"))

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

	writeNewDecoderHostiles(hostile, images, pngBytes)

	// Fuzz seeds: tiny images of every format plus every hostile file.
	tiny := testimg.PhotoAlpha(8, 6)
	for name, data := range map[string][]byte{
		"tiny-png":       encodePNG(tiny),
		"tiny-jpeg":      encodeJPEG(tiny),
		"tiny-gif":       encodeGIF(tiny),
		"tiny-bmp":       encodeBMP(tiny),
		"tiny-tiff":      encodeTIFF(tiny),
		"tiny-tiffu":     encodeTIFFRaw(tiny),
		"tiny-anim-gif":  encodeAnimatedGIF(8, 6, 3),
		"tiny-qoi":       encodeQOI(testimg.Photo(8, 6)),
		"tiny-ppm":       encodeNetpbm(tiny, netpbm.PPM, false),
		"tiny-plain-pgm": encodeNetpbm(gray(tiny), netpbm.PGM, true),
		"tiny-pam":       encodeNetpbm(tiny, netpbm.PAM, false),
		"tiny-ico":       encodeICO(tiny),
	} {
		writeSeed(seeds, name, data)
	}
	for _, dir := range []string{hostile, images} {
		entries, err := os.ReadDir(dir)
		must(err)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			must(err)
			if imageExts[filepath.Ext(e.Name())] && len(data) <= 16<<10 {
				writeSeed(seeds, filepath.Base(dir)+"-"+e.Name(), data)
			}
		}
	}
}

// imageExts are the extensions of image samples; other families keep files in the same directories.
var imageExts = map[string]bool{
	".png": true, ".jpeg": true, ".gif": true, ".bmp": true, ".tiff": true, ".webp": true, ".avif": true,
	".jxl": true, ".qoi": true, ".ppm": true, ".pgm": true, ".pbm": true, ".pam": true, ".ico": true, ".heic": true,
}

// tool runs an external encoder to write one sample, leaving the sample as it is when the
// tool is not installed.
func tool(dir, name, sample string, args ...string) {
	if _, err := exec.LookPath(name); err != nil {
		log.Printf("%s not found: %s left as it is", name, sample)
		return
	}
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	must(cmd.Run())
}

// encodeAnimatedGIF draws n distinct frames on a w x h screen: the first full, the others
// smaller patches (some with transparent pixels) left in place, cleared to the background or
// restored to the previous frame, so every disposal method is exercised.
func encodeAnimatedGIF(w, h, n int) []byte {
	full := testimg.Photo(w, h)
	pal := median.Quantizer(255).Quantize(make(color.Palette, 0, 256), full)
	pal = append(pal[:min(len(pal), 255):min(len(pal), 255)], color.NRGBA{}) // transparent, last
	g := &gif.GIF{LoopCount: 2, Config: image.Config{ColorModel: pal, Width: w, Height: h}}
	first := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	draw.FloydSteinberg.Draw(first, first.Bounds(), full, image.Point{})
	g.Image = append(g.Image, first)
	g.Delay = append(g.Delay, 20)
	g.Disposal = append(g.Disposal, gif.DisposalNone)
	disposals := []byte{gif.DisposalNone, gif.DisposalBackground, gif.DisposalPrevious}
	for i := 1; i < n; i++ {
		r := image.Rect(w/8*i%w, h/8*i%h, w/8*i%w+w/2, h/8*i%h+h/2).Intersect(first.Bounds())
		fr := image.NewPaletted(r, pal)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				switch {
				case (x+y)%7 == 0:
					fr.SetColorIndex(x, y, uint8(len(pal)-1))
				default:
					fr.SetColorIndex(x, y, uint8((x*3+y*5+i*40)%(len(pal)-1)))
				}
			}
		}
		g.Image = append(g.Image, fr)
		g.Delay = append(g.Delay, 10+10*i)
		g.Disposal = append(g.Disposal, disposals[i%len(disposals)])
	}
	var b bytes.Buffer
	must(gif.EncodeAll(&b, g))
	return b.Bytes()
}

func encodeQOI(m image.Image) []byte {
	var b bytes.Buffer
	must(qoi.Encode(&b, m)) // opaque images only: this encoder premultiplies alpha
	return b.Bytes()
}

func encodeNetpbm(m image.Image, f netpbm.Format, plain bool) []byte {
	var b bytes.Buffer
	opts := &netpbm.EncodeOptions{Format: f, Plain: plain}
	if f == netpbm.PAM {
		opts.TupleType = "RGB_ALPHA"
	}
	must(netpbm.Encode(&b, m, opts))
	return b.Bytes()
}

func gray(m image.Image) *image.Gray {
	g := image.NewGray(m.Bounds())
	draw.Draw(g, g.Bounds(), m, m.Bounds().Min, draw.Src)
	return g
}

// encodeICO writes an icon with the image and a 16x12 version of it: readers take the largest.
func encodeICO(m image.Image) []byte {
	small := image.NewNRGBA(image.Rect(0, 0, 16, 12))
	b := m.Bounds()
	for y := 0; y < 12; y++ {
		for x := 0; x < 16; x++ {
			small.Set(x, y, m.At(b.Min.X+x*b.Dx()/16, b.Min.Y+y*b.Dy()/12))
		}
	}
	var buf bytes.Buffer
	must(ico.EncodeAll(&buf, []image.Image{small, m}))
	return buf.Bytes()
}

// writeNewDecoderHostiles writes bombs, truncated files and wrong magic for the decoders
// beyond the standard library's: AVIF, JPEG XL, QOI, Netpbm, ICO, animated GIF and WebP.
func writeNewDecoderHostiles(hostile, images string, pngBytes []byte) {
	write(hostile, "avif-bomb.avif", avifBomb(100000, 100000, true))
	write(hostile, "avif-noinfo.avif", avifBomb(0, 0, false))
	if data, err := os.ReadFile(filepath.Join(images, "sample.avif")); err == nil {
		write(hostile, "avif-truncated.avif", data[:len(data)*2/3])
	}
	write(hostile, "avif-wrong-magic.avif", pngBytes)
	write(hostile, "jxl-bomb.jxl", jxlBomb(200000, 200000))
	if data, err := os.ReadFile(filepath.Join(images, "sample-lossless.jxl")); err == nil {
		write(hostile, "jxl-truncated.jxl", data[:len(data)/2])
	}
	if data, err := os.ReadFile(filepath.Join(images, "sample.jxl")); err == nil {
		write(hostile, "jxl-truncated-codestream.jxl", data[:len(data)/2])
	}
	write(hostile, "jxl-wrong-magic.jxl", []byte("\xff\xd8\xff\xe0 not really a JPEG either"))
	write(hostile, "qoi-bomb.qoi", qoiHeader(100000, 100000, nil))
	write(hostile, "qoi-expansion.qoi", qoiHeader(9000, 9000, append(bytes.Repeat([]byte{0xfd}, 64), "\x00\x00\x00\x00\x00\x00\x00\x01"...)))
	q := encodeQOI(testimg.Photo(64, 48))
	write(hostile, "qoi-truncated.qoi", q[:len(q)/2])
	write(hostile, "ppm-bomb.ppm", []byte("P6\n100000 100000\n255\n\x00\x00\x00"))
	write(hostile, "ppm-truncated.ppm", []byte("P6\n# 243 MB claimed\n9000 9000\n255\n\x01\x02\x03\x04\x05\x06"))
	write(hostile, "ppm-wrong-magic.ppm", []byte("P9\n1 1\n255\n\x00\x00\x00"))
	write(hostile, "ico-huge-entry.ico", icoWith(1, pngHeaderOnly(100000, 100000)))
	write(hostile, "ico-many-entries.ico", icoWith(300, pngHeaderOnly(16, 16)))
	write(hostile, "ico-outside.ico", icoOutside())
	write(hostile, "gif-frames.gif", gifManyFrames(2000, 2000, 2500))
	write(hostile, "webp-anim-bomb.webp", webpAnimBomb(4000, 4000, 100))
}

func box(typ string, payload ...[]byte) []byte {
	var b bytes.Buffer
	n := 8
	for _, p := range payload {
		n += len(p)
	}
	binary.Write(&b, binary.BigEndian, uint32(n))
	b.WriteString(typ)
	for _, p := range payload {
		b.Write(p)
	}
	return b.Bytes()
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// avifBomb is an AVIF header whose primary item claims w x h pixels (or, without iprp, no
// size at all), with an empty mdat.
func avifBomb(w, h uint32, withSize bool) []byte {
	ftyp := box("ftyp", []byte("avif"), be32(0), []byte("avifmif1miaf"))
	hdlr := box("hdlr", be32(0), be32(0), []byte("pict"), make([]byte, 13))
	pitm := box("pitm", be32(0), []byte{0, 1})
	children := [][]byte{be32(0), hdlr, pitm}
	if withSize {
		ispe := box("ispe", be32(0), be32(w), be32(h))
		ipma := box("ipma", be32(0), be32(1), []byte{0, 1, 1, 0x81})
		children = append(children, box("iprp", box("ipco", ispe), ipma))
	}
	return append(append(ftyp, box("meta", children...)...), box("mdat")...)
}

// jxlBomb is a bare JPEG XL codestream whose SizeHeader claims w x h pixels.
func jxlBomb(w, h uint32) []byte {
	var bits []byte
	var cur byte
	var n uint
	put := func(v uint64, width int) {
		for i := 0; i < width; i++ {
			cur |= byte(v>>i&1) << n
			n++
			if n == 8 {
				bits, cur, n = append(bits, cur), 0, 0
			}
		}
	}
	put(0, 1)            // not div8
	put(3, 2)            // height: 30-bit field
	put(uint64(h-1), 30) //
	put(0, 3)            // no ratio
	put(3, 2)            // width: 30-bit field
	put(uint64(w-1), 30) //
	put(1, 1)            // ImageMetadata all_default
	put(0, 8)            // flush
	return append([]byte{0xff, 0x0a}, append(bits, make([]byte, 16)...)...)
}

func qoiHeader(w, h uint32, data []byte) []byte {
	b := append([]byte("qoif"), be32(w)...)
	b = append(b, be32(h)...)
	b = append(b, 4, 0)
	return append(b, data...)
}

// pngHeaderOnly is the signature and IHDR of a w x h RGBA PNG, and nothing more.
func pngHeaderOnly(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := append(append(be32(w), be32(h)...), 8, 6, 0, 0, 0)
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	crc := crc32.NewIEEE()
	crc.Write([]byte("IHDR"))
	crc.Write(ihdr)
	b.WriteString("IHDR")
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc.Sum32())
	return b.Bytes()
}

// icoWith lists n directory entries that all point at the same image data.
func icoWith(n int, img []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [3]uint16{0, 1, uint16(n)})
	off := 6 + 16*n
	for i := 0; i < n; i++ {
		b.Write([]byte{0, 0, 0, 0})
		binary.Write(&b, binary.LittleEndian, [2]uint16{1, 32})
		binary.Write(&b, binary.LittleEndian, [2]uint32{uint32(len(img)), uint32(off)})
	}
	b.Write(img)
	return b.Bytes()
}

// icoOutside has one entry claiming 4 GB of data past the end of the file.
func icoOutside() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [3]uint16{0, 1, 1})
	b.Write([]byte{0, 0, 0, 0})
	binary.Write(&b, binary.LittleEndian, [2]uint16{1, 32})
	binary.Write(&b, binary.LittleEndian, [2]uint32{0xffffffff, 22})
	b.Write(pngHeaderOnly(16, 16))
	return b.Bytes()
}

// gifManyFrames has n one-pixel frames on a w x h screen.
func gifManyFrames(w, h, n int) []byte {
	var b bytes.Buffer
	b.WriteString("GIF89a")
	binary.Write(&b, binary.LittleEndian, [2]uint16{uint16(w), uint16(h)})
	b.Write([]byte{0x80, 0, 0, 0, 0, 0, 255, 255, 255})
	var lz bytes.Buffer
	lw := lzw.NewWriter(&lz, lzw.LSB, 2)
	lw.Write([]byte{1})
	lw.Close()
	for i := 0; i < n; i++ {
		b.WriteByte(0x2c)
		binary.Write(&b, binary.LittleEndian, [4]uint16{uint16(i % w), uint16(i / w % h), 1, 1})
		b.WriteByte(0)
		b.WriteByte(2)
		b.WriteByte(byte(lz.Len()))
		b.Write(lz.Bytes())
		b.WriteByte(0)
	}
	b.WriteByte(0x3b)
	return b.Bytes()
}

// webpAnimBomb is an animated WebP whose canvas is w x h with n (empty) frames.
func webpAnimBomb(w, h uint32, n int) []byte {
	var chunks bytes.Buffer
	chunk := func(fourcc string, data []byte) {
		chunks.WriteString(fourcc)
		binary.Write(&chunks, binary.LittleEndian, uint32(len(data)))
		chunks.Write(data)
		if len(data)%2 == 1 {
			chunks.WriteByte(0)
		}
	}
	put24 := func(b []byte, v uint32) { b[0], b[1], b[2] = byte(v), byte(v>>8), byte(v>>16) }
	vp8x := make([]byte, 10)
	vp8x[0] = 0x02 // animation
	put24(vp8x[4:], w-1)
	put24(vp8x[7:], h-1)
	chunk("VP8X", vp8x)
	chunk("ANIM", make([]byte, 6))
	for i := 0; i < n; i++ {
		chunk("ANMF", make([]byte, 16))
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(4+chunks.Len()))
	b.WriteString("WEBP")
	b.Write(chunks.Bytes())
	return b.Bytes()
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
