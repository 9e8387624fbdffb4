package pngstream

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// decodeStream runs the whole streaming decode and checks the progress contract on the way.
func decodeStream(t testing.TB, data []byte) (img image.Image, ok bool, err error) {
	t.Helper()
	d, ok, err := NewDecoder(bytes.NewReader(data))
	if err != nil || !ok {
		return nil, ok, err
	}
	h := d.Image().Bounds().Dy()
	last := 0
	calls := 0
	err = d.Decode(func(rows int) {
		calls++
		if rows <= last || rows > h {
			t.Errorf("progress(%d) after progress(%d), height %d", rows, last, h)
		}
		if rows-last > progressRows {
			t.Errorf("progress jumped from %d to %d rows", last, rows)
		}
		last = rows
	})
	if err == nil && last != h {
		t.Errorf("last progress call %d, want the height %d", last, h)
	}
	return d.Image(), true, err
}

// sameImage reports how got differs from want, or "" when image/png would have returned
// exactly got: type, bounds, stride, pixels and palette (with its colour types).
func sameImage(got, want image.Image) string {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("type %T, want %T", got, want)
	}
	if got.Bounds() != want.Bounds() {
		return fmt.Sprintf("bounds %v, want %v", got.Bounds(), want.Bounds())
	}
	var gpix, wpix []byte
	var gs, ws int
	switch g := got.(type) {
	case *image.Gray:
		w := want.(*image.Gray)
		gpix, wpix, gs, ws = g.Pix, w.Pix, g.Stride, w.Stride
	case *image.RGBA:
		w := want.(*image.RGBA)
		gpix, wpix, gs, ws = g.Pix, w.Pix, g.Stride, w.Stride
	case *image.NRGBA:
		w := want.(*image.NRGBA)
		gpix, wpix, gs, ws = g.Pix, w.Pix, g.Stride, w.Stride
	case *image.Paletted:
		w := want.(*image.Paletted)
		gpix, wpix, gs, ws = g.Pix, w.Pix, g.Stride, w.Stride
		if !reflect.DeepEqual(g.Palette, w.Palette) {
			return fmt.Sprintf("palette %v, want %v", g.Palette, w.Palette)
		}
	default:
		return fmt.Sprintf("unexpected type %T", got)
	}
	if gs != ws {
		return fmt.Sprintf("stride %d, want %d", gs, ws)
	}
	if !bytes.Equal(gpix, wpix) {
		for i := range gpix {
			if gpix[i] != wpix[i] {
				return fmt.Sprintf("pix differ first at byte %d (row %d): %d, want %d", i, i/gs, gpix[i], wpix[i])
			}
		}
		return fmt.Sprintf("pix length %d, want %d", len(gpix), len(wpix))
	}
	return ""
}

// differential decodes data with image/png and with pngstream and fails the test unless they
// agree: both succeed with identical images, or both fail with the same message. ok == false from NewDecoder passes
// (the caller would use image/png); wantOK says whether the fast path must take the file.
func differential(t *testing.T, name string, data []byte, wantOK bool) (streamErr, stdErr error) {
	t.Helper()
	want, werr := png.Decode(bytes.NewReader(data))
	got, ok, err := decodeStream(t, data)
	if diff := stripsAgree(data, got, ok, err); diff != "" {
		t.Errorf("%s: %s", name, diff)
	}
	if ok != wantOK && err == nil {
		t.Errorf("%s: ok = %v, want %v", name, ok, wantOK)
	}
	if !ok && err == nil {
		return nil, werr
	}
	switch {
	case werr == nil && err == nil:
		if diff := sameImage(got, want); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	case werr == nil:
		t.Errorf("%s: pngstream failed (%v) where image/png succeeded", name, err)
	case err == nil:
		t.Errorf("%s: pngstream succeeded where image/png failed (%v)", name, werr)
	case err.Error() != werr.Error():
		t.Errorf("%s: pngstream says %q, image/png %q", name, err, werr)
	}
	return err, werr
}

// chunk frames data as a PNG chunk with its CRC.
func chunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
}

func ihdr(w, h, depth, ct, interlace int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(w))
	b = binary.BigEndian.AppendUint32(b, uint32(h))
	return append(b, byte(depth), byte(ct), 0, 0, byte(interlace))
}

