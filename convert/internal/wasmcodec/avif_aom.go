package wasmcodec

import (
	"context"
	"errors"
	"fmt"
	"image"
)

// The direct AV1 path, built only with -tags aomsimd (docs/decisions.md: measured, it does not
// yet pay for its 1.2 MB). An opaque, lossy image skips libavif: Go turns its RGB into YUV
// planes written straight into the encoder's memory, aomenc.wasm (libaom's encoder alone,
// built with WebAssembly SIMD at -O3 by aomenc/build.sh) codes them with the settings libavif
// gives libaom for a still image, and Go writes the AVIF container around the coded frame, as
// libavif lays it out (so the grid code reads it as it reads libavif's files). Images with
// alpha and lossless ones go through libavif (avif.wasm) in any build.

// aomEncoder is libaom's AV1 encoder with convsvc's glue (aomenc/aomenc.c), when this binary
// embeds it (aomencWasm, set by avif_aom_embed.go under the aomsimd build tag).
var aomEncoder = &codec{name: "aomenc", gz: aomencWasm}

// aomencWasm is aomenc.wasm.gz when built with -tags aomsimd, else nil (no direct path).
var aomencWasm []byte

// aomDirect reports whether an opaque image is coded through aomEncoder: lossy, in 4:2:0,
// 4:2:2 or 4:4:4 (the binary embedding aomenc.wasm, and aomDirectOff unset).
func aomDirect(opts AVIFOptions) bool {
	if opts.Lossless || aomDirectOff || aomencWasm == nil {
		return false
	}
	switch opts.Chroma {
	case AVIFYUV420, AVIFYUV422, AVIFYUV444:
		return true
	}
	return false
}

// aomDirectOff sends every image through libavif: for tests that compare the two paths.
var aomDirectOff bool

// avifQuantizer is libavif's mapping of quality 0..100 to libaom's quantizer 63..0.
func avifQuantizer(quality int) int {
	quality = max(0, min(100, quality))
	return ((100-quality)*63 + 50) / 100
}

// aomMatrixUnspecified is the matrix_coefficients value libavif writes for an sRGB image it
// converts with BT.601's coefficients (CICP 2, "unspecified"; decoders then use BT.601).
const aomMatrixUnspecified = 2

// encodeAOMOne codes the opaque m in a fresh aomEncoder instance and hands the AVIF file to out.
func encodeAOMOne(ctx context.Context, m *image.RGBA, opts AVIFOptions, out func([]byte) error) error {
	width, height := m.Rect.Dx(), m.Rect.Dy()
	xs, ys := 0, 0
	switch opts.Chroma {
	case AVIFYUV420:
		xs, ys = 1, 1
	case AVIFYUV422:
		xs = 1
	}
	cw, ch := (width+xs)>>xs, (height+ys)>>ys
	in, err := aomEncoder.instantiate(ctx)
	if err != nil {
		return err
	}
	defer in.close()

	// The planes are written in place in the instance's memory: no copy of the RGB goes in.
	ySize, cSize := width*height, cw*ch
	planes, err := in.malloc(ySize + 2*cSize)
	if err != nil {
		return err
	}
	buf, err := in.read(planes, ySize+2*cSize)
	if err != nil {
		return err
	}
	rgbToYUV(m, buf[:ySize], buf[ySize:ySize+cSize], buf[ySize+cSize:], xs, ys)
	sizePtr, err := in.malloc(4)
	if err != nil {
		return err
	}
	// encode(y, u, v, width, height, chroma, quantizer, speed, lossless, full_range, matrix, &size)
	res, err := in.call("encode", uint64(planes), uint64(planes)+uint64(ySize), uint64(planes)+uint64(ySize+cSize),
		uint64(width), uint64(height), uint64(opts.Chroma), uint64(avifQuantizer(opts.Quality)), uint64(max(0, opts.Speed)),
		0, 1, aomMatrixUnspecified, uint64(sizePtr))
	if err != nil {
		return err
	}
	obus, err := in.encoded(res, sizePtr)
	if err != nil {
		return err
	}
	file, err := avifStillFile(width, height, opts.Chroma, obus)
	if err != nil {
		return err
	}
	return out(file)
}

