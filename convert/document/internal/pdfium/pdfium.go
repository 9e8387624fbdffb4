// Package pdfium runs PDFium, compiled to WebAssembly and run by wazero (go-pdfium's
// webassembly package), for convert/document: a Session is one PDF open in an instance of its
// own, whose pages it sizes, renders and reads the text of, and copies into a new PDF. Failures
// are *convert.Error, or the context's error when it ended.
package pdfium

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
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
	"golang.org/x/image/font/gofont/goregular"

	"github.com/convsvc/convsvc/convert"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/wasmcodec"
	"github.com/convsvc/convsvc/internal/pdfwrite"
)

// PDF input goes through PDFium, compiled to WebAssembly and run by wazero (go-pdfium's
// webassembly package): the renderer and text extractor of Chrome, without cgo.
//
// Compiling the module costs about 2.3 s of CPU and 270 MB, once per process, on the first PDF
// conversion: nothing starts it before. Every conversion then gets a fresh instance (about
// 2 ms) that is thrown away afterwards, so the wasm memory a large page grew is given back
// and no state passes from one document to the next. At most Workers instances run at
// once; the others wait their turn. Each instance sees no file system (the input is read
// through a callback), writes nothing to stdout, and is killed when the conversion's context
// ends, even in the middle of a page.

// memoryPages bounds one instance's wasm memory (64 KiB pages): 2 GiB, enough for a
// page at the default 100 megapixel limit, 400 MB as RGBA, beside PDFium's own data.
const memoryPages = 32768

// InstanceMemory is what a PDFium instance is budgeted beside the page bitmap.
const InstanceMemory = 64 << 20

// Workers is how many PDFium instances run at once.
var Workers = min(max(runtime.GOMAXPROCS(0), 1), 4)

var (
	startOnce sync.Once
	startPool pdfium.Pool
	startErr  error
	// started records that the runtime was started (Started).
	started atomic.Bool
)

// get returns the process's PDFium pool, starting and warming it (warmUp) on first use.
func get() (pdfium.Pool, error) {
	startOnce.Do(func() {
		started.Store(true)
		startPool, startErr = webassembly.Init(poolConfig(Workers, interpret.Load()))
		if startErr != nil {
			startErr = fmt.Errorf("starting PDFium: %w", startErr)
			return
		}
		warmUp(startPool)
	})
	return startPool, startErr
}

// interpret is set by Interpret.
var interpret atomic.Bool

// Interpret makes this process run PDFium in wazero's interpreter instead of compiling it,
// if called before its first PDF conversion: what a one-shot conversion of one page does
// while the compilation cache is empty. Compiling PDFium costs about 5 s of CPU; the
// interpreter renders a page at 150 dpi in about 1 s of CPU in all, to the same bytes, but
// runs PDFium's code several times slower, so it suits one page and not a whole document.
func Interpret() { interpret.Store(true) }

// poolConfig is the configuration of a pool of at most workers PDFium instances, compiled
// (through the on-disk cache) or, with interp, interpreted.
func poolConfig(workers int, interp bool) webassembly.Config {
	rc := runtimeConfig(wazero.NewRuntimeConfig())
	if interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	return webassembly.Config{
		// The pool's context: compiling (on a first run) uses every core.
		Context:  wasmcodec.CompileContext(context.Background()),
		MinIdle:  0,
		MaxIdle:  workers,
		MaxTotal: workers,
		// Nothing mounted: PDFium must not see the host's files.
		FSConfig:      wazero.NewFSConfig(),
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		RuntimeConfig: rc.WithCloseOnContextDone(true).WithMemoryLimitPages(memoryPages),
	}
}

// FillCache compiles PDFium into the on-disk compilation cache unless it is there already,
// keeping nothing in this process (see wasmcodec.FillCache). It does nothing without a cache
// directory.
func FillCache() error {
	if wasmcodec.CacheDir() == "" {
		return nil
	}
	p, err := webassembly.Init(poolConfig(1, false))
	if err != nil {
		return fmt.Errorf("compiling PDFium: %w", err)
	}
	return p.Close()
}

