package document

import (
	"bufio"
	"context"
	"fmt"
	"image"
	"io"
	"math"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	convimage "github.com/convsvc/convsvc/convert/image"
)

// PDF input goes through PDFium (convert/document/internal/pdfium): the renderer and text
// extractor of Chrome, compiled to WebAssembly, without cgo. This file plans and runs its
// rasters, text and page archives.

// PDFiumCacheDirEnv names the variable that sets where PDFium's compiled WebAssembly is kept
// between processes; "off" keeps nothing. Unset: <user cache dir>/convsvc/wazero. It is the
// same variable the AVIF and JPEG XL codecs use.
const PDFiumCacheDirEnv = pdfium.CacheDirEnv

// FillPDFiumCache compiles PDFium into the on-disk compilation cache unless it is there
// already, keeping nothing in this process; nothing without a cache directory.
func FillPDFiumCache() error { return pdfium.FillCache() }

// InterpretPDFium makes this process run PDFium in wazero's interpreter instead of compiling
// it, if called before its first PDF conversion (pdfium.Interpret): for a one-shot conversion
// of one page while the compilation cache is empty.
func InterpretPDFium() { pdfium.Interpret() }

// renderedSize is the size in pixels of a page of w x h points at dpi.
func renderedSize(w, h float64, dpi int) (int, int) {
	px := func(pt float64) int {
		v := math.Ceil(pt * float64(dpi) / 72)
		if v > math.MaxInt32 {
			return math.MaxInt32
		}
		return int(v)
	}
	return px(w), px(h)
}

// pdfRenderPlan is how a page is rendered for one raster target.
type pdfRenderPlan struct {
	page     int // 0-based
	dpi      int
	rw, rh   int // rendered size
	opts     convert.Options
	dw, dh   int // output size after resizing
	estimate int64
}

// planRender checks the options against the PDF and the limits before anything is rendered:
// the page exists, and the rendered and output sizes are within the pixel limit and the
// target format's largest side.
func planRender(s *pdfium.Session, p convert.Params, dst *convimage.Codec) (pdfRenderPlan, error) {
	lim := p.Limits.Normalized()
	opts := p.Options
	pl := pdfRenderPlan{page: max(opts.Page, 1) - 1, dpi: opts.DPI}
	if pl.page >= s.Pages() {
		return pl, convert.Errorf(nil, "the PDF has %s, so there is no page %d", plural(s.Pages(), "page"), pl.page+1)
	}
	w, h, err := s.PageSize(pl.page)
	if err != nil {
		return pl, err
	}
	if pl.dpi == 0 {
		pl.dpi = DefaultPDFDPI
		// Asked for a size and no resolution: render about that size rather than scale up.
		if opts.Width > 0 || opts.Height > 0 {
			scale := max(float64(opts.Width)/w, float64(opts.Height)/h)
			pl.dpi = int(min(max(math.Ceil(72*scale), 10), 1200))
		}
	}
	pl.rw, pl.rh = renderedSize(w, h, pl.dpi)
	if err := convimage.CheckPixels(pl.rw, pl.rh, lim); err != nil {
		return pl, convert.Errorf(nil, "page %d rendered at %d dpi would be %dx%d pixels, over the %s megapixel limit; set a lower dpi",
			pl.page+1, pl.dpi, pl.rw, pl.rh, convimage.Megapixels(float64(lim.MaxPixels)))
	}
	if dst.FitMaxSide && opts.Width == 0 && opts.Height == 0 && (pl.rw > dst.MaxSide || pl.rh > dst.MaxSide) {
		opts.Width, opts.Height, opts.Fit = dst.MaxSide, dst.MaxSide, convert.FitContain
	}
	pl.opts = opts
	pl.dw, pl.dh, _ = convimage.ResizeBox(pl.rw, pl.rh, opts)
	if err := convimage.CheckPixels(pl.dw, pl.dh, lim); err != nil {
		return pl, err
	}
	if dst.MaxSide > 0 && (pl.dw > dst.MaxSide || pl.dh > dst.MaxSide) {
		return pl, convert.Errorf(nil, "%s images are at most %dx%d pixels and page %d would be %dx%d; set a lower dpi or a width and height",
			dst.Name, dst.MaxSide, dst.MaxSide, pl.page+1, pl.dw, pl.dh)
	}
	rpx, dpx := float64(pl.rw)*float64(pl.rh), float64(pl.dw)*float64(pl.dh)
	est := float64(convimage.BaseConversionMemory+pdfium.InstanceMemory+dst.FixedCost) + rpx*8 + dpx*dst.EncodeCost
	if pl.dw != pl.rw || pl.dh != pl.rh {
		est += dpx * 4
	}
	pl.estimate = int64(min(est, math.MaxInt64/2))
	return pl, nil
}

