package document

import (
	"context"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/svg"
	convimage "github.com/convsvc/convsvc/convert/image"
)

// SVG input is read here, within MaxSVGBytes, and drawn by convert/document/internal/svg.

// svgToRaster draws the SVG at its own size (CSS pixels, scaled by dpi/96 when dpi is set) or
// at the width and height asked for, and writes it in dst's format.
func svgToRaster(c *convert.Catalog, dst *convimage.Codec) docRun {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		data, err := readSVG(ctx, in)
		if err != nil {
			return err
		}
		return svg.Rasterize(ctx, c, data, dst, out, p)
	}
}

// svgToPDF puts the SVG on one page of its own size, its text as PDF text.
func svgToPDF(c *convert.Catalog) docRun {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		data, err := readSVG(ctx, in)
		if err != nil {
			return err
		}
		return svg.WritePDF(ctx, c, data, out, p)
	}
}

// readSVG reads an SVG input whole. The XML decoder reads the encoding the file declares: no
// transcoding here.
func readSVG(ctx context.Context, in *io.SectionReader) ([]byte, error) {
	return readRawText(ctx, in, fmtSVG, MaxSVGBytes)
}
