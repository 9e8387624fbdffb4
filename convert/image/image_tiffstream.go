package image

import (
	"context"
	"image"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/tiffstrip"
)

// tiffToJPEG converts a baseline striped 8-bit TIFF (tiffstrip's subset) to a JPEG a strip
// at a time, as pngToJPEG does a PNG: the same bytes as x/image/tiff's decode followed by
// encodeJPEG, with nothing the size of the image held. handled is false, with nothing
// written, for a TIFF tiffstrip leaves to x/image/tiff (tiles, planar, 16-bit, palettes,
// other compressions).
func tiffToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options, translucent func()) (handled bool, err error) {
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	src := newInputReader(dctx, in)
	var d *tiffstrip.Decoder
	var ok bool
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		d, ok, err = tiffstrip.NewDecoder(src, src.Size())
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	return stripsToJPEG(ctx, dctx, stop, src, d, out, codec, cfg, opts, d.Opaque(), translucent)
}
