package image

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"io"

	"golang.org/x/image/bmp"

	"github.com/convsvc/convsvc/convert"
)

// independentDecoders decode outputs whose pixels are checked with readers that share no
// code with the encoders that wrote them: x/image/bmp for the BMP the family writes itself;
// GIF is written and read by image/gif, the same package, but its decoder is not its encoder.
// QOI, Netpbm, ICO and AVIF are decoded by the decoders the family converts with, the only ones
// it has (docs/reliability.md). PNG, JPEG, WebP and TIFF are checked by structure
// (structureChecks): their full decode costs more than a tenth of the conversion.
var independentDecoders = map[string]func(io.Reader) (image.Image, error){
	"gif": decodeAllGIF,
	"bmp": bmp.Decode,
}

// decodeAllGIF decodes every frame of a GIF, so a truncated later frame fails.
func decodeAllGIF(r io.Reader) (image.Image, error) {
	g, err := gif.DecodeAll(r)
	if err != nil {
		return nil, err
	}
	if len(g.Image) == 0 {
		return nil, errors.New("gif: no frames")
	}
	return g.Image[0], nil
}

// registerVerifiers adds the output check of every raster format the family writes.
func registerVerifiers(c *convert.Catalog) {
	for i := range Codecs {
		if dst := &Codecs[i]; dst.Encode != nil {
			c.AddVerifier(dst.ID, verifyImage(c, dst))
		}
	}
}

// verifyImage checks an image output: its header parses (image/png, image/jpeg, x/image's
// tiff and bmp configs where they read the format, the family's own header readers otherwise), it has the size the job promised
// (worked out from the input's header and the options as the converter plans it, for image
// inputs; at least one pixel otherwise), and then either its structure is whole
// (structureChecks) or its pixels decode to the end.
func verifyImage(c *convert.Catalog, dst *Codec) convert.Verifier {
	return func(ctx context.Context, out *io.SectionReader, chk convert.Check) error {
		lim := chk.Limits.Normalized()
		cfg, err := ReadHeader(ctx, out, dst, lim)
		if err != nil {
			return err
		}
		if cfg.Width <= 0 || cfg.Height <= 0 {
			return fmt.Errorf("the image is %dx%d pixels", cfg.Width, cfg.Height)
		}
		if w, h, ok := expectedSize(ctx, chk, dst); ok && (w != cfg.Width || h != cfg.Height) {
			return fmt.Errorf("the image is %dx%d pixels where the options promise %dx%d", cfg.Width, cfg.Height, w, h)
		}
		if check := structureChecks[dst.ID]; check != nil {
			return check(out)
		}
		dec := independentDecoders[dst.ID]
		cost := int64(float64(int64(cfg.Width)*int64(cfg.Height))*dst.DecodeCost) + dst.FixedCost
		if err := c.AcquireMemory(ctx, cost, "checking the "+dst.Name+" output"); err != nil {
			return err
		}
		defer c.ReleaseMemory(cost)
		var img image.Image
		if dec == nil {
			img, err = DecodePixels(ctx, out, dst, cfg)
		} else {
			err = GuardCodec(dst.Name+" reader", func() (err error) {
				img, err = dec(io.NewSectionReader(out, 0, out.Size()))
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("its pixels do not decode: %w", err)
		}
		if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
			return fmt.Errorf("the header says %dx%d pixels and the pixels decode to %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy())
		}
		return nil
	}
}

// expectedSize works out the size of the output of an image input from the input's header
// and EXIF orientation and the job's options, as the converter plans it; ok is false when the
// input is not a raster the family reads (a PDF page, an SVG), whose size the options do not
// fix here.
func expectedSize(ctx context.Context, chk convert.Check, dst *Codec) (w, h int, ok bool) {
	src := CodecByID(chk.InputFormat)
	if src == nil || chk.Input == nil || chk.Options.Pages != "" {
		return 0, 0, false
	}
	cfg, err := ReadHeader(ctx, chk.Input, src, chk.Limits.Normalized())
	if err != nil {
		return 0, 0, false
	}
	opts := chk.Options
	orient := 1
	if opts.Orient() {
		orient = readImageMeta(chk.Input, src).orientation
	}
	shrinksToMaxSide(cfg, orient, dst, &opts)
	g, err := planGeometry(cfg.Width, cfg.Height, orient, opts)
	if err != nil {
		return 0, 0, false
	}
	return g.dw, g.dh, true
}

// checkRIFF walks a RIFF file's chunks: the RIFF size matches the file and every chunk lies
// inside it.
func checkRIFF(r *io.SectionReader) error {
	head := make([]byte, 12)
	if _, err := r.ReadAt(head, 0); err != nil {
		return fmt.Errorf("the RIFF header is incomplete: %w", err)
	}
	size := int64(binary.LittleEndian.Uint32(head[4:8])) + 8
	if string(head[:4]) != "RIFF" || size > r.Size() {
		return fmt.Errorf("the RIFF header says %d bytes and the file has %d", size, r.Size())
	}
	for off := int64(12); off < size; {
		ch := make([]byte, 8)
		if _, err := r.ReadAt(ch, off); err != nil {
			return fmt.Errorf("the chunk at byte %d is incomplete", off)
		}
		n := int64(binary.LittleEndian.Uint32(ch[4:8]))
		off += 8 + n + n&1
		if off > size {
			return fmt.Errorf("the %q chunk reaches past the end of the file", ch[:4])
		}
	}
	return nil
}