func zlibBytes(t testing.TB, raw []byte, level int) []byte {
	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// spec describes a hand-built PNG: the chunks are assembled in order, IDAT data split into
// pieces of idatSplit bytes (0: one chunk).
type spec struct {
	w, h, depth, ct, interlace int
	plte, trns                 []byte
	raw                        []byte // filtered rows, filter byte first
	idatSplit                  int
	before, between, after     [][]byte // whole chunks before PLTE, before IDAT, before IEND
	noIEND                     bool
}

func (s spec) build(t testing.TB) []byte {
	out := []byte(pngHeader)
	out = append(out, chunk("IHDR", ihdr(s.w, s.h, s.depth, s.ct, s.interlace))...)
	for _, c := range s.before {
		out = append(out, c...)
	}
	if s.plte != nil {
		out = append(out, chunk("PLTE", s.plte)...)
	}
	if s.trns != nil {
		out = append(out, chunk("tRNS", s.trns)...)
	}
	for _, c := range s.between {
		out = append(out, c...)
	}
	z := zlibBytes(t, s.raw, zlib.DefaultCompression)
	if s.idatSplit <= 0 {
		out = append(out, chunk("IDAT", z)...)
	} else {
		for len(z) > 0 {
			n := min(s.idatSplit, len(z))
			out = append(out, chunk("IDAT", z[:n])...)
			z = z[n:]
		}
	}
	for _, c := range s.after {
		out = append(out, c...)
	}
	if !s.noIEND {
		out = append(out, chunk("IEND", nil)...)
	}
	return out
}

// bppOf is the bytes per pixel of an 8-bit colour type.
func bppOf(ct int) int {
	return map[int]int{ctGrayscale: 1, ctTrueColor: 3, ctPaletted: 1, ctGrayscaleAlpha: 2, ctTrueColorAlpha: 4}[ct]
}

// randomRows returns h rows of random filtered bytes; filter(y) picks each row's filter.
func randomRows(rng *rand.Rand, w, h, bpp int, filter func(y int) byte, valueMax int) []byte {
	var raw []byte
	for y := range h {
		raw = append(raw, filter(y))
		for range w * bpp {
			raw = append(raw, byte(rng.IntN(valueMax+1)))
		}
	}
	return raw
}

func palette(n int) []byte {
	p := make([]byte, 3*n)
	for i := range p {
		p[i] = byte(i*37 + 11)
	}
	return p
}

// skipUnderRace skips, in a -race build, a test that decodes in one goroutine: the
// differential loops (thousands of hand-built or image/png files, each decoded by image/png,
// Decode and the strip decoder) and the zlib bomb (64 MiB compressed in the test). pngstream
// has no goroutines, locks or shared state, so the race detector has nothing to find there,
// and under it these took most of the package's time in .ci/run's -race -short step (the bomb
// alone 121 s at a load of 25). TestDecode_ConcurrentReader, which reads rows from another
// goroutine as Decode reports them, stays under the detector; the plain step (go test ./...)
// runs them all.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("-race: a single-goroutine decode loop; the plain run runs it")
	}
}

var colorTypes = []int{ctGrayscale, ctTrueColor, ctPaletted, ctGrayscaleAlpha, ctTrueColorAlpha}

