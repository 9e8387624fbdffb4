package document

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/responses"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"

	"github.com/convsvc/convsvc/convert"
	convimage "github.com/convsvc/convsvc/convert/image"
)

// PDF input goes through PDFium, compiled to WebAssembly and run by wazero (go-pdfium's
// webassembly package): the renderer and text extractor of Chrome, without cgo.
//
// Compiling the module costs about 2.3 s of CPU and 270 MB, once per process, on the first PDF
// conversion: nothing starts it before. Every conversion then gets a fresh instance (about
// 2 ms) that is thrown away afterwards, so the wasm memory a large page grew is given back
// and no state passes from one document to the next. At most pdfiumWorkers instances run at
// once; the others wait their turn. Each instance sees no file system (the input is read
// through a callback), writes nothing to stdout, and is killed when the conversion's context
// ends, even in the middle of a page.

// pdfiumMemoryPages bounds one instance's wasm memory (64 KiB pages): 2 GiB, enough for a
// page at the default 100 megapixel limit, 400 MB as RGBA, beside PDFium's own data.
const pdfiumMemoryPages = 32768

// pdfiumInstanceMemory is what a PDFium instance is budgeted beside the page bitmap.
const pdfiumInstanceMemory = 64 << 20

// pdfiumWorkers is how many PDFium instances run at once.
var pdfiumWorkers = min(max(runtime.GOMAXPROCS(0), 1), 4)

var (
	pdfiumOnce sync.Once
	pdfiumPool pdfium.Pool
	pdfiumErr  error
	// pdfiumStarted records that the runtime was started, for tests.
	pdfiumStarted atomic.Bool
)

// getPDFium returns the process's PDFium pool, starting it on first use.
func getPDFium() (pdfium.Pool, error) {
	pdfiumOnce.Do(func() {
		pdfiumStarted.Store(true)
		pdfiumPool, pdfiumErr = webassembly.Init(webassembly.Config{
			MinIdle:  0,
			MaxIdle:  pdfiumWorkers,
			MaxTotal: pdfiumWorkers,
			// Nothing mounted: PDFium must not see the host's files.
			FSConfig: wazero.NewFSConfig(),
			Stdout:   io.Discard,
			Stderr:   io.Discard,
			RuntimeConfig: pdfiumRuntimeConfig(wazero.NewRuntimeConfig().
				WithCloseOnContextDone(true).
				WithMemoryLimitPages(pdfiumMemoryPages)),
		})
		if pdfiumErr != nil {
			pdfiumErr = fmt.Errorf("starting PDFium: %w", pdfiumErr)
		}
	})
	return pdfiumPool, pdfiumErr
}

// pdfiumCalls are the PDFium functions used here, called on the instance's implementation
// directly: the instance wrapper reads its closed flag unlocked, which Kill writes from
// another goroutine.
type pdfiumCalls interface {
	OpenDocument(*requests.OpenDocument) (*responses.OpenDocument, error)
	FPDF_CloseDocument(*requests.FPDF_CloseDocument) (*responses.FPDF_CloseDocument, error)
	FPDF_GetPageCount(*requests.FPDF_GetPageCount) (*responses.FPDF_GetPageCount, error)
	FPDF_GetPageSizeByIndex(*requests.FPDF_GetPageSizeByIndex) (*responses.FPDF_GetPageSizeByIndex, error)
	RenderPageInDPI(*requests.RenderPageInDPI) (*responses.RenderPageInDPI, error)
	GetPageText(*requests.GetPageText) (*responses.GetPageText, error)
	FPDF_CreateNewDocument(*requests.FPDF_CreateNewDocument) (*responses.FPDF_CreateNewDocument, error)
	FPDF_ImportPagesByIndex(*requests.FPDF_ImportPagesByIndex) (*responses.FPDF_ImportPagesByIndex, error)
	FPDF_SaveAsCopy(*requests.FPDF_SaveAsCopy) (*responses.FPDF_SaveAsCopy, error)
}

// pdfSession is one open PDF in a PDFium instance of its own.
type pdfSession struct {
	ctx   context.Context
	inst  pdfium.Pdfium
	calls pdfiumCalls
	doc   references.FPDF_DOCUMENT
	pages int

	stopKill func() bool
	killDone chan struct{}
	killed   atomic.Bool
}