// rgbToYUV converts the opaque m to full-range BT.601 (JPEG) Y, Cb and Cr planes, the chroma
// planes subsampled by xs, ys (0 or 1 each) by averaging the RGB of each block first, as
// libyuv's ARGBToJ420 (what libavif uses for this case) does.
func rgbToYUV(m *image.RGBA, yp, up, vp []byte, xs, ys int) {
	width, height := m.Rect.Dx(), m.Rect.Dy()
	pix, stride := m.Pix, m.Stride
	for y := range height {
		row := pix[y*stride : y*stride+4*width]
		out := yp[y*width : (y+1)*width]
		for x := range width {
			r, g, b := int32(row[4*x]), int32(row[4*x+1]), int32(row[4*x+2])
			out[x] = uint8((19595*r + 38470*g + 7471*b + 1<<15) >> 16)
		}
	}
	cw := (width + xs) >> xs
	for cy := 0; cy<<ys < height; cy++ {
		y0 := cy << ys
		y1 := min(y0+(1<<ys), height)
		uo := up[cy*cw : (cy+1)*cw]
		vo := vp[cy*cw : (cy+1)*cw]
		for cx := range cw {
			x0 := cx << xs
			x1 := min(x0+(1<<xs), width)
			var r, g, b, n int32
			for yy := y0; yy < y1; yy++ {
				p := yy*stride + 4*x0
				for xx := x0; xx < x1; xx++ {
					r += int32(pix[p])
					g += int32(pix[p+1])
					b += int32(pix[p+2])
					p += 4
					n++
				}
			}
			// Cb = 128 - 0.168736 R - 0.331264 G + 0.5 B; Cr = 128 + 0.5 R - 0.418688 G - 0.081312 B,
			// in 16-bit fixed point over the block's sums, rounded.
			half := n << 15
			cb := (-11059*r - 21709*g + 32768*b + half) / n
			cr := (32768*r - 27439*g - 5329*b + half) / n
			uo[cx] = clampByte(128 + floorShift16(cb))
			vo[cx] = clampByte(128 + floorShift16(cr))
		}
	}
}

// floorShift16 is v / 65536 rounded down (an arithmetic shift).
func floorShift16(v int32) int32 { return v >> 16 }

func clampByte(v int32) uint8 {
	return uint8(max(0, min(255, v)))
}

// errAV1Header reports coded data without the reduced still-picture sequence header libaom
// writes for one frame.
var errAV1Header = errors.New("avif: no still-picture AV1 sequence header in the coded frame")

// av1Config returns the av1C property's four bytes (AV1CodecConfigurationRecord without
// configOBUs) for a frame of 8-bit samples in the given chroma layout, taking the profile and
// level from the reduced still-picture sequence header in obus.
func av1Config(obus []byte, chroma int) ([]byte, error) {
	for p := 0; p < len(obus); {
		h := obus[p]
		typ, ext, hasSize := h>>3&15, h>>2&1 == 1, h>>1&1 == 1
		p++
		if ext {
			p++
		}
		if !hasSize {
			return nil, errAV1Header
		}
		var size uint64
		for i := 0; ; i++ {
			if p >= len(obus) || i == 8 {
				return nil, errAV1Header
			}
			b := obus[p]
			p++
			size |= uint64(b&0x7f) << (7 * i)
			if b&0x80 == 0 {
				break
			}
		}
		if size > uint64(len(obus)-p) {
			return nil, errAV1Header
		}
		if typ != 1 { // OBU_SEQUENCE_HEADER
			p += int(size)
			continue
		}
		if size < 2 {
			return nil, errAV1Header
		}
		bits := uint16(obus[p])<<8 | uint16(obus[p+1])
		profile, reduced, level := bits>>13, bits>>11&1, bits>>6&31
		if reduced != 1 {
			return nil, errAV1Header
		}
		var sub byte
		switch chroma {
		case AVIFYUV420:
			sub = 0x0c // chroma_subsampling_x, chroma_subsampling_y
		case AVIFYUV422:
			sub = 0x08
		}
		// marker|version, seq_profile|seq_level_idx_0, tier 0, 8 bits, not monochrome,
		// chroma_sample_position 0; no initial_presentation_delay.
		return []byte{0x81, byte(profile)<<5 | byte(level), sub, 0}, nil
	}
	return nil, errAV1Header
}