// TestDecode_EveryFilterEveryLayout hand-builds rows with every filter type (cycled, and
// random per row) for every colour type and widths 1..33, so each bpp-specialised loop and
// each filter meets both a zero row above and real ones.
func TestDecode_EveryFilterEveryLayout(t *testing.T) {
	skipUnderRace(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ct := range colorTypes {
		for w := 1; w <= 33; w++ {
			for _, h := range []int{1, 5, 23} {
				for fi, filter := range []func(int) byte{
					func(y int) byte { return byte(y % 5) },
					func(y int) byte { return byte((y + 3) % 5) },
					func(int) byte { return byte(rng.IntN(5)) },
				} {
					s := spec{w: w, h: h, depth: 8, ct: ct, raw: randomRows(rng, w, h, bppOf(ct), filter, 255)}
					if ct == ctPaletted {
						s.plte = palette(256)
					}
					differential(t, fmt.Sprintf("ct%d %dx%d filters%d", ct, w, h, fi), s.build(t), true)
				}
			}
		}
	}
	// Each filter alone on a taller image, so a row's filter sees rows of every other kind above.
	for _, ct := range colorTypes {
		for f := range byte(5) {
			s := spec{w: 31, h: 40, depth: 8, ct: ct, raw: randomRows(rng, 31, 40, bppOf(ct), func(int) byte { return f }, 255)}
			if ct == ctPaletted {
				s.plte = palette(256)
			}
			differential(t, fmt.Sprintf("ct%d filter %d only", ct, f), s.build(t), true)
		}
	}
}

// testImages returns images of every type image/png encodes to an 8-bit layout this package
// takes: gray, opaque RGB, RGBA, paletted with and without transparency.
func testImages(w, h int, seed uint64) map[string]image.Image {
	rng := rand.New(rand.NewPCG(seed, uint64(w*1000+h)))
	gray := image.NewGray(image.Rect(0, 0, w, h))
	rgb := image.NewNRGBA(image.Rect(0, 0, w, h))
	rgba := image.NewNRGBA(image.Rect(0, 0, w, h))
	pal := make(color.Palette, 40)
	for i := range pal {
		pal[i] = color.RGBA{byte(i * 6), byte(255 - i*5), byte(i * i), 255}
	}
	tpal := append(color.Palette(nil), pal...)
	tpal[3] = color.NRGBA{1, 2, 3, 0}
	tpal[7] = color.NRGBA{9, 8, 7, 128}
	paletted := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	tpaletted := image.NewPaletted(image.Rect(0, 0, w, h), tpal)
	for y := range h {
		for x := range w {
			// Smooth with some noise, so the encoder's adaptive filter picks all kinds.
			v := byte(x*7 + y*3 + rng.IntN(9))
			gray.Pix[gray.PixOffset(x, y)] = v
			o := rgb.PixOffset(x, y)
			copy(rgb.Pix[o:], []byte{v, byte(x * 9), byte(y*5 + rng.IntN(3)), 255})
			copy(rgba.Pix[o:], []byte{v, byte(x * 9), byte(y * 5), byte(x*y + rng.IntN(4))})
			paletted.Pix[paletted.PixOffset(x, y)] = byte((x + y*y) % len(pal))
			tpaletted.Pix[tpaletted.PixOffset(x, y)] = byte((x*x + y) % len(tpal))
		}
	}
	return map[string]image.Image{"gray": gray, "rgb": rgb, "rgba": rgba, "paletted": paletted, "tpaletted": tpaletted}
}

// TestDecode_EncodedByImagePNG round-trips images written by image/png at every compression
// level, for widths 1..33 and a few heights around the progress batch size.
func TestDecode_EncodedByImagePNG(t *testing.T) {
	skipUnderRace(t)
	levels := []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression}
	for w := 1; w <= 33; w++ {
		for _, h := range []int{1, 2, 15, 16, 17, 33} {
			for name, img := range testImages(w, h, 7) {
				for _, lvl := range levels {
					var buf bytes.Buffer
					enc := png.Encoder{CompressionLevel: lvl}
					if err := enc.Encode(&buf, img); err != nil {
						t.Fatal(err)
					}
					differential(t, fmt.Sprintf("%s %dx%d level %d", name, w, h, lvl), buf.Bytes(), true)
				}
			}
		}
	}
}

// TestDecode_PaletteTransparency covers tRNS shorter than, as long as and longer than PLTE,
// and pixel indices past the palette (image/png lengthens the palette with opaque black).
func TestDecode_PaletteTransparency(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name     string
		np, nt   int
		maxIndex int
	}{
		{"no tRNS", 16, -1, 15},
		{"short tRNS", 16, 5, 15},
		{"full tRNS", 16, 16, 15},
		{"tRNS longer than PLTE", 16, 40, 15},
		{"256 entries", 256, 256, 255},
		{"index out of range", 16, -1, 200},
		{"index out of range with tRNS", 16, 8, 100},
		{"index past tRNS-lengthened palette", 16, 40, 255},
		{"one entry", 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec{w: 13, h: 20, depth: 8, ct: ctPaletted, plte: palette(tc.np)}
			s.raw = randomRows(rng, 13, 20, 1, func(int) byte { return ftNone }, tc.maxIndex)
			if tc.nt >= 0 {
				s.trns = make([]byte, tc.nt)
				for i := range s.trns {
					s.trns[i] = byte(i * 17)
				}
			}
			differential(t, tc.name, s.build(t), true)
		})
	}
}