// openPDF checks that in is a PDF and opens it in a new PDFium instance, which is killed if
// ctx ends before close. Failures are *Error.
func openPDF(ctx context.Context, in *io.SectionReader) (*pdfSession, error) {
	head := make([]byte, 1024)
	n, err := in.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, convert.Errorf(err, "could not read the input")
	}
	head = head[:n]
	if n == 0 {
		return nil, convert.Errorf(nil, "input is empty")
	}
	if !bytes.Contains(head, []byte("%PDF-")) {
		switch _, name := convert.Sniff(head); name {
		case "unrecognised data", "an empty file":
			return nil, convert.Errorf(nil, "input is not a valid PDF file (unrecognised data)")
		default:
			return nil, convert.Errorf(nil, "input is not a valid PDF file (it looks like %s)", name)
		}
	}
	pool, err := getPDFium()
	if err != nil {
		return nil, convert.Errorf(err, "the PDF engine could not start")
	}
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, convert.Errorf(err, "the PDF engine could not start")
	}
	calls, ok := inst.GetImplementation().(pdfiumCalls)
	if !ok {
		inst.Close()
		return nil, convert.Errorf(fmt.Errorf("%T lacks the functions used", inst.GetImplementation()), "the PDF engine could not start")
	}
	s := &pdfSession{ctx: ctx, inst: inst, calls: calls, killDone: make(chan struct{})}
	s.stopKill = context.AfterFunc(ctx, func() {
		defer close(s.killDone)
		s.killed.Store(true)
		inst.Kill()
	})
	var doc *responses.OpenDocument
	err = s.guard(func() (err error) {
		doc, err = calls.OpenDocument(&requests.OpenDocument{FileReader: io.NewSectionReader(in, 0, in.Size()), FileReaderSize: in.Size()})
		return err
	})
	if err != nil {
		s.close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		switch {
		case errors.Is(err, pdfiumerrors.ErrPassword):
			return nil, convert.Errorf(err, "the PDF is protected by a password")
		case errors.Is(err, pdfiumerrors.ErrSecurity):
			return nil, convert.Errorf(err, "the PDF uses an unsupported security handler")
		}
		return nil, convert.Errorf(err, "input is not a valid PDF file (PDFium could not open it)")
	}
	s.doc = doc.Document
	var count *responses.FPDF_GetPageCount
	err = s.guard(func() (err error) {
		count, err = calls.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: s.doc})
		return err
	})
	if err != nil {
		s.close()
		return nil, s.failure(err, "input is not a valid PDF file (its pages could not be counted)")
	}
	s.pages = count.PageCount
	if s.pages <= 0 {
		s.close()
		return nil, convert.Errorf(nil, "input is not a valid PDF file (it has no pages)")
	}
	return s, nil
}

// guard runs a PDFium call, turning a panic into an error.
func (s *pdfSession) guard(f func() error) error {
	if s.killed.Load() {
		return s.ctx.Err()
	}
	return convimage.GuardCodec("PDFium", f)
}

// failure is the error for a failed call: the context's when it ended (the instance was
// killed), else an *Error with msg.
func (s *pdfSession) failure(err error, msg string, args ...any) error {
	if cerr := s.ctx.Err(); cerr != nil {
		return cerr
	}
	return convert.Errorf(err, msg, args...)
}

// close closes the document and discards the instance, unless it was killed.
func (s *pdfSession) close() {
	if !s.stopKill() {
		<-s.killDone
		return
	}
	if s.doc != "" {
		s.guard(func() error {
			_, err := s.calls.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: s.doc})
			return err
		})
	}
	s.inst.Close()
}

// pageSize returns the size of page i (0-based) in points.
func (s *pdfSession) pageSize(i int) (w, h float64, err error) {
	var size *responses.FPDF_GetPageSizeByIndex
	err = s.guard(func() (err error) {
		size, err = s.calls.FPDF_GetPageSizeByIndex(&requests.FPDF_GetPageSizeByIndex{Document: s.doc, Index: i})
		return err
	})
	if err != nil {
		return 0, 0, s.failure(err, "page %d of the PDF could not be read", i+1)
	}
	if !(size.Width > 0 && size.Height > 0) || math.IsInf(size.Width, 0) || math.IsInf(size.Height, 0) {
		return 0, 0, convert.Errorf(nil, "page %d of the PDF has an invalid size", i+1)
	}
	return size.Width, size.Height, nil
}

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