// engine is the PDFium functions used here, called on the instance's implementation
// directly: the instance wrapper reads its closed flag unlocked, which Kill writes from
// another goroutine.
type engine interface {
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

// Session is one open PDF in a PDFium instance of its own.
type Session struct {
	ctx   context.Context
	inst  pdfium.Pdfium
	calls engine
	doc   references.FPDF_DOCUMENT
	pages int

	stopKill func() bool
	killDone chan struct{}
	killed   atomic.Bool
}

// Open checks that in is a PDF and opens it in a new PDFium instance, which is killed if
// ctx ends before Close. Failures are *Error.
func Open(ctx context.Context, in *io.SectionReader) (*Session, error) {
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
	pool, err := get()
	if err != nil {
		return nil, convert.Errorf(err, "the PDF engine could not start")
	}
	return open(ctx, pool, in)
}

// warmPDF returns a one-page PDF, 72 points square, that makes PDFium call every emscripten
// invoke_ import of its module: a line of text in an embedded TrueType font (Go Regular, which
// convert/document embeds already; loading it and reading the text call invoke_iii and
// invoke_iiiii; the standard Helvetica calls neither) and an 8x8 JPEG image (decoding it calls
// invoke_ii, invoke_iii, invoke_iiii and invoke_viii).
func warmPDF() []byte {
	var jpg bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 4)
	}
	if err := jpeg.Encode(&jpg, img, nil); err != nil {
		panic(fmt.Sprintf("encoding an 8x8 JPEG in memory: %v", err))
	}
	content := "BT /F1 12 Tf 4 40 Td (Warm up) Tj ET q 16 0 0 16 4 4 cm /Im1 Do Q"
	// With a cross-reference table (pdfwrite): without one PDFium would scan the whole file to
	// rebuild it, most of an interpreted warm-up.
	return pdfwrite.File(
		[]byte("<</Type/Catalog/Pages 2 0 R>>"),
		[]byte("<</Type/Pages/Kids[3 0 R]/Count 1>>"),
		[]byte("<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]/Contents 4 0 R"+
			"/Resources<</Font<</F1 5 0 R>>/XObject<</Im1 6 0 R>>>>>>"),
		pdfwrite.Stream("", []byte(content)),
		[]byte("<</Type/Font/Subtype/TrueType/BaseFont/GoRegular/FirstChar 32/LastChar 126"+
			"/Encoding/WinAnsiEncoding/FontDescriptor 7 0 R>>"),
		pdfwrite.Stream("/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"+
			"/BitsPerComponent 8/Filter/DCTDecode", jpg.Bytes()),
		[]byte("<</Type/FontDescriptor/FontName/GoRegular/Flags 32/FontBBox[0 -200 1000 900]"+
			"/ItalicAngle 0/Ascent 900/Descent -200/CapHeight 700/StemV 80/FontFile2 8 0 R>>"),
		pdfwrite.Stream(fmt.Sprintf("/Length1 %d", len(goregular.TTF)), goregular.TTF),
	)
}

// warmUp opens warmPDF in pool, reads its page's size and text and renders it, before any
// other session (get calls it once, on the pool it started). wazero v1.12.0 fills the type key
// of a host function's FunctionType lazily, on its first call (tetratelabs/wazero#2520), and
// every PDFium instance shares the host module that holds PDFium's emscripten invoke_ imports,
// so two sessions making the first call of one of them at once wrote that key together: a data
// race the race detector saw in TestDocument_Matrix, whose torn string could also mistype a
// call. Once warmUp has called each invoke_ import (TestWarmUp_CallsEveryInvokeImport holds it
// to that), the keys are filled before any later session starts. A failure is left to the
// session that follows to meet and report.
func warmUp(pool pdfium.Pool) {
	pdf := warmPDF()
	s, err := open(context.Background(), pool, io.NewSectionReader(bytes.NewReader(pdf), 0, int64(len(pdf))))
	if err != nil {
		return
	}
	defer s.Close()
	_, _, _ = s.PageSize(0)
	_, _ = s.Text(0)
	_ = s.Render(0, 72, func(image.Image) error { return nil })
}

// open opens in, which starts like a PDF, in a new instance from pool (Open).
func open(ctx context.Context, pool pdfium.Pool, in *io.SectionReader) (*Session, error) {
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, convert.Errorf(err, "the PDF engine could not start")
	}
	calls, ok := inst.GetImplementation().(engine)
	if !ok {
		inst.Close()
		return nil, convert.Errorf(fmt.Errorf("%T lacks the functions used", inst.GetImplementation()), "the PDF engine could not start")
	}
	s := &Session{ctx: ctx, inst: inst, calls: calls, killDone: make(chan struct{})}
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
		s.Close()
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
		s.Close()
		return nil, s.Failure(err, "input is not a valid PDF file (its pages could not be counted)")
	}
	s.pages = count.PageCount
	if s.pages <= 0 {
		s.Close()
		return nil, convert.Errorf(nil, "input is not a valid PDF file (it has no pages)")
	}
	return s, nil
}

// guard runs a PDFium call, turning a panic into an error.
func (s *Session) guard(f func() error) error {
	if s.killed.Load() {
		return s.ctx.Err()
	}
	return convimage.GuardCodec("PDFium", f)
}

