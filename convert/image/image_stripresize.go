package image

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/pngstream"
	"github.com/convsvc/convsvc/convert/internal/stripscale"
	"github.com/convsvc/convsvc/convert/internal/tiffstrip"
)

// stripResizeBuffers is how many decoded strips a strip resize keeps: one being resampled,
// one being decoded and one ready, so that the decoder and the resampler each keep a core busy.
const stripResizeBuffers = 3

// stripResizeBytes is about the size of one decoded strip of a strip resize.
const stripResizeBytes = 256 << 10

// stripResizeHeight is the height of a strip resize's strips for a w x h image whose decoded
// pixels have bpp bytes: about stripResizeBytes, at least one row, at most the image.
func stripResizeHeight(w, h, bpp int) int {
	return max(1, min(256, h, stripResizeBytes/max(1, w*bpp)))
}

// stripResizeCost is what a strip resize holds besides the target and its encoder, in bytes:
// the strip buffers, stripscale's ring, weights and converted source row, and the decoder's
// own buffers (the inflater's window, a row or two).
func stripResizeCost(sw, sh, bpp, dw, dh int, box image.Rectangle) int64 {
	rows := stripResizeHeight(sw, sh, bpp)
	ring := int64(stripscale.RingRows(dw, dh, box)) * int64(dw) * 32
	weights := int64(dw+dh)*24 + (int64(box.Dx())+int64(box.Dy()))*4*16 + int64(box.Dx())*32
	return stripResizeBuffers*int64(sw)*int64(rows)*int64(bpp) + ring + weights + 1<<20
}

// stripResize resizes a PNG, binary 8-bit PGM/PPM or baseline striped or tiled TIFF to a smaller
// image without ever holding the source: one goroutine decodes strips of rows (pngstream,
// ppmStripDecoder, tiffstrip), the caller's resamples each as it comes (stripscale), and the
// small target is then encoded as on the whole-image path. The target's pixels are exactly
// those DecodePixels followed by Resize give (stripscale is x/image/draw's Catmull-Rom,
// operation for operation), and the file is decoded to its end, so a corrupt file fails as
// it does there. The budget share is the whole-image path's without the decoded source, plus
// stripResizeCost.
//
// handled is false, with nothing written and no budget held, when the conversion is not a
// downscale (target area under the source's) of a format and layout a strip decoder reads.
// losses is called once the budget is held; alpha gets the target before it is encoded.
func stripResize(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, g geometry, opts convert.Options, extra int64, losses func(), finish func(context.Context, io.Writer, image.Image) error) (handled bool, err error) {
	if src.ID != "png" && src.ID != "ppm" && src.ID != "tiff" {
		return false, nil
	}
	dw, dh, box := g.rw, g.rh, g.box
	if int64(dw)*int64(dh) >= int64(cfg.Width)*int64(cfg.Height) || box.Empty() || dw <= 0 || dh <= 0 {
		// Not a downscale: scaleTo enlarges with BiLinear, and the source is not the larger.
		return false, nil
	}
	if src.ID == "ppm" && !ppmStreams(in) {
		return false, nil
	}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	r := newInputReader(dctx, in)
	var d stripDecoder
	var ok bool
	var tiles int64 // a tiled TIFF's row of tiles (tileRowExtra)
	err = GuardCodec(src.Name+" decoder", func() (err error) {
		switch src.ID {
		case "png":
			var pd *pngstream.Decoder
			if pd, ok, err = pngstream.NewStripDecoder(r); ok {
				d = pd
			}
		case "ppm":
			var nd *ppmStripDecoder
			if nd, ok, err = newPPMStripDecoder(r); ok {
				d = nd
			}
		case "tiff":
			var td *tiffstrip.Decoder
			if td, ok, err = tiffstrip.NewDecoder(r, r.Size()); ok {
				d = td
				tiles, ok = tileRowExtra(td)
			}
		}
		return err
	})
	if err != nil {
		// The whole-image path would fail on this file too: let it, with its own errors.
		return false, nil
	}
	if !ok {
		return false, nil
	}
	b := d.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return true, convert.Errorf(fmt.Errorf("header says %dx%d, the decoder found %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", src.Name)
	}
	bpp := d.BytesPerPixel()
	est := memoryEstimate(src, dst, 1, 0, int64(dw)*int64(dh), true, webpLossless(opts)) + stripResizeCost(cfg.Width, cfg.Height, bpp, dw, dh, box) + tiles + extra
	if err := holdStreamBudget(ctx, c, est, cfg, src, dst, losses); err != nil {
		return true, err
	}
	defer c.ReleaseMemory(est)
	img, err := resizeStrips(ctx, dctx, stop, d, dw, dh, box, src.Name+" decoder")
	if err != nil {
		var de stripDecodeError
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		if errors.As(err, &de) {
			return true, decodeError(ctx, src, r, de.err)
		}
		return true, err
	}
	return true, finish(ctx, out, img)
}

// resizeStrips decodes d's rows in a goroutine, stripResizeBuffers strips at most, reading
// through dctx (stop cancels it), and resamples the box part of them to a dw x dh NRGBA as
// they come. A decoder failure (including Finish's) is a stripDecodeError.
func resizeStrips(ctx, dctx context.Context, stop context.CancelFunc, d stripDecoder, dw, dh int, box image.Rectangle, name string) (*image.NRGBA, error) {
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	z, err := stripscale.New(dst, box)
	if err != nil {
		return nil, err
	}
	b := d.Bounds()
	sh := stripResizeHeight(b.Dx(), b.Dy(), d.BytesPerPixel())
	bufLen := d.BytesPerPixel() * b.Dx() * sh
	free := make(chan []byte, stripResizeBuffers)
	for range stripResizeBuffers {
		free <- nil // allocated by the decoder when first used
	}
	full := make(chan decodedStrip, stripResizeBuffers)
	go func() {
		defer close(full)
		for y := b.Min.Y; y < b.Max.Y; y += sh {
			var buf []byte
			select {
			case buf = <-free:
			case <-dctx.Done():
				full <- decodedStrip{err: dctx.Err()}
				return
			}
			if buf == nil {
				buf = make([]byte, bufLen)
			}
			m := d.StripImage(buf, image.Rect(b.Min.X, y, b.Max.X, min(y+sh, b.Max.Y)))
			if err := GuardCodec(name, func() error { return d.ReadRows(m) }); err != nil {
				full <- decodedStrip{err: stripDecodeError{err}}
				return
			}
			full <- decodedStrip{m: m}
		}
		if err := GuardCodec(name, d.Finish); err != nil {
			full <- decodedStrip{err: stripDecodeError{err}}
		}
	}()
	fail := func(err error) (*image.NRGBA, error) {
		stop()
		for range full {
			// Wait for the decoder to stop: it reads the input, which the caller may close.
		}
		return nil, err
	}
	for s := range full {
		if s.err != nil {
			return fail(s.err)
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := z.Write(s.m); err != nil {
			return fail(err)
		}
		free <- stripPix(s.m)
	}
	if !z.Done() {
		return nil, fmt.Errorf("resize: the decoder stopped before the last row")
	}
	return dst, nil
}

// stripPix is the pixel buffer of a strip StripImage made.
func stripPix(m image.Image) []byte {
	switch m := m.(type) {
	case *image.Gray:
		return m.Pix
	case *image.RGBA:
		return m.Pix
	case *image.NRGBA:
		return m.Pix
	case *image.Paletted:
		return m.Pix
	}
	return nil
}
