package image

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"math"

	"github.com/HugoSmits86/nativewebp"
	gwebp "github.com/gen2brain/webp"
	"golang.org/x/image/webp"

	"github.com/convsvc/convsvc/convert"
)

// WebPQuality is the quality lossy WebP outputs are written with when the job sets none.
const WebPQuality = 85

// webpMethod is libwebp's effort (0 fast .. 6 slow). BenchmarkWebPMethod, 1000x1000 at
// quality 85 (2026-11-21 23:06, load 1.6): method 0 took 142 ms on the noisy photo and 152 ms
// on the JPEG-decoded one, against 281 and 234 ms for method 2 and 680-704 ms for cwebp's
// default 4, at the same PSNR (27.15 dB, 30.09 dB; method 4: 27.17, 30.06) and sizes 8% smaller
// and 0.5% larger than method 4's. The encoder is libwebp run as translated wasm (no SIMD), so
// its effort costs twice what it costs vips and ImageMagick: the fastest method that loses
// nothing measurable is the one to use.
const webpMethod = 0

// webpMaxSide is the largest width or height a WebP image can have (14-bit fields).
const webpMaxSide = 16383

// webpMaxAnimPixels bounds frames*width*height of an animated WebP whatever the pixel limit:
// the wasm2go libwebp addresses its frames with 32-bit offsets, 4 bytes a pixel.
const webpMaxAnimPixels = 400_000_000

// maxWebPChunks bounds the chunks walked: an animation past MaxFrames is refused anyway, and
// each chunk costs a read.
const maxWebPChunks = MaxFrames + 64

// webpInfo is what the RIFF chunks of a WebP file say before any pixel is decoded.
type webpInfo struct {
	extended      bool // VP8X: canvas size below
	width, height int
	animated      bool
	frames        int // ANMF chunks
	loopCount     int // from ANIM: 0 forever, n plays
}

// parseWebP walks a WebP file's chunks, reading only their headers and the VP8X and ANIM
// payloads. Chunks running past the end of the file mean it is truncated.
func parseWebP(r sizedReaderAt) (webpInfo, error) {
	var info webpInfo
	var hdr [12]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return info, err
	}
	if string(hdr[:4]) != "RIFF" || string(hdr[8:12]) != "WEBP" {
		return info, errors.New("webp: invalid format")
	}
	end := min(8+int64(binary.LittleEndian.Uint32(hdr[4:])), r.Size())
	var ch [18]byte
	for off, chunks := int64(12), 0; off+8 <= end; chunks++ {
		if chunks > maxWebPChunks {
			return info, fmt.Errorf("webp: more than %d chunks", maxWebPChunks)
		}
		n, err := r.ReadAt(ch[:], off)
		if n < 8 {
			return info, io.ErrUnexpectedEOF
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return info, err
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		payload := ch[8:n]
		switch string(ch[:4]) {
		case "VP8X":
			if off != 12 || size < 10 || len(payload) < 10 {
				return info, errors.New("webp: invalid VP8X chunk")
			}
			info.extended = true
			info.animated = payload[0]&0x02 != 0
			info.width = 1 + int(uint32(payload[4])|uint32(payload[5])<<8|uint32(payload[6])<<16)
			info.height = 1 + int(uint32(payload[7])|uint32(payload[8])<<8|uint32(payload[9])<<16)
		case "ANIM":
			if size < 6 || len(payload) < 6 {
				return info, errors.New("webp: invalid ANIM chunk")
			}
			info.loopCount = int(binary.LittleEndian.Uint16(payload[4:6]))
		case "ANMF":
			info.frames++
		}
		next := off + 8 + size + size&1
		if next > r.Size()+1 { // the last chunk's padding byte may be missing
			return info, io.ErrUnexpectedEOF
		}
		off = next
	}
	return info, nil
}

// webpDecodeConfig reads the canvas size of an extended (VP8X) file from its chunks, and the
// size of a simple one with x/image/webp.
func webpDecodeConfig(r io.Reader) (image.Config, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return webp.DecodeConfig(r)
	}
	info, err := parseWebP(ra)
	if err != nil {
		return image.Config{}, err
	}
	if !info.extended {
		return webp.DecodeConfig(r)
	}
	if info.animated && info.frames == 0 {
		return image.Config{}, errors.New("webp: animation without frames")
	}
	return image.Config{ColorModel: color.NRGBAModel, Width: info.width, Height: info.height}, nil
}

// webpFrames counts the frames of an animated WebP, 1 for a still image.
func webpFrames(r sizedReaderAt) (int, error) {
	info, err := parseWebP(r)
	if err != nil {
		return 0, err
	}
	if !info.animated {
		return 1, nil
	}
	return info.frames, nil
}