// Failure is the error for a failed call: the context's when it ended (the instance was
// killed), else an *Error with msg.
func (s *Session) Failure(err error, msg string, args ...any) error {
	if cerr := s.ctx.Err(); cerr != nil {
		return cerr
	}
	return convert.Errorf(err, msg, args...)
}

// Close closes the document and discards the instance, unless it was killed.
func (s *Session) Close() {
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

// PageSize returns the size of page i (0-based) in points.
func (s *Session) PageSize(i int) (w, h float64, err error) {
	var size *responses.FPDF_GetPageSizeByIndex
	err = s.guard(func() (err error) {
		size, err = s.calls.FPDF_GetPageSizeByIndex(&requests.FPDF_GetPageSizeByIndex{Document: s.doc, Index: i})
		return err
	})
	if err != nil {
		return 0, 0, s.Failure(err, "page %d of the PDF could not be read", i+1)
	}
	if !(size.Width > 0 && size.Height > 0) || math.IsInf(size.Width, 0) || math.IsInf(size.Height, 0) {
		return 0, 0, convert.Errorf(nil, "page %d of the PDF has an invalid size", i+1)
	}
	return size.Width, size.Height, nil
}

// Render renders page i at dpi, over white, and calls use with the image while it is valid:
// it lives in the instance's memory.
func (s *Session) Render(i, dpi int, use func(image.Image) error) error {
	var res *responses.RenderPageInDPI
	err := s.guard(func() (err error) {
		res, err = s.calls.RenderPageInDPI(&requests.RenderPageInDPI{
			Page: requests.Page{ByIndex: &requests.PageByIndex{Document: s.doc, Index: i}},
			DPI:  dpi,
		})
		return err
	})
	if err != nil {
		return s.Failure(err, "page %d of the PDF could not be rendered", i+1)
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

// Text returns the text of page i, lines ending in "\n".
func (s *Session) Text(i int) (string, error) {
	var res *responses.GetPageText
	err := s.guard(func() (err error) {
		res, err = s.calls.GetPageText(&requests.GetPageText{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: s.doc, Index: i}}})
		return err
	})
	if err != nil {
		return "", s.Failure(err, "the text of page %d of the PDF could not be read", i+1)
	}
	t := strings.ReplaceAll(res.Text, "\r\n", "\n")
	t = strings.ReplaceAll(t, "\r", "\n")
	return strings.TrimRight(t, " \n") + "\n", nil
}

// Started reports whether the PDFium runtime was started in this process (it starts on the
// first Open).
func Started() bool { return started.Load() }

// Pages returns the document's page count.
func (s *Session) Pages() int { return s.pages }

// CopyPages writes to out a new PDF of the pages at indices (0-based), in that order.
func (s *Session) CopyPages(indices []int, out io.Writer) error {
	var doc *responses.FPDF_CreateNewDocument
	if err := s.guard(func() (err error) {
		doc, err = s.calls.FPDF_CreateNewDocument(&requests.FPDF_CreateNewDocument{})
		return err
	}); err != nil {
		return s.Failure(err, "the PDF engine could not create a document")
	}
	defer s.guard(func() error {
		_, err := s.calls.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
		return err
	})
	if err := s.guard(func() error {
		_, err := s.calls.FPDF_ImportPagesByIndex(&requests.FPDF_ImportPagesByIndex{Source: s.doc, Destination: doc.Document, PageIndices: indices, Index: 0})
		return err
	}); err != nil {
		return s.Failure(err, "the pages of the PDF could not be copied")
	}
	cw := &convert.ContextWriter{Ctx: s.ctx, W: out}
	if err := s.guard(func() error {
		_, err := s.calls.FPDF_SaveAsCopy(&requests.FPDF_SaveAsCopy{Document: doc.Document, Flags: requests.SaveFlagNoIncremental, FileWriter: cw})
		return err
	}); err != nil {
		return s.Failure(err, "the new PDF could not be written")
	}
	return nil
}

// CacheDirEnv names the variable that sets where PDFium's compiled WebAssembly is kept
// between processes; "off" keeps nothing. Unset: <user cache dir>/convsvc/wazero. It is the
// same variable the AVIF and JPEG XL codecs use (wasmcodec.CacheDirEnv).
const CacheDirEnv = wasmcodec.CacheDirEnv

// runtimeConfig adds a compilation cache on disk to cfg, so only the first process on a
// machine pays for compiling PDFium (seconds of CPU and hundreds of MB); later ones load the
// compiled code. wazero keys the cache by its own version and the module's hash, so an upgrade
// never loads stale code. Without a usable directory, compilation happens in memory as before.
func runtimeConfig(cfg wazero.RuntimeConfig) wazero.RuntimeConfig {
	dir := wasmcodec.CacheDir()
	if dir == "" {
		return cfg
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return cfg
	}
	return cfg.WithCompilationCache(cache)
}
