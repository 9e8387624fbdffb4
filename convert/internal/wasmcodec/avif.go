package wasmcodec

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
)

//go:embed avif.wasm.gz
var avifWasm []byte

// avifCodec is libavif 1.4.2 with libaom 3.14.1 (encoder) and dav1d 1.5.3 (decoder): every
// decode, and the encodes aomDirect leaves to libavif (alpha, lossless).
var avifCodec = &codec{name: "avif", gz: avifWasm}

// AVIF chroma formats, libavif's avifPixelFormat values.
const (
	AVIFYUV444 = 1
	AVIFYUV422 = 2
	AVIFYUV420 = 3
)

// ErrAVIFDecode reports that libavif could not parse or decode a file.
var ErrAVIFDecode = errors.New("avif: decode failed")

// ErrAVIFEncode reports that libavif could not encode an image.
var ErrAVIFEncode = errors.New("avif: encode failed")

// DecodeAVIF decodes the primary image (the first frame of a sequence) of an AVIF file, as
// stored: the caller applies any irot/imir orientation. 8-bit images come back as *image.RGBA,
// deeper ones as *image.RGBA64, both premultiplied.
func DecodeAVIF(ctx context.Context, data []byte) (image.Image, error) {
	in, err := avifCodec.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	defer in.close()

	src, info, dims, err := in.decodeHeader(data, ErrAVIFDecode)
	if err != nil {
		return nil, err
	}
	w, h, depth := int(dims[0]), int(dims[1]), dims[2]
	bpp := 4
	if depth > 8 {
		bpp = 8
	}
	if w <= 0 || h <= 0 || int64(w)*int64(h)*int64(bpp) > 1<<32-1 {
		return nil, fmt.Errorf("%w: image size %dx%d out of range", ErrAVIFDecode, w, h)
	}
	size := w * h * bpp
	pix, err := in.decodePixels(src, len(data), info, size, 8, ErrAVIFDecode)
	if err != nil {
		return nil, err
	}
	rect := image.Rect(0, 0, w, h)
	if bpp == 8 {
		m := image.NewRGBA64(rect)
		for i := 0; i < size; i += 2 { // libavif writes native (little-endian) 16-bit samples
			binary.BigEndian.PutUint16(m.Pix[i:], binary.LittleEndian.Uint16(pix[i:]))
		}
		return m, nil
	}
	m := image.NewRGBA(rect)
	copy(m.Pix, pix)
	return m, nil
}

// AVIFOptions are the encoder's settings.
type AVIFOptions struct {
	Quality      int  // 0..100
	QualityAlpha int  // 0..100
	Speed        int  // libaom's, 0 (slow) .. 10 (fast)
	Chroma       int  // AVIFYUV444, AVIFYUV422 or AVIFYUV420
	Lossless     bool // quality 100 and 4:4:4 whatever the other fields say

	// Tiles, above 1, splits an opaque image into up to this many horizontal bands, encoded
	// side by side in instances of their own and stored as one AVIF grid image (AVIFTiles
	// says how many an image gets). 0 or 1: one image in one instance.
	Tiles int
	// Reserve, when set, is called before each instance past the first starts, with the
	// number of pixels of a band; that instance runs once it returns nil, and calls release
	// when it ends. The first instance never waits: it encodes the bands no other has taken,
	// so a reservation that is slow to come costs time, never a deadlock. Without Reserve,
	// every instance starts at once (the caller has accounted for them).
	Reserve func(ctx context.Context, bandPixels int64) (release func(), err error)
}

// EncodeAVIF writes m, 8-bit premultiplied with rows packed from (0, 0), as a still AVIF:
// a grid of AVIFTiles(width, height, opts.Tiles) bands when that is more than one.
func EncodeAVIF(ctx context.Context, w io.Writer, m *image.RGBA, opts AVIFOptions) error {
	width, height := m.Rect.Dx(), m.Rect.Dy()
	if m.Rect.Min != (image.Point{}) || m.Stride != 4*width || len(m.Pix) < 4*width*height {
		return errors.New("avif: EncodeAVIF needs rows packed from (0, 0)")
	}
	if opts.Lossless {
		opts.Quality, opts.QualityAlpha, opts.Chroma = 100, 100, AVIFYUV444
	}
	opaque := m.Opaque()
	if n := AVIFTiles(width, height, opts.Tiles); n > 1 && opaque {
		return encodeAVIFGrid(ctx, w, m, opts, n)
	}
	return encodeAVIFOne(ctx, m, opaque, opts, func(b []byte) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("avif: write: %w", err)
		}
		return nil
	})
}

// encodeAVIFOne encodes m (opaque says whether every pixel is) in a fresh instance and hands
// the file, a view of the instance's memory valid during the call, to out: through aomEncoder
// when aomDirect allows, else through libavif.
func encodeAVIFOne(ctx context.Context, m *image.RGBA, opaque bool, opts AVIFOptions, out func([]byte) error) error {
	if opaque && aomDirect(opts) {
		return encodeAOMOne(ctx, m, opts, out)
	}
	width, height := m.Rect.Dx(), m.Rect.Dy()
	in, err := avifCodec.instantiate(ctx)
	if err != nil {
		return err
	}
	defer in.close()

	src, err := in.malloc(4 * width * height)
	if err != nil {
		return err
	}
	if err := in.write(src, m.Pix[:4*width*height]); err != nil {
		return err
	}
	sizePtr, err := in.malloc(8)
	if err != nil {
		return err
	}
	lossless := uint64(0)
	if opts.Lossless {
		lossless = 1
	}
	// encode(rgb, width, height, &size, quality, quality_alpha, speed, chroma, lossless)
	res, err := in.call("encode", uint64(src), uint64(width), uint64(height), uint64(sizePtr),
		uint64(opts.Quality), uint64(opts.QualityAlpha), uint64(opts.Speed), uint64(opts.Chroma), lossless)
	if err != nil {
		return err
	}
	b, err := in.encoded(res, sizePtr)
	if err != nil {
		return err
	}
	return out(b)
}

// encoded returns the view of an encode function's output: res its pointer (0 on failure) and
// the 32-bit size_t at sizePtr its length.
func (in *instance) encoded(res uint64, sizePtr uint32) ([]byte, error) {
	size, err := in.u32(sizePtr)
	if err != nil {
		return nil, err
	}
	if res == 0 || size == 0 {
		return nil, ErrAVIFEncode
	}
	return in.read(uint32(res), int(size))
}
