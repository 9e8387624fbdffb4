package image

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"

	ico "github.com/sergeymakinen/go-ico"

	"github.com/convsvc/convsvc/convert"
)

// icoMaxEntries bounds the images an ICO file may list: go-ico reads every entry's header,
// and real icons carry a dozen sizes at most.
const icoMaxEntries = 256

// icoDecodeConfig checks the icon directory (entry count, every entry inside the file) and
// returns the size of the image go-ico will decode: the largest, read from its own PNG or
// BMP header rather than the directory's one-byte sizes.
func icoDecodeConfig(r io.Reader) (image.Config, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return image.Config{}, errors.New("ico: needs random access")
	}
	if err := checkICODirectory(ra); err != nil {
		return image.Config{}, err
	}
	return ico.DecodeConfig(r)
}

func checkICODirectory(r sizedReaderAt) error {
	var hdr [6]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint16(hdr[4:]))
	if n == 0 {
		return errors.New("ico: no images")
	}
	if n > icoMaxEntries {
		return convert.Errorf(nil, "input is not a valid ICO file (it lists %d images; at most %d are accepted)", n, icoMaxEntries)
	}
	dir := make([]byte, 16*n)
	if _, err := r.ReadAt(dir, 6); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		e := dir[16*i:]
		size, off := int64(binary.LittleEndian.Uint32(e[8:])), int64(binary.LittleEndian.Uint32(e[12:]))
		if off < int64(6+16*n) || off+size > r.Size() {
			return fmt.Errorf("ico: image %d (%d bytes at %d) lies outside the %d-byte file: %w", i+1, size, off, r.Size(), io.ErrUnexpectedEOF)
		}
	}
	return nil
}

func decodeICO(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	return ico.Decode(r)
}

// encodeICO writes a one-image icon; imageRun has already made it fit 256x256. go-ico
// stores 256x256 images as PNG and smaller ones as BMP with a transparency mask.
func encodeICO(ctx context.Context, w io.Writer, img image.Image, _ convert.Options) error {
	m := To8Bit(img)
	if err := ctx.Err(); err != nil {
		return err
	}
	return GuardCodec("ICO encoder", func() error { return ico.Encode(&convert.ContextWriter{Ctx: ctx, W: w}, m) })
}