// TestDecode_ChunkLayout covers IDAT split into many chunks, empty IDATs, ancillary chunks
// before and after the image data, and chunks the format forbids where they are.
func TestDecode_ChunkLayout(t *testing.T) {
	skipUnderRace(t)
	rng := rand.New(rand.NewPCG(5, 6))
	base := func(ct int) spec {
		s := spec{w: 29, h: 37, depth: 8, ct: ct, raw: randomRows(rng, 29, 37, bppOf(ct), func(y int) byte { return byte(y % 5) }, 255)}
		if ct == ctPaletted {
			s.plte = palette(100)
		}
		return s
	}
	text := chunk("tEXt", []byte("Comment\x00hello"))
	gama := chunk("gAMA", []byte{0, 0, 0xb1, 0x8f})
	empty := chunk("IDAT", nil)
	for _, ct := range colorTypes {
		for _, tc := range []struct {
			name   string
			mod    func(*spec)
			wantOK bool
		}{
			{"one IDAT", func(*spec) {}, true},
			{"IDAT split 1 byte", func(s *spec) { s.idatSplit = 1 }, true},
			{"IDAT split 7", func(s *spec) { s.idatSplit = 7 }, true},
			{"IDAT split 100", func(s *spec) { s.idatSplit = 100 }, true},
			{"ancillary everywhere", func(s *spec) {
				s.before = [][]byte{text, gama}
				s.between = [][]byte{text}
				s.after = [][]byte{text, gama}
			}, true},
			{"empty and trailing IDAT after the data", func(s *spec) { s.after = [][]byte{empty, chunk("IDAT", []byte("junk")), text} }, true},
			{"ancillary between IDATs", func(s *spec) { s.idatSplit = 50; s.after = nil }, true},
			{"no IEND", func(s *spec) { s.noIEND = true }, true},
			{"IEND with data", func(s *spec) { s.noIEND = true; s.after = [][]byte{chunk("IEND", []byte{1})} }, true},
			{"IHDR twice", func(s *spec) { s.before = [][]byte{chunk("IHDR", ihdr(s.w, s.h, 8, s.ct, 0))} }, true},
			{"unknown chunk with huge length", func(s *spec) {
				s.after = [][]byte{append(binary.BigEndian.AppendUint32(nil, 0x80000000), "zzZz"...)}
			}, true},
		} {
			s := base(ct)
			tc.mod(&s)
			data := s.build(t)
			if tc.name == "ancillary between IDATs" {
				// Put a tEXt chunk between the first and second IDAT chunk.
				i := bytes.Index(data, []byte("IDAT")) - 4
				n := 12 + int(binary.BigEndian.Uint32(data[i:]))
				data = append(append(append([]byte(nil), data[:i+n]...), text...), data[i+n:]...)
			}
			_, werr := differential(t, fmt.Sprintf("ct%d %s", ct, tc.name), data, tc.wantOK)
			if tc.name == "ancillary between IDATs" && werr == nil {
				t.Errorf("image/png accepted a chunk between IDATs")
			}
		}
	}
}

