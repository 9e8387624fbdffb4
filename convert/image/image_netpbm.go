package image

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"strconv"
	"strings"

	"github.com/convsvc/convsvc/convert"
)

// pnmHeader is a Netpbm header: P1-P6 (PBM, PGM, PPM, plain or raw) or P7 (PAM).
type pnmHeader struct {
	format        byte // '1'..'7'
	width, height int
	depth         int // samples per pixel: 1 gray (or black and white), 2 gray+alpha, 3 RGB, 4 RGBA
	maxval        int
	dataOff       int64 // where the raster starts
}

// maxPNMHeader bounds the header, comments included.
const maxPNMHeader = 64 << 10

// readPNMHeader parses a Netpbm header itself: spakin/netpbm's parser loops forever (and, in
// a header, allocates without bound) on a comment that reaches the end of the file, and
// panics on black-and-white PAM. Numbers are bounded, every field checked.
func readPNMHeader(r sizedReaderAt) (pnmHeader, error) {
	buf := make([]byte, min(r.Size(), maxPNMHeader))
	n, err := r.ReadAt(buf, 0)
	if n < len(buf) && err != nil {
		return pnmHeader{}, err
	}
	p := &pnmParser{buf: buf}
	if len(buf) < 3 || buf[0] != 'P' || buf[1] < '1' || buf[1] > '7' {
		return pnmHeader{}, errors.New("netpbm: not a Netpbm file")
	}
	h := pnmHeader{format: buf[1]}
	p.pos = 2
	if h.format == '7' {
		if err := p.pam(&h); err != nil {
			return pnmHeader{}, err
		}
		return h, nil
	}
	if !netpbmSpace(p.peek()) {
		return pnmHeader{}, errors.New("netpbm: no whitespace after the magic number")
	}
	fields := []*int{&h.width, &h.height, &h.maxval}
	if h.format == '1' || h.format == '4' {
		fields, h.maxval = fields[:2], 1
	}
	for _, f := range fields {
		if *f, err = p.number(); err != nil {
			return pnmHeader{}, err
		}
	}
	// Exactly one whitespace character separates the header from the raster.
	if !netpbmSpace(p.peek()) {
		return pnmHeader{}, p.eofOr(errors.New("netpbm: no whitespace after the header"))
	}
	p.pos++
	h.depth = 1
	if h.format == '3' || h.format == '6' {
		h.depth = 3
	}
	h.dataOff = int64(p.pos)
	return h, h.validate()
}

func (h pnmHeader) validate() error {
	switch {
	case h.width < 1 || h.height < 1:
		return fmt.Errorf("netpbm: image size %dx%d", h.width, h.height)
	case h.maxval < 1 || h.maxval > 65535:
		return fmt.Errorf("netpbm: maxval %d", h.maxval)
	case h.depth < 1 || h.depth > 4:
		return fmt.Errorf("netpbm: depth %d", h.depth)
	}
	return nil
}

type pnmParser struct {
	buf []byte
	pos int
}

func (p *pnmParser) peek() byte {
	if p.pos >= len(p.buf) {
		return 0
	}
	return p.buf[p.pos]
}