// pdfToRaster renders one page (option page, default 1) at option dpi (default 150) and
// writes it in dst's format, resized when width or height are set.
func pdfToRaster(c *convert.Catalog, dst *convimage.Codec) docRun {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		s, err := pdfium.Open(ctx, in)
		if err != nil {
			return err
		}
		defer s.Close()
		if p.Options.Pages != "" {
			spec, err := convert.ParsePages(p.Options.Pages)
			if err != nil {
				return convert.Errorf(err, "pages: %v", err)
			}
			if !spec.Single() {
				return renderPages(ctx, c, s, spec, dst, out, p)
			}
			if spec.Ranges[0].First > s.Pages() {
				return convert.Errorf(nil, "pages: %d is past the last page (%d)", spec.Ranges[0].First, s.Pages())
			}
			p.Options.Page, p.Options.Pages = spec.Ranges[0].First, ""
		}
		pl, err := planRender(s, p, dst)
		if err != nil {
			return err
		}
		reportPDFPages(s.Pages(), pl.page, dst.Name, p)
		what := fmt.Sprintf("rendering page %d of this PDF at %d dpi as %s", pl.page+1, pl.dpi, dst.Name)
		if err := c.AcquireMemory(ctx, pl.estimate, what); err != nil {
			return err
		}
		defer c.ReleaseMemory(pl.estimate)
		return s.Render(pl.page, pl.dpi, func(img image.Image) error {
			img, err := convimage.Resize(ctx, img, pl.opts, p.Limits.Normalized())
			if err != nil {
				return err
			}
			return dst.Encode(ctx, out, img, pl.opts)
		})
	}
}

// pdfToText extracts the text of every page, pages ending in a form feed as pdftotext does.
func pdfToText(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	s, err := pdfium.Open(ctx, in)
	if err != nil {
		return err
	}
	defer s.Close()
	if s.Pages() > MaxPDFPages {
		return convert.Errorf(nil, "the PDF has %d pages, over the %d page limit", s.Pages(), MaxPDFPages)
	}
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)
	for i := range s.Pages() {
		t, err := s.Text(i)
		if err != nil {
			return err
		}
		bw.WriteString(t)
		if _, err := bw.WriteString("\f"); err != nil {
			return err
		}
		p.Progress(int64(i+1), int64(s.Pages()))
	}
	return bw.Flush()
}

// RegisterPDFPageArchive adds pdf -> zip: every page as page-0001.png, page-0002.png, ... at
// option dpi. It needs the zip format, which the archive family registers.
func RegisterPDFPageArchive(c *convert.Catalog) {
	if _, ok := c.Format("zip"); !ok {
		return
	}
	if _, ok := c.ConverterFor(convert.Step{From: fmtPDF, To: "zip"}); ok {
		return
	}
	c.AddConverter(convert.Converter{Version: Version, From: fmtPDF, To: "zip", Lossy: true, Run: pdfToPageArchive(c), Counts: true})
}

// pdfToPageArchive renders every page as PNG into a zip archive, as the pages option "all"
// does for a PNG target; each page is checked against the pixel limit before it is rendered.
func pdfToPageArchive(c *convert.Catalog) docRun {
	png := convimage.CodecByID("png")
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		s, err := pdfium.Open(ctx, in)
		if err != nil {
			return err
		}
		defer s.Close()
		return renderPages(ctx, c, s, convert.PageSpec{All: true}, png, out, p)
	}
}
