package document

import (
	"archive/zip"
	"context"
	"fmt"
	"image"
	"image/draw"
	"io"
	"math"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/tiffenc"
)

// Several pages of a PDF (the pages option): rendered one at a time, each under its own
// memory reservation, and streamed into the output as it is encoded: a zip of
// page-0001.png, page-0002.png... for targets that hold one image, one IFD per page for TIFF.
// PDF to PDF copies the selected pages, in the order given, into a new document.

// storedPageFormats are the page formats written into the zip as they are (already
// compressed); the others are deflated.
var storedPageFormats = map[string]bool{"png": true, "jpeg": true, "webp": true, "avif": true, "gif": true, "jxl": true}

// selectedPages resolves spec against the PDF's page count, within MaxPDFPages.
func selectedPages(s *pdfium.Session, spec convert.PageSpec) ([]int, error) {
	if s.Pages() > MaxPDFPages {
		return nil, convert.Errorf(nil, "the PDF has %d pages, over the %d page limit", s.Pages(), MaxPDFPages)
	}
	return spec.Resolve(s.Pages())
}

// renderPages renders the selected pages, in order, into a zip of page files of dst's format,
// or a multi-page TIFF when dst is TIFF.
func renderPages(ctx context.Context, c *convert.Catalog, s *pdfium.Session, spec convert.PageSpec, dst *convimage.Codec, out io.Writer, p convert.Params) error {
	pages, err := selectedPages(s, spec)
	if err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: out}
	var zw *zip.Writer
	var tw *tiffenc.PageWriter
	ext := dst.ID
	if f, ok := c.Format(dst.ID); ok && f.MultiPage && dst.ID == "tiff" {
		tw = tiffenc.NewPageWriter(cw)
	} else {
		zw = zip.NewWriter(cw)
		if ok && len(f.Extensions) > 0 {
			ext = f.Extensions[0]
		}
	}
	for k, page := range pages {
		pp := p
		pp.Options.Page, pp.Options.Pages = page, ""
		pl, err := planRender(s, pp, dst)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("rendering page %d of this PDF at %d dpi as %s", page, pl.dpi, dst.Name)
		if err := c.AcquireMemory(ctx, pl.estimate, what); err != nil {
			return err
		}
		err = func() error {
			defer c.ReleaseMemory(pl.estimate)
			return s.Render(page-1, pl.dpi, func(img image.Image) error {
				img, err := convimage.Resize(ctx, img, pl.opts, p.Limits.Normalized())
				if err != nil {
					return err
				}
				if tw != nil {
					if !tiffenc.Supported(img) {
						rgba := image.NewRGBA(img.Bounds())
						draw.Draw(rgba, rgba.Rect, img, img.Bounds().Min, draw.Src)
						img = rgba
					}
					if err := tw.WritePage(ctx, img, nil, k == len(pages)-1); err != nil {
						return s.Failure(err, "page %d could not be written as TIFF", page)
					}
					return nil
				}
				method := zip.Deflate
				if storedPageFormats[dst.ID] {
					method = zip.Store
				}
				w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("page-%04d.%s", page, ext), Method: method})
				if err != nil {
					return err
				}
				return dst.Encode(ctx, w, img, pl.opts)
			})
		}()
		if err != nil {
			return err
		}
		p.Progress(int64(k+1), int64(len(pages)))
	}
	if zw != nil {
		return zw.Close()
	}
	return nil
}

// selectPDFPagesEstimate is PDF -> PDF's memory: a PDFium instance that holds the source's
// objects the selected pages use, and the new document written from them.
func selectPDFPagesEstimate(size int64) int64 {
	return pdfium.InstanceMemory + min(2*size, math.MaxInt64/4)
}

// pdfSelectPages writes a PDF of the pages the pages option selects, in its order; without
// pages there is nothing to change, and create refuses such a job.
func pdfSelectPages(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	if p.Options.Pages == "" {
		return convert.Errorf(nil, "a PDF to PDF job needs the pages option")
	}
	spec, err := convert.ParsePages(p.Options.Pages)
	if err != nil {
		return convert.Errorf(err, "pages: %v", err)
	}
	s, err := pdfium.Open(ctx, in)
	if err != nil {
		return err
	}
	defer s.Close()
	pages, err := selectedPages(s, spec)
	if err != nil {
		return err
	}
	indices := make([]int, len(pages))
	for i, pg := range pages {
		indices[i] = pg - 1
	}
	return s.CopyPages(indices, out)
}