// eofOr reports the end of the buffer as truncation, anything else as err.
func (p *pnmParser) eofOr(err error) error {
	if p.pos >= len(p.buf) {
		return fmt.Errorf("netpbm: header: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// number skips whitespace and comments, then reads a decimal number of at most 9 digits.
func (p *pnmParser) number() (int, error) {
	for {
		switch c := p.peek(); {
		case netpbmSpace(c):
			p.pos++
			continue
		case c == '#':
			end := bytes.IndexAny(p.buf[p.pos:], "\r\n")
			if end < 0 {
				p.pos = len(p.buf)
				return 0, p.eofOr(nil)
			}
			p.pos += end
			continue
		}
		break
	}
	start := p.pos
	v := 0
	for p.pos < len(p.buf) && p.buf[p.pos] >= '0' && p.buf[p.pos] <= '9' {
		if p.pos-start == 9 {
			return 0, errors.New("netpbm: number too large")
		}
		v = v*10 + int(p.buf[p.pos]-'0')
		p.pos++
	}
	if p.pos == start {
		return 0, p.eofOr(fmt.Errorf("netpbm: unexpected %q in the header", p.peek()))
	}
	return v, nil
}

// pam parses the lines of a PAM header up to ENDHDR.
func (p *pnmParser) pam(h *pnmHeader) error {
	if c := p.peek(); c != '\n' && c != '\r' {
		return errors.New("netpbm: no newline after P7")
	}
	var tuple []string
	for {
		end := bytes.IndexByte(p.buf[p.pos:], '\n')
		if end < 0 {
			p.pos = len(p.buf)
			return p.eofOr(nil)
		}
		line := strings.TrimSpace(string(p.buf[p.pos : p.pos+end]))
		p.pos += end + 1
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, _ := strings.Cut(line, " ")
		value = strings.TrimSpace(value)
		var field *int
		switch key {
		case "ENDHDR":
			h.dataOff = int64(p.pos)
			return p.pamTuple(h, strings.Join(tuple, " "))
		case "WIDTH":
			field = &h.width
		case "HEIGHT":
			field = &h.height
		case "DEPTH":
			field = &h.depth
		case "MAXVAL":
			field = &h.maxval
		case "TUPLTYPE":
			tuple = append(tuple, value)
			continue
		default:
			return fmt.Errorf("netpbm: unknown PAM header line %q", key)
		}
		v, err := strconv.Atoi(value)
		if err != nil || len(value) > 9 {
			return fmt.Errorf("netpbm: PAM %s %q", key, value)
		}
		*field = v
	}
}

// pamTuple checks a PAM tuple type against its depth; unknown types go by depth alone.
func (p *pnmParser) pamTuple(h *pnmHeader, tuple string) error {
	want := map[string]int{
		"BLACKANDWHITE": 1, "GRAYSCALE": 1, "BLACKANDWHITE_ALPHA": 2, "GRAYSCALE_ALPHA": 2, "RGB": 3, "RGB_ALPHA": 4,
	}
	if d, ok := want[tuple]; ok && d != h.depth {
		return fmt.Errorf("netpbm: tuple type %s with depth %d", tuple, h.depth)
	}
	return h.validate()
}

// rasterBytes is the least the raster can take: every sample in full for the binary
// formats (PBM's bits packed by row), at least one character a sample for plain ones.
func (h pnmHeader) rasterBytes() int64 {
	w, ht := int64(h.width), int64(h.height)
	bps := int64(1)
	if h.maxval > 255 {
		bps = 2
	}
	switch h.format {
	case '4':
		return (w + 7) / 8 * ht
	case '5', '6', '7':
		return w * ht * int64(h.depth) * bps
	}
	return w * ht * int64(h.depth)
}

func (h pnmHeader) colorModel() color.Model {
	switch {
	case h.depth == 1 && h.maxval > 255:
		return color.Gray16Model
	case h.depth == 1:
		return color.GrayModel
	case h.maxval > 255:
		return color.NRGBA64Model
	}
	return color.NRGBAModel
}

// netpbmDecodeConfig reads a PBM, PGM, PPM or PAM header.
func netpbmDecodeConfig(r io.Reader) (image.Config, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return image.Config{}, errors.New("netpbm: needs random access")
	}
	h, err := readPNMHeader(ra)
	if err != nil {
		return image.Config{}, err
	}
	return image.Config{ColorModel: h.colorModel(), Width: h.width, Height: h.height}, nil
}

// checkNetpbm rejects a file too short for the raster its header claims, before any of it
// is allocated.
func checkNetpbm(r sizedReaderAt, cfg image.Config) error {
	h, err := readPNMHeader(r)
	if err != nil {
		return err
	}
	if need := h.dataOff + h.rasterBytes(); need > r.Size() {
		return fmt.Errorf("netpbm: %dx%d pixels need %d bytes, the file has %d: %w", h.width, h.height, need, r.Size(), io.ErrUnexpectedEOF)
	}
	return nil
}

// decodeNetpbm decodes any Netpbm file into a standard layout: Gray, RGBA or NRGBA for maxval
// up to 255 (8-bit stays 8-bit), Gray16, RGBA64 or NRGBA64 above, every sample scaled from
// 0..maxval to the full range. PBM's 1 is black, PAM BLACKANDWHITE's 1 white, as specified.
func decodeNetpbm(ctx context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return nil, errors.New("netpbm: needs random access")
	}
	h, err := readPNMHeader(ra)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(ra, h.dataOff, ra.Size()-h.dataOff), 64<<10)
	bps := 1
	if h.maxval > 255 {
		bps = 2
	}
	rowLen := h.width * h.depth * bps
	pix := make([]byte, rowLen*h.height)
	switch h.format {
	case '5', '6', '7':
		for y := 0; y < h.height; y++ {
			if y%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			if _, err := io.ReadFull(br, pix[y*rowLen:(y+1)*rowLen]); err != nil {
				return nil, err
			}
		}
		if err := checkSamples(pix, bps, h.maxval); err != nil {
			return nil, err
		}
	case '4':
		packed := make([]byte, (h.width+7)/8)
		for y := 0; y < h.height; y++ {
			if _, err := io.ReadFull(br, packed); err != nil {
				return nil, err
			}
			row := pix[y*rowLen:]
			for x := 0; x < h.width; x++ {
				row[x] = packed[x/8] >> (7 - x%8) & 1
			}
		}
	default:
		if err := readPlainSamples(ctx, br, h, pix, bps); err != nil {
			return nil, err
		}
	}
	if h.format == '1' || h.format == '4' {
		// PBM: 1 is black.
		for i := range pix {
			pix[i] ^= 1
		}
	}
	return samplesToImage(pix, rowLen, image.Rect(0, 0, h.width, h.height), h.depth, bps, h.maxval), nil
}

