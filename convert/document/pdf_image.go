package document

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"

	"codeberg.org/go-pdf/fpdf"

	"github.com/convsvc/convsvc/convert"
	convimage "github.com/convsvc/convsvc/convert/image"
)

// pdfMaxPageSide is the largest page side, in points, that PDF readers are required to
// handle (200 inches); larger images are placed on a page of this size, scaled down.
const pdfMaxPageSide = 14400

// rasterPagePoints is the page size for an image of w x h pixels: one pixel per CSS pixel
// (96 per inch, 0.75 point), within pdfMaxPageSide.
func rasterPagePoints(w, h int) (pw, ph float64) {
	pw, ph = float64(w)*0.75, float64(h)*0.75
	if s := pdfMaxPageSide / max(pw, ph); s < 1 {
		pw, ph = pw*s, ph*s
	}
	return max(pw, 1), max(ph, 1)
}

// rasterToPDF puts a raster image on one page of its own size. A JPEG is embedded as it is
// (no re-encoding, no loss); anything else is decoded and embedded as a lossless 8-bit PNG,
// its alpha channel as a soft mask.
func rasterToPDF(c *convert.Catalog, codec *convimage.Codec) docRun {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		lim := p.Limits.Normalized()
		cfg, err := convimage.ReadHeader(ctx, in, codec, lim)
		if err != nil {
			return err
		}
		passthrough := codec.ID == "jpeg" && cfg.ColorModel != color.CMYKModel
		est := int64(convimage.BaseConversionMemory) + 2*in.Size()
		if !passthrough {
			est += int64(float64(cfg.Width) * float64(cfg.Height) * (codec.DecodeCost + 12))
		}
		if err := c.AcquireMemory(ctx, est, fmt.Sprintf("putting this %dx%d %s in a PDF", cfg.Width, cfg.Height, codec.Name)); err != nil {
			return err
		}
		defer c.ReleaseMemory(est)

		var data []byte
		opts := fpdf.ImageOptions{ImageType: "PNG"}
		if passthrough {
			opts.ImageType = "JPG"
			data = make([]byte, in.Size())
			if _, err := in.ReadAt(data, 0); err != nil && err != io.EOF {
				return convert.Errorf(err, "could not read the input")
			}
		} else {
			img, err := convimage.DecodePixels(ctx, in, codec, cfg)
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if data, err = encodePDFPNG(img); err != nil {
				return fmt.Errorf("encoding the image for the PDF: %w", err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		pw, ph := rasterPagePoints(cfg.Width, cfg.Height)
		f := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", Size: fpdf.SizeType{Wd: pw, Ht: ph}})
		f.SetMargins(0, 0, 0)
		f.SetAutoPageBreak(false, 0)
		f.SetCreator("convsvc", true)
		f.AddPage()
		f.RegisterImageOptionsReader("image", opts, bytes.NewReader(data))
		f.ImageOptions("image", 0, 0, pw, ph, false, opts, 0, "")
		if err := f.Error(); err != nil {
			return convert.Errorf(err, "input is not a valid %s file (%v)", codec.Name, err)
		}
		return f.Output(&convert.ContextWriter{Ctx: ctx, W: out})
	}
}
