package image

import (
	"context"
	"image"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/pngenc"
	"github.com/convsvc/convsvc/convert/internal/tiffstrip"
)

// pngStripBytes is about how many decoded bytes streamToPNG reads per strip: the encoder
// copies them into its own bands, so one strip buffer is all the decoder needs.
const pngStripBytes = 1 << 20

// streamToPNG converts a binary 8-bit PGM or PPM (ppmStripDecoder) or a baseline striped
// 8-bit gray or RGB TIFF (tiffstrip) to a PNG of the same size a strip at a time: the rows
// are decoded into one strip buffer and handed to pngenc's StreamEncoder, whose workers
// filter and deflate bands of them while the next strip is decoded. The PNG is byte for
// byte what the whole-image path writes (DecodePixels, then encodePNG: pngenc.Encode of
// the same opaque RGBA or Gray pixels, which stores RGB or gray), and the budget is charged
// streamPNGCost instead of the whole image.
//
// handled is false, with nothing written to out and no budget held, when the conversion is
// not one that streams: another pair, a resize or crop, a Netpbm or TIFF layout the strip
// decoders leave to the whole-image decoders, a TIFF with an alpha channel (encodePNG writes
// RGB or RGBA depending on whether every pixel of the whole image is opaque, which a strip
// at a time cannot tell before the first band is written), or a file whose header the
// strip decoder cannot read (the whole-image path then reports it as it always has).
//
// losses, when not nil, is called once the budget is held.
func streamToPNG(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, opts convert.Options, losses func()) (handled bool, err error) {
	if dst.ID != "png" || (src.ID != "ppm" && src.ID != "tiff") {
		return false, nil
	}
	if w, h, box := ResizeBox(cfg.Width, cfg.Height, opts); w != cfg.Width || h != cfg.Height || box != image.Rect(0, 0, w, h) {
		return false, nil
	}
	r := newInputReader(ctx, in)
	var d stripDecoder
	opaque, ok := true, false
	var tiles int64 // a tiled TIFF's row of tiles (tileRowExtra)
	err = GuardCodec(src.Name+" decoder", func() error {
		switch src.ID {
		case "ppm":
			pd, pok, err := newPPMStripDecoder(r)
			d, ok = pd, pok
			return err
		default:
			td, tok, err := tiffstrip.NewDecoder(r, r.Size())
			if tok {
				d, ok, opaque = td, true, td.Opaque()
				tiles, ok = tileRowExtra(td)
			}
			return err
		}
	})
	if err != nil || !ok || !opaque {
		return false, nil
	}
	b := d.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return false, nil
	}
	_, gray := d.StripImage(nil, image.Rectangle{}).(*image.Gray)
	est := BaseConversionMemory + streamPNGCost(b, gray, d.BytesPerPixel()) + tiles
	if err := holdStreamBudget(ctx, c, est, cfg, src, dst, losses); err != nil {
		return true, err
	}
	defer c.ReleaseMemory(est)
	return true, stripsToPNG(ctx, r, d, out, src, gray)
}

// stripsToPNG encodes the rows d decodes from r to out as a PNG (see streamToPNG). The
// encoder gets its own context, cancelled when decoding fails, so that it stops and its
// goroutines end without writing the rest of the PNG.
func stripsToPNG(ctx context.Context, r *inputReader, d stripDecoder, out io.Writer, codec *Codec, gray bool) error {
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	b := d.Bounds()
	enc, err := pngenc.NewStreamEncoder(ectx, &convert.ContextWriter{Ctx: ctx, W: out}, b.Dx(), b.Dy(), gray, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	rows := pngStripRows(b.Dx(), d.BytesPerPixel())
	buf := make([]byte, d.BytesPerPixel()*b.Dx()*rows)
	name := codec.Name + " decoder"
	var decErr, encErr error
	for y := 0; y < b.Dy() && decErr == nil && encErr == nil; y += rows {
		m := d.StripImage(buf, image.Rect(0, y, b.Dx(), min(y+rows, b.Dy())))
		if decErr = GuardCodec(name, func() error { return d.ReadRows(m) }); decErr == nil {
			encErr = enc.WriteRows(m)
		}
	}
	if decErr == nil && encErr == nil {
		// What follows the rows (TIFF: the strips read to their ends) before the PNG ends.
		decErr = GuardCodec(name, d.Finish)
	}
	if decErr != nil {
		stop() // the PNG must not be ended
	}
	if cerr := enc.Close(); encErr == nil {
		encErr = cerr
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case decErr != nil:
		return decodeError(ctx, codec, r, decErr)
	}
	return encErr
}

// pngStripRows is how many rows of width pixels of bpp bytes streamToPNG decodes at a time:
// about pngStripBytes, at least one row.
func pngStripRows(width, bpp int) int {
	return max(1, pngStripBytes/max(1, width*bpp))
}

// streamPNGCost is what streamToPNG holds for an image of b whose strips have bpp bytes per
// pixel, in bytes: the strip buffer, the StreamEncoder's bands, deflaters and output
// (pngenc.StreamMemory), and the TIFF inflater's window and buffers.
func streamPNGCost(b image.Rectangle, gray bool, bpp int) int64 {
	strip := int64(bpp) * int64(b.Dx()) * int64(pngStripRows(b.Dx(), bpp))
	return strip + pngenc.StreamMemory(b.Dx(), b.Dy(), gray, nil) + 1<<20
}