// TestDecode_Unsupported checks that layouts left to image/png give ok == false and no
// error, and that image/png does decode them.
func TestDecode_Unsupported(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// image/png writes no interlaced files: build one (a 1x1 Adam7 image has one pass).
	for _, tc := range []struct {
		name string
		s    spec
	}{
		{"interlaced", spec{w: 1, h: 1, depth: 8, ct: ctTrueColor, interlace: 1, raw: []byte{0, 1, 2, 3}}},
		{"16-bit RGB", spec{w: 3, h: 2, depth: 16, ct: ctTrueColor, raw: randomRows(rng, 3, 2, 6, func(int) byte { return 0 }, 255)}},
		{"16-bit gray", spec{w: 3, h: 2, depth: 16, ct: ctGrayscale, raw: randomRows(rng, 3, 2, 2, func(int) byte { return 0 }, 255)}},
		{"1-bit gray", spec{w: 8, h: 2, depth: 1, ct: ctGrayscale, raw: randomRows(rng, 1, 2, 1, func(int) byte { return 0 }, 255)}},
		{"4-bit palette", spec{w: 2, h: 2, depth: 4, ct: ctPaletted, plte: palette(16), raw: randomRows(rng, 1, 2, 1, func(int) byte { return 0 }, 255)}},
		{"gray tRNS", spec{w: 3, h: 2, depth: 8, ct: ctGrayscale, trns: []byte{0, 7}, raw: randomRows(rng, 3, 2, 1, func(int) byte { return 1 }, 255)}},
		{"RGB tRNS", spec{w: 3, h: 2, depth: 8, ct: ctTrueColor, trns: []byte{0, 7, 0, 8, 0, 9}, raw: randomRows(rng, 3, 2, 3, func(int) byte { return 1 }, 255)}},
	} {
		data := tc.s.build(t)
		d, ok, err := NewDecoder(bytes.NewReader(data))
		if d != nil || ok || err != nil {
			t.Errorf("%s: NewDecoder = %v, %v, %v; want nil, false, nil", tc.name, d, ok, err)
		}
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Errorf("%s: image/png: %v", tc.name, err)
		}
	}
}

// TestDecode_Hostile: broken files fail in both decoders (or succeed identically), and
// never panic.
func TestDecode_Hostile(t *testing.T) {
	skipUnderRace(t)
	rng := rand.New(rand.NewPCG(9, 10))
	good := func(ct int) spec {
		s := spec{w: 21, h: 19, depth: 8, ct: ct, raw: randomRows(rng, 21, 19, bppOf(ct), func(y int) byte { return byte(y % 5) }, 255)}
		if ct == ctPaletted {
			s.plte = palette(256)
		}
		return s
	}
	for _, ct := range colorTypes {
		s := good(ct)
		data := s.build(t)
		idat := bytes.Index(data, []byte("IDAT"))
		idatLen := int(binary.BigEndian.Uint32(data[idat-4:]))
		cases := map[string][]byte{}
		flip := func(i int) []byte {
			b := bytes.Clone(data)
			b[i] ^= 0x40
			return b
		}
		cases["bad IHDR CRC"] = flip(8 + 8 + 13)
		cases["bad IHDR data"] = flip(8 + 8 + 9)
		cases["bad IDAT CRC"] = flip(idat + 4 + idatLen)
		cases["bad IDAT data"] = flip(idat + 4 + idatLen/2)
		cases["bad zlib checksum"] = func() []byte {
			z := zlibBytes(t, s.raw, 6)
			z[len(z)-1] ^= 1
			return assemble(s, z)
		}()
		cases["zlib stream cut before its checksum"] = func() []byte {
			z := zlibBytes(t, s.raw, 6)
			return assemble(s, z[:len(z)-4])
		}()
		cases["too little image data"] = func() []byte {
			s2 := s
			s2.raw = s.raw[:len(s.raw)-5]
			return s2.build(t)
		}()
		cases["one row too few"] = func() []byte {
			s2 := s
			s2.raw = s.raw[:len(s.raw)-(1+21*bppOf(ct))]
			return s2.build(t)
		}()
		cases["too much image data"] = func() []byte {
			s2 := s
			s2.raw = append(bytes.Clone(s.raw), 0, 1, 2)
			return s2.build(t)
		}()
		cases["garbage after the zlib stream"] = assemble(s, append(zlibBytes(t, s.raw, 6), make([]byte, 5000)...))
		// image/png's inflater reads the IDAT stream through a 4096-byte bufio.Reader, so a few
		// stray bytes after the zlib stream in the same chunk go unnoticed: it accepts this file,
		// and pngstream, reading the stream the same way, must too.
		cases["3 stray bytes after the zlib stream"] = assemble(s, append(zlibBytes(t, s.raw, 6), 1, 2, 3))
		cases["bad filter type"] = func() []byte {
			s2 := s
			s2.raw = bytes.Clone(s.raw)
			s2.raw[0] = 5
			return s2.build(t)
		}()
		cases["IEND before IDAT"] = func() []byte {
			b := []byte(pngHeader)
			b = append(b, chunk("IHDR", ihdr(21, 19, 8, ct, 0))...)
			return append(b, chunk("IEND", nil)...)
		}()
		cases["not a PNG"] = []byte("\x89PNG\r\n\x1a\x0b")
		for name, b := range cases {
			serr, werr := differential(t, fmt.Sprintf("ct%d %s", ct, name), b, true)
			if strings.HasPrefix(name, "3 stray") != (werr == nil) || (serr == nil) != (werr == nil) {
				t.Errorf("ct%d %s: pngstream %v, image/png %v", ct, name, serr, werr)
			}
		}
		// Every prefix at a 97-byte step, and every prefix of the last 40 bytes.
		for n := 0; n < len(data); n++ {
			if n%97 == 0 || n > len(data)-40 {
				differential(t, fmt.Sprintf("ct%d truncated at %d", ct, n), data[:n], true)
			}
		}
	}
}

