package wasmcodec

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image"
)

//go:embed jxldecode.wasm.gz
var jxlDecodeWasm []byte

// jxlDecoder is libjxl 0.11.2's decoder.
var jxlDecoder = &codec{name: "jxl", gz: jxlDecodeWasm}

// ErrJXLDecode reports that libjxl could not decode a file (a truncated one included).
var ErrJXLDecode = errors.New("jpegxl: decode failed") // the words users saw before

// DecodeJXL decodes a JPEG XL file's image (the first frame of an animation), oriented as libjxl
// outputs it. 8-bit images come back as *image.NRGBA, 16-bit ones as *image.NRGBA64.
func DecodeJXL(ctx context.Context, data []byte) (image.Image, error) {
	in, err := jxlDecoder.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	defer in.close()

	src, info, dims, err := in.decodeHeader(data, ErrJXLDecode)
	if err != nil {
		return nil, err
	}
	w, h, depth, count := int(dims[0]), int(dims[1]), dims[2], int(dims[3])
	bpp := 4
	if depth == 16 {
		bpp = 8 // decode.c asks for 16-bit big-endian samples then
	}
	if w <= 0 || h <= 0 || int64(w)*int64(h)*int64(bpp) > 1<<32-1 {
		return nil, fmt.Errorf("%w: image size %dx%d out of range", ErrJXLDecode, w, h)
	}
	if count < 1 {
		count = 1
	}
	size := w * h * bpp
	// Room for one duration (4 bytes) per frame the decoder reports before it stops after the first.
	pix, err := in.decodePixels(src, len(data), info, size, 4*count, ErrJXLDecode)
	if err != nil {
		return nil, err
	}
	rect := image.Rect(0, 0, w, h)
	if bpp == 8 {
		m := image.NewNRGBA64(rect)
		copy(m.Pix, pix)
		return m, nil
	}
	m := image.NewNRGBA(rect)
	copy(m.Pix, pix)
	return m, nil
}
