package image

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"

	"github.com/xfmoulet/qoi"

	"github.com/convsvc/convsvc/convert"
)

// QOI layout (qoiformat.org): a 14-byte header, chunks, and an 8-byte end marker.
const (
	qoiHeaderLen = 14
	qoiEndMarker = "\x00\x00\x00\x00\x00\x00\x00\x01"
	qoiMaxRun    = 62 // pixels one QOI_OP_RUN byte can stand for
)

// qoiDecodeConfig reads the header, checking the fields xfmoulet/qoi leaves unchecked.
func qoiDecodeConfig(r io.Reader) (image.Config, error) {
	var h [qoiHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return image.Config{}, err
	}
	if string(h[:4]) != "qoif" {
		return image.Config{}, errors.New("qoi: invalid magic")
	}
	if h[12] != 3 && h[12] != 4 {
		return image.Config{}, fmt.Errorf("qoi: %d channels", h[12])
	}
	if h[13] > 1 {
		return image.Config{}, fmt.Errorf("qoi: colour space %d", h[13])
	}
	w, ht := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
	if w > 1<<30 || ht > 1<<30 {
		return image.Config{}, fmt.Errorf("qoi: image size %dx%d out of range", w, ht)
	}
	return image.Config{ColorModel: color.NRGBAModel, Width: int(w), Height: int(ht)}, nil
}

// checkQOI wants the end marker (the decoder silently leaves a truncated image's missing pixels
// black) and no more pixels than the data could describe: one byte stands for at most 62.
func checkQOI(r sizedReaderAt, cfg image.Config) error {
	data := r.Size() - qoiHeaderLen - int64(len(qoiEndMarker))
	if data < 0 {
		return io.ErrUnexpectedEOF
	}
	var end [len(qoiEndMarker)]byte
	if _, err := r.ReadAt(end[:], r.Size()-int64(len(end))); err != nil {
		return err
	}
	if string(end[:]) != qoiEndMarker {
		return fmt.Errorf("qoi: no end marker: %w", io.ErrUnexpectedEOF)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > qoiMaxRun*data {
		return convert.Errorf(nil, "input is not a valid QOI file (%dx%d pixels cannot come from %d bytes of data)", cfg.Width, cfg.Height, data)
	}
	return nil
}

func decodeQOI(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	return qoi.Decode(r)
}

// encodeQOI writes QOI itself: xfmoulet/qoi's encoder writes premultiplied colours into a
// format that stores them straight, darkening every translucent pixel. Opaque images get
// three channels in the header, others four.
func encodeQOI(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	m := toNRGBA(To8Bit(img))
	b := m.Bounds()
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 64<<10)
	var h [qoiHeaderLen]byte
	copy(h[:], "qoif")
	binary.BigEndian.PutUint32(h[4:], uint32(b.Dx()))
	binary.BigEndian.PutUint32(h[8:], uint32(b.Dy()))
	h[12] = 4
	if m.Opaque() {
		h[12] = 3
	}
	bw.Write(h[:])

	var index [64][4]byte
	prev := [4]byte{0, 0, 0, 255}
	run := 0
	last := b.Dx() * b.Dy()
	n := 0
	for y := 0; y < b.Dy(); y++ {
		if y%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		row := m.Pix[y*m.Stride : y*m.Stride+4*b.Dx()]
		for i := 0; i < len(row); i += 4 {
			px := [4]byte{row[i], row[i+1], row[i+2], row[i+3]}
			n++
			if px == prev {
				run++
				if run == qoiMaxRun || n == last {
					bw.WriteByte(0xc0 | byte(run-1))
					run = 0
				}
				continue
			}
			if run > 0 {
				bw.WriteByte(0xc0 | byte(run-1))
				run = 0
			}
			hash := (int(px[0])*3 + int(px[1])*5 + int(px[2])*7 + int(px[3])*11) % 64
			switch {
			case index[hash] == px:
				bw.WriteByte(byte(hash))
			case px[3] != prev[3]:
				index[hash] = px
				bw.WriteByte(0xff)
				writeBytes(bw, px[0], px[1], px[2], px[3])
			default:
				index[hash] = px
				vr, vg, vb := int8(px[0]-prev[0]), int8(px[1]-prev[1]), int8(px[2]-prev[2])
				vgr, vgb := vr-vg, vb-vg
				switch {
				case vr > -3 && vr < 2 && vg > -3 && vg < 2 && vb > -3 && vb < 2:
					bw.WriteByte(0x40 | byte(vr+2)<<4 | byte(vg+2)<<2 | byte(vb+2))
				case vgr > -9 && vgr < 8 && vg > -33 && vg < 32 && vgb > -9 && vgb < 8:
					bw.WriteByte(0x80 | byte(vg+32))
					bw.WriteByte(byte(vgr+8)<<4 | byte(vgb+8))
				default:
					bw.WriteByte(0xfe)
					writeBytes(bw, px[0], px[1], px[2])
				}
			}
			prev = px
		}
	}
	bw.WriteString(qoiEndMarker)
	return bw.Flush()
}

// writeBytes writes bytes one by one: a slice of a local array passed to Write escapes, which
// costs an allocation per pixel.
func writeBytes(bw *bufio.Writer, bs ...byte) {
	for _, b := range bs {
		bw.WriteByte(b)
	}
}