// decodeWebP decodes a still WebP with x/image/webp, which keeps lossless files exact and
// lossy ones in their YCbCr planes; the first frame of an animation (or a still file
// x/image/webp refuses) comes from libwebp, as RGBA.
func decodeWebP(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return webp.Decode(r)
	}
	info, err := parseWebP(ra)
	if err != nil {
		return nil, err
	}
	if !info.animated {
		img, err := webp.Decode(r)
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return img, err
		}
	}
	a, err := gwebp.DecodeAll(io.NewSectionReader(ra, 0, ra.Size()))
	if err != nil {
		return nil, err
	}
	if len(a.Image) == 0 {
		return nil, errors.New("webp: no frame decoded")
	}
	return a.Image[0], nil
}

// decodeWebPAll decodes every frame of an animated WebP with libwebp's animation decoder,
// which composes them into full canvases.
func decodeWebPAll(_ context.Context, r io.Reader, _ image.Config) (*animation, error) {
	ra := r.(sizedReaderAt)
	info, err := parseWebP(ra)
	if err != nil {
		return nil, err
	}
	if int64(info.frames)*int64(info.width)*int64(info.height) > webpMaxAnimPixels {
		return nil, convert.Errorf(nil, "animation has %d frames of %dx%d, over the %s megapixels an animated WebP may have in all",
			info.frames, info.width, info.height, Megapixels(webpMaxAnimPixels))
	}
	d, err := gwebp.DecodeAll(io.NewSectionReader(ra, 0, ra.Size()))
	if err != nil {
		return nil, err
	}
	a := &animation{frames: d.Image, loopCount: info.loopCount}
	for i := range d.Image {
		delay := 100
		if i < len(d.Delay) {
			delay = d.Delay[i]
		}
		a.delays = append(a.delays, delay)
	}
	return a, nil
}

// webpLossless reports whether the job asked for lossless WebP.
func webpLossless(opts convert.Options) bool { return opts.Lossless != nil && *opts.Lossless }

// encodeWebP writes lossy WebP with libwebp (translated to Go by wasm2go), or lossless WebP
// with the pure-Go nativewebp, which BenchmarkWebPLossless measured faster, smaller and
// lighter than libwebp's lossless mode here. Quality is ignored when lossless.
func encodeWebP(ctx context.Context, w io.Writer, img image.Image, opts convert.Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if webpLossless(opts) {
		// nativewebp's palette path panics on a fully transparent *image.Paletted: give it NRGBA.
		m := packedNRGBA(img)
		return losslessWebP(ctx, w,
			func(w io.Writer) error { return nativewebp.Encode(w, m, nil) },
			func(w io.Writer) error {
				return gwebp.Encode(w, m, gwebp.Options{Lossless: true, Exact: true, Method: webpMethod})
			})
	}
	quality := WebPQuality
	if opts.Quality != 0 {
		quality = opts.Quality
	}
	var m image.Image
	if pix, stride, ok := rgbaPixels(img); ok {
		// Opaque RGB(A) is converted to the planes here, as libwebp would (image_webp_yuv.go).
		if planes, opaque := vp8PlanesFromRGBA(pix, stride, img.Bounds().Dx(), img.Bounds().Dy()); opaque {
			m = planes
		}
	}
	switch s := img.(type) {
	case *image.NYCbCrA:
		// libwebp takes 4:2:0 planes as they are, sparing a round trip through RGB.
		if s.SubsampleRatio == image.YCbCrSubsampleRatio420 && s.Rect.Min == (image.Point{}) {
			m = s
		}
	case *image.YCbCr:
		// A 4:2:0 JPEG's planes go in as they are too, rescaled to VP8's range.
		if s.SubsampleRatio == image.YCbCrSubsampleRatio420 && s.Rect.Min == (image.Point{}) {
			m = vp8PlanesFromJPEG(s)
		}
	}
	if m == nil {
		m = packedNRGBA(img)
	}
	return GuardCodec("WebP encoder", func() error {
		return gwebp.Encode(&convert.ContextWriter{Ctx: ctx, W: w}, m, gwebp.Options{Quality: quality, Method: webpMethod})
	})
}

// losslessWebP runs a nativewebp encode into w and, when nativewebp panics before writing
// a byte, libwebp's lossless mode on the same pixels instead. nativewebp v1.2.0 sends a
// Huffman code whose one symbol is above 255 (a colour-cache hit: a single-colour image
// whose residuals are all zero, such as 1x1 black) down its full-code path, which indexes
// histo[-1] (FuzzDecodeImage found it); its output is built in memory and written at the end,
// so a panic leaves w untouched.
func losslessWebP(ctx context.Context, w io.Writer, native, fallback func(io.Writer) error) error {
	cw := &convert.CountingWriter{W: &convert.ContextWriter{Ctx: ctx, W: w}}
	panicked := false
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				panicked = true
				err = fmt.Errorf("WebP encoder failed: %v", r)
			}
		}()
		return native(cw)
	}()
	if !panicked || cw.N > 0 || ctx.Err() != nil {
		return err
	}
	return GuardCodec("WebP encoder (libwebp lossless)", func() error { return fallback(cw) })
}