// assemble builds s with the given zlib bytes as its only IDAT.
func assemble(s spec, z []byte) []byte {
	out := []byte(pngHeader)
	out = append(out, chunk("IHDR", ihdr(s.w, s.h, s.depth, s.ct, 0))...)
	if s.plte != nil {
		out = append(out, chunk("PLTE", s.plte)...)
	}
	out = append(out, chunk("IDAT", z)...)
	return append(out, chunk("IEND", nil)...)
}

// TestDecode_BadHeaders checks IHDR validation, including sizes nobody may allocate.
func TestDecode_BadHeaders(t *testing.T) {
	raw := []byte{0, 1, 2, 3}
	for _, tc := range []struct {
		name           string
		w, h, depth, c int
	}{
		{"width 0", 0, 1, 8, ctTrueColor},
		{"height 0", 1, 0, 8, ctTrueColor},
		{"negative width", -5, 1, 8, ctTrueColor},
		{"overflowing size", 0x7fffffff, 0x7fffffff, 8, ctTrueColorAlpha},
		{"bit depth 3", 1, 1, 3, ctGrayscale},
		{"colour type 5", 1, 1, 8, 5},
		{"16-bit palette", 1, 1, 16, ctPaletted},
	} {
		s := spec{w: tc.w, h: tc.h, depth: tc.depth, ct: tc.c, raw: raw}
		data := s.build(t)
		_, ok, err := NewDecoder(bytes.NewReader(data))
		_, werr := png.Decode(bytes.NewReader(data))
		if err == nil || ok || werr == nil {
			t.Errorf("%s: pngstream ok=%v err=%v, image/png err=%v; want both errors", tc.name, ok, err, werr)
		} else if err.Error() != werr.Error() {
			t.Errorf("%s: error %q, image/png says %q", tc.name, err, werr)
		}
	}
	// 100000 x 100000 RGBA passes image/png's overflow check and would make it allocate
	// 40 GB at the first IDAT; pngstream refuses it before allocating (image/png is not run).
	s := spec{w: 100000, h: 100000, depth: 8, ct: ctTrueColorAlpha, raw: raw}
	d, ok, err := NewDecoder(bytes.NewReader(s.build(t)))
	var ue png.UnsupportedError
	if d != nil || ok || !errors.As(err, &ue) {
		t.Errorf("100000x100000: NewDecoder = %v, %v, %v; want an UnsupportedError", d, ok, err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestDecode_ZlibBomb: 64 MiB of zeros behind a 10x10 image must stop at the first byte too
// many, reading a few kilobytes of the file, not inflate the rest.
func TestDecode_ZlibBomb(t *testing.T) {
	skipUnderRace(t)
	raw := make([]byte, 64<<20)
	s := spec{w: 10, h: 10, depth: 8, ct: ctTrueColor, raw: raw}
	data := s.build(t)
	cr := &countingReader{r: bytes.NewReader(data)}
	start := time.Now()
	d, ok, err := NewDecoder(cr)
	if err != nil || !ok {
		t.Fatalf("NewDecoder: %v, %v", ok, err)
	}
	err = d.Decode(nil)
	var fe png.FormatError
	if !errors.As(err, &fe) || err.Error() != "png: invalid format: too much pixel data" {
		t.Errorf("Decode = %v, want too much pixel data", err)
	}
	if cr.n > 16<<10 {
		t.Errorf("read %d of %d bytes: the inflater kept going", cr.n, len(data))
	}
	t.Logf("bomb of %d bytes (%d inflated): stopped after reading %d bytes in %v", len(data), len(raw), cr.n, time.Since(start))
	if _, werr := png.Decode(bytes.NewReader(data)); werr == nil {
		t.Errorf("image/png accepted the bomb")
	}
}

// TestDecode_ConcurrentReader reads rows from another goroutine as progress reports them,
// the way the strip encoder does; run with -race, it shows rows below rowsDone are final.
func TestDecode_ConcurrentReader(t *testing.T) {
	for name, img := range testImages(301, 203, 11) {
		d, data := encodedDecoder(t, name, img)
		var pix []byte
		var stride int
		var pal color.Palette
		switch m := d.Image().(type) {
		case *image.RGBA:
			pix, stride = m.Pix, m.Stride
		case *image.NRGBA:
			pix, stride = m.Pix, m.Stride
		case *image.Gray:
			pix, stride = m.Pix, m.Stride
		case *image.Paletted:
			pix, stride, pal = m.Pix, m.Stride, m.Palette[:cap(m.Palette)]
		}
		rows := make(chan int, 1024)
		var copied []byte
		var wg sync.WaitGroup
		wg.Go(func() {
			done := 0
			for r := range rows {
				copied = append(copied, pix[done*stride:r*stride]...)
				if pal != nil {
					for _, i := range pix[done*stride : r*stride] {
						_ = pal[i] // every index has a colour while Decode runs
					}
				}
				done = r
			}
		})
		err := d.Decode(func(r int) { rows <- r })
		close(rows)
		wg.Wait()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := png.Decode(bytes.NewReader(data))
		if diff := sameImage(d.Image(), want); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
		if !bytes.Equal(copied, pix) {
			t.Errorf("%s: rows copied during Decode differ from the final image", name)
		}
	}
}

// TestDecode_ShortReads feeds the file one byte or half a buffer per Read, as a slow network
// or pipe would: the chunk walk must not depend on how the caller's reader splits data.
func TestDecode_ShortReads(t *testing.T) {
	for name, img := range testImages(37, 29, 13) {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		want, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for rname, wrap := range map[string]func(io.Reader) io.Reader{"one byte": iotest.OneByteReader, "half": iotest.HalfReader, "data+EOF": iotest.DataErrReader} {
			d, ok, err := NewDecoder(wrap(bytes.NewReader(buf.Bytes())))
			if err != nil || !ok {
				t.Fatalf("%s %s: %v %v", name, rname, ok, err)
			}
			if err := d.Decode(nil); err != nil {
				t.Fatalf("%s %s: %v", name, rname, err)
			}
			if diff := sameImage(d.Image(), want); diff != "" {
				t.Errorf("%s %s: %s", name, rname, diff)
			}
		}
	}
}

// TestDecode_Twice: a Decoder decodes once.
func TestDecode_Twice(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, testImages(3, 3, 1)["rgb"])
	d, _, err := NewDecoder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(nil); err == nil {
		t.Error("second Decode succeeded")
	}
}

// TestDecoder_Opaque: gray and truecolor files say so, and their images are opaque; files
// with alpha or a palette do not claim it.
func TestDecoder_Opaque(t *testing.T) {
	want := map[string]bool{"gray": true, "rgb": true, "rgba": false, "paletted": false, "tpaletted": false}
	for name, img := range testImages(9, 7, 3) {
		d, _ := encodedDecoder(t, name, img)
		if err := d.Decode(nil); err != nil {
			t.Fatal(err)
		}
		if d.Opaque() != want[name] {
			t.Errorf("%s: Opaque() = %v, want %v", name, d.Opaque(), want[name])
		}
		if o, ok := d.Image().(interface{ Opaque() bool }); d.Opaque() && ok && !o.Opaque() {
			t.Errorf("%s: Opaque() but the image has alpha", name)
		}
	}
}

// encodedDecoder writes img with image/png and opens the file with NewDecoder, which must
// take it; it returns the decoder and the file.
func encodedDecoder(t *testing.T, name string, img image.Image) (*Decoder, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	d, ok, err := NewDecoder(bytes.NewReader(buf.Bytes()))
	if err != nil || !ok {
		t.Fatalf("%s: %v %v", name, ok, err)
	}
	return d, buf.Bytes()
}
