package image

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"

	"github.com/convsvc/convsvc/convert/internal/wasmcodec"
)

// jxlContainerSig opens a JPEG XL file in the ISOBMFF-style container; a bare codestream
// opens with 0xff 0x0a instead.
const jxlContainerSig = "\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a"

// jxlHeaderLen is how much of the codestream the size header and orientation fit in.
const jxlHeaderLen = 64

// jxlDecodeConfig reads the image size from the codestream's SizeHeader and the orientation
// from its ImageMetadata, never running the wasm decoder. The size is the displayed one, as
// libjxl outputs it: orientations 5 to 8 swap width and height.
func jxlDecodeConfig(r io.Reader) (image.Config, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return image.Config{}, errors.New("jxl: needs random access")
	}
	head, err := jxlCodestreamHead(ra)
	if err != nil {
		return image.Config{}, err
	}
	w, h, orientation, err := parseJXLHeader(head)
	if err != nil {
		return image.Config{}, err
	}
	if orientation > 4 {
		w, h = h, w
	}
	return image.Config{ColorModel: color.NRGBAModel, Width: w, Height: h}, nil
}

// jxlCodestreamHead returns the first bytes of the codestream, from a bare one or from the
// jxlc or first jxlp box of a container, whose boxes must all lie within the file.
func jxlCodestreamHead(r sizedReaderAt) ([]byte, error) {
	var sig [12]byte
	n, err := r.ReadAt(sig[:], 0)
	if n < 2 {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	readHead := func(off, size int64) ([]byte, error) {
		head := make([]byte, min(size, jxlHeaderLen))
		if _, err := r.ReadAt(head, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return head, nil
	}
	if sig[0] == 0xff && sig[1] == 0x0a {
		return readHead(0, r.Size())
	}
	if n < len(sig) || string(sig[:]) != jxlContainerSig {
		return nil, errors.New("jxl: not a JPEG XL file")
	}
	boxes, err := readISOBoxes(r, 0, r.Size())
	if err != nil {
		return nil, err
	}
	for _, b := range boxes {
		switch b.typ {
		case "jxlc":
			return readHead(b.off, b.size)
		case "jxlp":
			// A 4-byte sequence number, then the first part of the codestream.
			if b.size < 4+2 {
				return nil, errors.New("jxl: empty jxlp box")
			}
			return readHead(b.off+4, b.size-4)
		}
	}
	return nil, errors.New("jxl: container without a codestream")
}

// jxlBits reads a JPEG XL codestream's bits, least significant first.
type jxlBits struct {
	data []byte
	pos  int // in bits
	err  error
}

func (b *jxlBits) u(n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		if b.pos/8 >= len(b.data) {
			b.err = io.ErrUnexpectedEOF
			return 0
		}
		v |= uint64(b.data[b.pos/8]>>(b.pos%8)&1) << i
		b.pos++
	}
	return v
}

// sizeU32 reads the U32(Bits(9)+1, Bits(13)+1, Bits(18)+1, Bits(30)+1) of a SizeHeader.
func (b *jxlBits) sizeU32() uint64 {
	return b.u([4]int{9, 13, 18, 30}[b.u(2)]) + 1
}

// parseJXLHeader decodes the SizeHeader after the 0xff 0x0a signature (ISO/IEC 18181-1
// clause D.2) and the orientation at the start of ImageMetadata (1 when all_default).
func parseJXLHeader(head []byte) (w, h, orientation int, err error) {
	if len(head) < 2 || head[0] != 0xff || head[1] != 0x0a {
		return 0, 0, 0, errors.New("jxl: codestream signature missing")
	}
	b := &jxlBits{data: head[2:]}
	var xs, ys uint64
	div8 := b.u(1) == 1
	if div8 {
		ys = (b.u(5) + 1) * 8
	} else {
		ys = b.sizeU32()
	}
	ratios := [8][2]uint64{{0, 0}, {1, 1}, {12, 10}, {4, 3}, {3, 2}, {16, 9}, {5, 4}, {2, 1}}
	switch ratio := b.u(3); {
	case ratio != 0:
		xs = ys * ratios[ratio][0] / ratios[ratio][1]
	case div8:
		xs = (b.u(5) + 1) * 8
	default:
		xs = b.sizeU32()
	}
	orientation = 1
	if allDefault := b.u(1) == 1; !allDefault {
		if extraFields := b.u(1) == 1; extraFields {
			orientation = int(b.u(3)) + 1
		}
	}
	if b.err != nil {
		return 0, 0, 0, fmt.Errorf("jxl: header: %w", b.err)
	}
	if xs > 1<<30 || ys > 1<<30 {
		return 0, 0, 0, fmt.Errorf("jxl: image size %dx%d out of range", xs, ys)
	}
	return int(xs), int(ys), orientation, nil
}

// decodeJXL decodes the image (the first frame of an animation) with libjxl compiled to wasm
// (convert/internal/wasmcodec). A truncated codestream is reported by libjxl only as a failed
// decode.
func decodeJXL(ctx context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return wasmcodec.DecodeJXL(ctx, data)
}