// checkSamples rejects binary samples above maxval, which would scale past the full range.
func checkSamples(pix []byte, bps, maxval int) error {
	if maxval == 255 || maxval == 65535 {
		return nil
	}
	for i := 0; i < len(pix); i += bps {
		v := int(pix[i])
		if bps == 2 {
			v = int(binary.BigEndian.Uint16(pix[i:]))
		}
		if v > maxval {
			return fmt.Errorf("netpbm: sample %d over maxval %d", v, maxval)
		}
	}
	return nil
}

// readPlainSamples reads the decimal samples of P1, P2 and P3 rasters. PBM digits may run
// together; comments run to the end of their line (or of the file).
func readPlainSamples(ctx context.Context, br *bufio.Reader, h pnmHeader, pix []byte, bps int) error {
	n := len(pix) / bps
	for i := 0; i < n; i++ {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c, err := skipPNMSpace(br)
		if err != nil {
			return err
		}
		if c < '0' || c > '9' {
			return fmt.Errorf("netpbm: unexpected %q in the raster", c)
		}
		v := int(c - '0')
		if h.format != '1' {
			for digits := 1; ; digits++ {
				c, err := br.ReadByte()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				if c < '0' || c > '9' {
					br.UnreadByte()
					break
				}
				if v = v*10 + int(c-'0'); digits > 5 || v > h.maxval {
					return fmt.Errorf("netpbm: sample over maxval %d", h.maxval)
				}
			}
		}
		if v > h.maxval {
			return fmt.Errorf("netpbm: sample %d over maxval %d", v, h.maxval)
		}
		if bps == 2 {
			binary.BigEndian.PutUint16(pix[2*i:], uint16(v))
		} else {
			pix[i] = uint8(v)
		}
	}
	return nil
}

// skipPNMSpace returns the next byte that is neither whitespace nor in a comment.
func skipPNMSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch {
		case netpbmSpace(c):
		case c == '#':
			for c != '\n' && c != '\r' {
				if c, err = br.ReadByte(); err != nil {
					return 0, err
				}
			}
		default:
			return c, nil
		}
	}
}