// render renders page i at dpi, over white, and calls use with the image while it is valid:
// it lives in the instance's memory.
func (s *pdfSession) render(i, dpi int, use func(image.Image) error) error {
	var res *responses.RenderPageInDPI
	err := s.guard(func() (err error) {
		res, err = s.calls.RenderPageInDPI(&requests.RenderPageInDPI{
			Page: requests.Page{ByIndex: &requests.PageByIndex{Document: s.doc, Index: i}},
			DPI:  dpi,
		})
		return err
	})
	if err != nil {
		return s.failure(err, "page %d of the PDF could not be rendered", i+1)
	}
	defer res.Cleanup()
	img := res.Result.RenderedImage
	if rgba, ok := img.(*image.RGBA); ok && res.Result.HasTransparency {
		// PDFium leaves transparent areas transparent and colours unpremultiplied; lay them
		// on white paper as a viewer does.
		src := &image.NRGBA{Pix: rgba.Pix, Stride: rgba.Stride, Rect: rgba.Rect}
		dst := image.NewRGBA(rgba.Rect)
		draw.Draw(dst, dst.Rect, image.White, image.Point{}, draw.Src)
		draw.Draw(dst, dst.Rect, src, src.Rect.Min, draw.Over)
		img = dst
	}
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return use(img)
}

// text returns the text of page i, lines ending in "\n".
func (s *pdfSession) text(i int) (string, error) {
	var res *responses.GetPageText
	err := s.guard(func() (err error) {
		res, err = s.calls.GetPageText(&requests.GetPageText{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: s.doc, Index: i}}})
		return err
	})
	if err != nil {
		return "", s.failure(err, "the text of page %d of the PDF could not be read", i+1)
	}
	t := strings.ReplaceAll(res.Text, "\r\n", "\n")
	t = strings.ReplaceAll(t, "\r", "\n")
	return strings.TrimRight(t, " \n") + "\n", nil
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
func planRender(s *pdfSession, p convert.Params, dst *convimage.Codec) (pdfRenderPlan, error) {
	lim := p.Limits.Normalized()
	opts := p.Options
	pl := pdfRenderPlan{page: max(opts.Page, 1) - 1, dpi: opts.DPI}
	if pl.page >= s.pages {
		return pl, convert.Errorf(nil, "the PDF has %s, so there is no page %d", plural(s.pages, "page"), pl.page+1)
	}
	w, h, err := s.pageSize(pl.page)
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
	est := float64(convimage.BaseConversionMemory+pdfiumInstanceMemory+dst.FixedCost) + rpx*8 + dpx*dst.EncodeCost
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
		s, err := openPDF(ctx, in)
		if err != nil {
			return err
		}
		defer s.close()
		if p.Options.Pages != "" {
			spec, err := convert.ParsePages(p.Options.Pages)
			if err != nil {
				return convert.Errorf(err, "pages: %v", err)
			}
			if !spec.Single() {
				return renderPages(ctx, c, s, spec, dst, out, p)
			}
			if spec.Ranges[0].First > s.pages {
				return convert.Errorf(nil, "pages: %d is past the last page (%d)", spec.Ranges[0].First, s.pages)
			}
			p.Options.Page, p.Options.Pages = spec.Ranges[0].First, ""
		}
		pl, err := planRender(s, p, dst)
		if err != nil {
			return err
		}
		reportPDFPages(s.pages, pl.page, dst.Name, p)
		what := fmt.Sprintf("rendering page %d of this PDF at %d dpi as %s", pl.page+1, pl.dpi, dst.Name)
		if err := c.AcquireMemory(ctx, pl.estimate, what); err != nil {
			return err
		}
		defer c.ReleaseMemory(pl.estimate)
		return s.render(pl.page, pl.dpi, func(img image.Image) error {
			img, err := convimage.Resize(ctx, img, pl.opts, p.Limits.Normalized())
			if err != nil {
				return err
			}
			return dst.Encode(ctx, out, img, pl.opts)
		})
	}
}

// pdfToText extracts the text of every page, pages ending in a form feed as pdftotext does.
func pdfToText(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
	s, err := openPDF(ctx, in)
	if err != nil {
		return err
	}
	defer s.close()
	if s.pages > MaxPDFPages {
		return convert.Errorf(nil, "the PDF has %d pages, over the %d page limit", s.pages, MaxPDFPages)
	}
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)
	for i := range s.pages {
		t, err := s.text(i)
		if err != nil {
			return err
		}
		bw.WriteString(t)
		if _, err := bw.WriteString("\f"); err != nil {
			return err
		}
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
	c.AddConverter(convert.Converter{From: fmtPDF, To: "zip", Lossy: true, Run: pdfToPageArchive(c)})
}

// pdfToPageArchive renders every page as PNG into a zip archive, as the pages option "all"
// does for a PNG target; each page is checked against the pixel limit before it is rendered.
func pdfToPageArchive(c *convert.Catalog) docRun {
	png := convimage.CodecByID("png")
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		s, err := openPDF(ctx, in)
		if err != nil {
			return err
		}
		defer s.close()
		return renderPages(ctx, c, s, convert.PageSpec{All: true}, png, out, p)
	}
}