// encodeWebPAll writes an animated WebP: lossy frames with libwebp's animation encoder (which
// merges a frame identical to the one before into its duration), lossless ones with nativewebp.
func encodeWebPAll(ctx context.Context, w io.Writer, a *animation, opts convert.Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if webpLossless(opts) {
		na := &nativewebp.Animation{LoopCount: uint16(min(a.loopCount, 0xffff))}
		for i, f := range a.frames {
			na.Images = append(na.Images, packedNRGBA(f))
			na.Durations = append(na.Durations, uint(max(a.delays[i], 0)))
			// Every frame is a full canvas, blended over the previous one: clear it first.
			na.Disposals = append(na.Disposals, 1)
		}
		return losslessWebP(ctx, w,
			func(w io.Writer) error { return nativewebp.EncodeAll(w, na, nil) },
			func(w io.Writer) error {
				return gwebp.EncodeAll(w, &gwebp.WEBP{Image: na.Images, Delay: a.delays, LoopCount: a.loopCount},
					gwebp.Options{Lossless: true, Exact: true, Method: webpMethod})
			})
	}
	quality := WebPQuality
	if opts.Quality != 0 {
		quality = opts.Quality
	}
	ga := &gwebp.WEBP{Delay: a.delays, LoopCount: a.loopCount}
	for _, f := range a.frames {
		ga.Image = append(ga.Image, packedNRGBA(f))
	}
	return GuardCodec("WebP encoder", func() error {
		err := gwebp.EncodeAll(&convert.ContextWriter{Ctx: ctx, W: w}, ga, gwebp.Options{Quality: quality, Method: webpMethod})
		if errors.Is(err, gwebp.ErrEncode) {
			return fmt.Errorf("libwebp could not encode the %d-frame animation: %w", len(a.frames), err)
		}
		return err
	})
}

// jpegToVP8Luma and jpegToVP8Chroma map JPEG's full-range (JFIF) Y and Cb/Cr to the
// studio range VP8 uses (Y 16-235, chroma 16-240 around 128), which is what libwebp's own
// RGB->YUV conversion computes from the same RGB: BT.601 scaled by 219/255 and 224/255.
var jpegToVP8Luma, jpegToVP8Chroma = func() (y, c [256]uint8) {
	for i := range 256 {
		y[i] = uint8(16 + math.Round(float64(i)*219/255))
		c[i] = uint8(128 + math.Round(float64(i-128)*224/255))
	}
	return y, c
}()

// vp8PlanesFromJPEG returns a decoded 4:2:0 JPEG's planes in VP8's range with an opaque
// alpha plane, the layout gen2brain/webp hands to libwebp without converting: this spares
// the YCbCr->RGBA conversion in Go and libwebp's RGBA->YUV in the (slower) translated wasm,
// and keeps the JPEG's own chroma samples. BenchmarkWebPFromJPEG and TestWebPFromJPEGPlanes
// have the time and the fidelity.
func vp8PlanesFromJPEG(s *image.YCbCr) *image.NYCbCrA {
	w, h := s.Rect.Dx(), s.Rect.Dy()
	m := image.NewNYCbCrA(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := range h {
		dst := m.Y[y*m.YStride:][:w]
		for x, v := range s.Y[y*s.YStride:][:w] {
			dst[x] = jpegToVP8Luma[v]
		}
	}
	cw := (w + 1) / 2
	for y := range (h + 1) / 2 {
		cb, cr := s.Cb[y*s.CStride:][:cw], s.Cr[y*s.CStride:][:cw]
		dcb, dcr := m.Cb[y*m.CStride:][:cw], m.Cr[y*m.CStride:][:cw]
		for x := range cw {
			dcb[x] = jpegToVP8Chroma[cb[x]]
			dcr[x] = jpegToVP8Chroma[cr[x]]
		}
	}
	for i := range m.A {
		m.A[i] = 0xff
	}
	return m
}

// packedNRGBA returns an 8-bit, non-premultiplied image whose rows are packed from (0, 0):
// the layout the WebP encoders read their bytes from.
func packedNRGBA(img image.Image) *image.NRGBA {
	m := toNRGBA(To8Bit(img))
	b := m.Bounds()
	if b.Min == (image.Point{}) && m.Stride == 4*b.Dx() {
		return m
	}
	dst := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), m, b.Min, draw.Src)
	return dst
}