// samplesToImage converts interleaved Netpbm samples (channels of gray, gray+alpha, RGB or
// RGBA; 1 or 2 big-endian bytes each; 0..maxval) to a standard image. Netpbm alpha is
// straight, so colour with alpha becomes NRGBA.
func samplesToImage(pix []byte, stride int, rect image.Rectangle, channels, sampleBytes, maxval int) image.Image {
	w, h := rect.Dx(), rect.Dy()
	full := 255
	if sampleBytes == 2 {
		full = 65535
	}
	maxval = max(maxval, 1)
	scale := func(v int) int { return (v*full + maxval/2) / maxval }
	read := func(p []byte, i int) int {
		if sampleBytes == 2 {
			return int(binary.BigEndian.Uint16(p[2*i:]))
		}
		return int(p[i])
	}
	bounds := image.Rect(0, 0, w, h)
	if channels == 1 && sampleBytes == 1 && maxval == 255 {
		return &image.Gray{Pix: pix, Stride: stride, Rect: bounds}
	}
	if channels == 4 && sampleBytes == 1 && maxval == 255 {
		return &image.NRGBA{Pix: pix, Stride: stride, Rect: bounds}
	}
	// Output: out channels (1 gray or 4 RGBA), outBytes each.
	var dst image.Image
	var out []byte
	var outStride, outCh int
	switch {
	case channels == 1 && sampleBytes == 1:
		g := image.NewGray(bounds)
		dst, out, outStride, outCh = g, g.Pix, g.Stride, 1
	case channels == 1:
		g := image.NewGray16(bounds)
		dst, out, outStride, outCh = g, g.Pix, g.Stride, 1
	case channels == 3 && sampleBytes == 1:
		m := image.NewRGBA(bounds) // opaque: the same bytes as NRGBA
		dst, out, outStride, outCh = m, m.Pix, m.Stride, 4
	case channels == 3:
		m := image.NewRGBA64(bounds)
		dst, out, outStride, outCh = m, m.Pix, m.Stride, 4
	case sampleBytes == 1:
		m := image.NewNRGBA(bounds)
		dst, out, outStride, outCh = m, m.Pix, m.Stride, 4
	default:
		m := image.NewNRGBA64(bounds)
		dst, out, outStride, outCh = m, m.Pix, m.Stride, 4
	}
	put := func(p []byte, i, v int) {
		if sampleBytes == 2 {
			binary.BigEndian.PutUint16(p[2*i:], uint16(v))
		} else {
			p[i] = uint8(v)
		}
	}
	for y := 0; y < h; y++ {
		src := pix[y*stride:]
		row := out[y*outStride:]
		for x := 0; x < w; x++ {
			s := x * channels
			o := x * outCh
			switch channels {
			case 1:
				put(row, o, scale(read(src, s)))
			case 2:
				g, a := scale(read(src, s)), scale(read(src, s+1))
				put(row, o, g)
				put(row, o+1, g)
				put(row, o+2, g)
				put(row, o+3, a)
			case 3:
				put(row, o, scale(read(src, s)))
				put(row, o+1, scale(read(src, s+1)))
				put(row, o+2, scale(read(src, s+2)))
				put(row, o+3, full)
			case 4:
				put(row, o, scale(read(src, s)))
				put(row, o+1, scale(read(src, s+1)))
				put(row, o+2, scale(read(src, s+2)))
				put(row, o+3, scale(read(src, s+3)))
			}
		}
	}
	return dst
}

// encodePPM writes a binary PPM (P6) itself: spakin/netpbm's encoder passes every sample
// through a channel and is about 20 times slower. 16-bit sources are written with maxval 65535,
// others with 255; PPM has no alpha, so transparent pixels are laid over white, as for JPEG.
func encodePPM(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 64<<10)
	b := img.Bounds()
	wide := false
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		wide = true
	}
	maxval := 255
	if wide {
		maxval = 65535
	}
	bw.WriteString("P6\n" + strconv.Itoa(b.Dx()) + " " + strconv.Itoa(b.Dy()) + "\n" + strconv.Itoa(maxval) + "\n")
	if wide {
		row := make([]byte, 6*b.Dx())
		for y := b.Min.Y; y < b.Max.Y; y++ {
			if (y-b.Min.Y)%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64)
				a := uint32(c.A)
				over := func(v uint16) uint16 { return uint16((uint32(v)*a + 65535*(65535-a) + 32767) / 65535) }
				i := 6 * (x - b.Min.X)
				binary.BigEndian.PutUint16(row[i:], over(c.R))
				binary.BigEndian.PutUint16(row[i+2:], over(c.G))
				binary.BigEndian.PutUint16(row[i+4:], over(c.B))
			}
			bw.Write(row)
		}
		return bw.Flush()
	}
	m := flattenWhite(To8Bit(img))
	row := make([]byte, 3*b.Dx())
	for y := 0; y < b.Dy(); y++ {
		if y%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch s := m.(type) {
		case *image.Gray:
			for x, v := range s.Pix[y*s.Stride : y*s.Stride+b.Dx()] {
				row[3*x], row[3*x+1], row[3*x+2] = v, v, v
			}
		case *image.RGBA: // opaque after flattenWhite
			src := s.Pix[y*s.Stride:]
			for x := 0; x < b.Dx(); x++ {
				row[3*x], row[3*x+1], row[3*x+2] = src[4*x], src[4*x+1], src[4*x+2]
			}
		default:
			mb := m.Bounds()
			for x := 0; x < b.Dx(); x++ {
				r, g, bl, _ := m.At(mb.Min.X+x, mb.Min.Y+y).RGBA()
				row[3*x], row[3*x+1], row[3*x+2] = uint8(r>>8), uint8(g>>8), uint8(bl>>8)
			}
		}
		bw.Write(row)
	}
	return bw.Flush()
}

// netpbmSpace reports whether c is whitespace in a Netpbm header.
func netpbmSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