// avifStillFile writes the AVIF of one width x height image coded as obus (8-bit, full range,
// BT.601 matrix, colour primaries and transfer unspecified), laid out as libavif lays out a
// still image: ftyp, meta (hdlr, pitm, iloc, iinf, iprp with ispe, pixi, av1C and colr), mdat.
func avifStillFile(width, height, chroma int, obus []byte) ([]byte, error) {
	cfg, err := av1Config(obus, chroma)
	if err != nil {
		return nil, err
	}
	profile, level := cfg[1]>>5, cfg[1]&31
	brands := [][]byte{[]byte("avif"), u32(0), []byte("avifmif1miaf")}
	switch {
	case profile == 0 && level <= 13: // AVIF Baseline: Main profile, level 5.1 at most
		brands = append(brands, []byte("MA1B"))
	case profile <= 1 && level <= 16: // AVIF Advanced: High profile, level 6.0 at most
		brands = append(brands, []byte("MA1A"))
	}
	ftyp := isoBox("ftyp", brands...)
	hdlr := isoBox("hdlr", fullBox(0, 0), u32(0), []byte("pict"), make([]byte, 12), []byte{0})
	pitm := isoBox("pitm", fullBox(0, 0), u16(1))
	infe := isoBox("infe", fullBox(2, 0), u16(1), u16(0), []byte("av01"), []byte("Color\x00"))
	iinf := isoBox("iinf", fullBox(0, 0), u16(1), infe)
	props := isoBox("ipco",
		isoBox("ispe", fullBox(0, 0), u32(width), u32(height)),
		isoBox("pixi", fullBox(0, 0), []byte{3, 8, 8, 8}),
		isoBox("av1C", cfg),
		isoBox("colr", []byte("nclx"), u16(2), u16(2), u16(aomMatrixUnspecified), []byte{0x80}))
	// ispe and pixi descriptive, av1C essential, colr descriptive.
	ipma := isoBox("ipma", fullBox(0, 0), u32(1), u16(1), []byte{4, 1, 2, 0x80 | 3, 4})
	iprp := isoBox("iprp", props, ipma)
	iloc := func(offset int) []byte {
		return isoBox("iloc", fullBox(0, 0), []byte{0x44, 0x00}, u16(1), u16(1), u16(0), u16(1), u32(offset), u32(len(obus)))
	}
	meta := func(offset int) []byte {
		return isoBox("meta", fullBox(0, 0), hdlr, pitm, iloc(offset), iinf, iprp)
	}
	head := len(ftyp) + len(meta(0)) + 8 // the mdat box's header
	if uint64(head)+uint64(len(obus)) > 1<<32-1 {
		return nil, fmt.Errorf("%w: %d bytes of coded data", ErrAVIFEncode, len(obus))
	}
	file := make([]byte, 0, head+len(obus))
	file = append(file, ftyp...)
	file = append(file, meta(head)...)
	file = append(file, u32(8+len(obus))...)
	file = append(file, "mdat"...)
	return append(file, obus...), nil
}

// isoBox returns an ISOBMFF box of type typ whose body is parts joined (32-bit size).
func isoBox(typ string, parts ...[]byte) []byte {
	size := 8
	for _, p := range parts {
		size += len(p)
	}
	b := make([]byte, 8, size)
	b[0], b[1], b[2], b[3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	copy(b[4:], typ)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// fullBox is a full box's version and flags.
func fullBox(version byte, flags uint32) []byte {
	return []byte{version, byte(flags >> 16), byte(flags >> 8), byte(flags)}
}

func u16(v int) []byte { return []byte{byte(v >> 8), byte(v)} }
func u32(v int) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
