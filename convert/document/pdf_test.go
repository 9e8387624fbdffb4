package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
	"github.com/convsvc/convsvc/internal/testing/testpdf"
)

// TestPDF_Render renders pages of the sample (A5 portrait pages and an A5-ish landscape one)
// with the page, dpi and size options.
func TestPDF_Render(t *testing.T) {
	c := docCatalog()
	cases := []struct {
		opts convert.Options
		w, h int
	}{
		{convert.Options{}, 877, 1241},                // page 1, A5 (420.94 x 595.28 points) at 150 dpi
		{convert.Options{Page: 3}, 876, 625},          // 420.x x 300 points
		{convert.Options{Page: 2, DPI: 72}, 421, 596}, // A5 at 72 dpi
		{convert.Options{Width: 300}, 300, 422},       // rendered at 52 dpi (305x430), then scaled
		{convert.Options{Page: 3, Height: 100}, 140, 100},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%+v", tc.opts), func(t *testing.T) {
			out := docMustConvert(t, c, fmtPDF, "png", docPath("sample.pdf"), tc.opts)
			img, err := png.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if got := img.Bounds().Size(); got != image.Pt(tc.w, tc.h) {
				t.Errorf("size %v, want %dx%d", got, tc.w, tc.h)
			}
			if !docDrawnOn(img) {
				t.Error("blank page")
			}
		})
	}
	_, err := docConvertFile(t, c, fmtPDF, "png", docPath("sample.pdf"), convert.Options{Page: 4})
	docWantError(t, err, "the PDF has 3 pages, so there is no page 4")
	_, err = docConvertFile(t, testCatalog(convert.Limits{MaxPixels: 10_000_000}), fmtPDF, "png", docPath("sample.pdf"), convert.Options{DPI: 600})
	docWantError(t, err, "page 1 rendered at 600 dpi would be 3508x4961 pixels, over the 10 megapixel limit; set a lower dpi")
	_, err = docConvertFile(t, c, fmtPDF, "ico", docPath("sample.pdf"), convert.Options{})
	if err != nil {
		t.Errorf("pdf to ico (fitted to 256 pixels): %v", err)
	}
}

// TestPDF_Text extracts every page's text, pages ended by form feeds, UTF-8 intact.
func TestPDF_Text(t *testing.T) {
	out := string(docMustConvert(t, docCatalog(), fmtPDF, fmtTXT, docPath("sample.pdf"), convert.Options{}))
	pages := strings.Split(strings.TrimSuffix(out, "\f"), "\f")
	want := []string{
		"Page 1: convsvc sample document. Zürich, Αθήνα, Москва.",
		"Page 2: the quick brown fox jumps over the lazy dog.",
		"Page 3: last page, with a drawing.",
	}
	if len(pages) != len(want) {
		t.Fatalf("%d pages:\n%q", len(pages), out)
	}
	for i := range want {
		if strings.TrimSpace(pages[i]) != want[i] {
			t.Errorf("page %d: %q, want %q", i+1, pages[i], want[i])
		}
	}
}

// TestPDF_PageArchive renders every page into a zip, when the catalog has the zip format.
func TestPDF_PageArchive(t *testing.T) {
	c := testCatalog(convert.Limits{})
	if _, ok := c.Format("zip"); !ok {
		t.Skip("no zip format")
	}
	RegisterPDFPageArchive(c)
	out, err := docConvertFile(t, c, fmtPDF, "zip", docPath("sample.pdf"), convert.Options{DPI: 72})
	if err != nil {
		t.Fatal(err)
	}
	files := docZipEntries(t, out)
	sizes := map[string]image.Point{"page-0001.png": {421, 596}, "page-0002.png": {421, 596}, "page-0003.png": {420, 300}}
	if len(files) != len(sizes) {
		t.Fatalf("entries %v", docKeys(files))
	}
	for name, want := range sizes {
		cfg, err := png.DecodeConfig(strings.NewReader(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := image.Pt(cfg.Width, cfg.Height); got != want {
			t.Errorf("%s is %v, want %v", name, got, want)
		}
	}
}

// TestPDF_FromRaster checks raster images become one page of their size, JPEG unchanged, and
// that every readable raster format has a direct converter.
func TestPDF_FromRaster(t *testing.T) {
	c := docCatalog()
	for i := range convimage.Codecs {
		codec := &convimage.Codecs[i]
		if codec.Decode == nil {
			continue
		}
		if steps, err := c.Path(codec.ID, fmtPDF); err != nil || len(steps) != 1 || steps[0].Lossy {
			t.Errorf("%s to pdf: %v, %v; want one lossless step", codec.ID, steps, err)
		}
	}
	jpg, err := os.ReadFile(filepath.Join("..", "..", "testdata", "images", "sample.jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := docConvertData(t, c, "jpeg", fmtPDF, jpg, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, jpg[2:]) { // fpdf writes the stream from the SOI marker's end on
		t.Error("the JPEG was re-encoded, not embedded as it is")
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(jpg))
	if err != nil {
		t.Fatal(err)
	}
	sum := docReadPDF(t, out)
	if w, h := rasterPagePoints(cfg.Width, cfg.Height); sum.pages != 1 || sum.sizes[0] != [2]float64{w, h} {
		t.Errorf("pages %d, size %v; want 1 of %vx%v", sum.pages, sum.sizes, w, h)
	}
	// Rendered back at 96 dpi, the page is the image again.
	img := docMustConvert(t, c, fmtPDF, "png", docWriteTemp(t, out), convert.Options{DPI: 96})
	back, err := png.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if back.Bounds().Dx() != cfg.Width || back.Bounds().Dy() != cfg.Height {
		t.Errorf("rendered back at 96 dpi: %v, image %dx%d", back.Bounds(), cfg.Width, cfg.Height)
	}
	if w, h := rasterPagePoints(40000, 1000); w != pdfMaxPageSide || h != 360 {
		t.Errorf("page of a 40000x1000 image: %vx%v", w, h)
	}
}

func docWriteTemp(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPDFium_StartsLazily checks, in a fresh process, that building the catalog and running
// conversions that do not read PDFs leave PDFium's runtime uncompiled.
func TestPDFium_StartsLazily(t *testing.T) {
	if os.Getenv("CONVSVC_PDFIUM_LAZY_CHILD") == "1" {
		c := testCatalog(convert.Limits{})
		for _, tc := range [][3]string{{fmtMarkdown, fmtPDF, "sample.md"}, {fmtTXT, fmtHTML, "sample.txt"}, {fmtSVG, fmtPDF, "sample.svg"}} {
			docMustConvert(t, c, tc[0], tc[1], docPath(tc[2]), convert.Options{})
		}
		if pdfium.Started() {
			t.Fatal("PDFium started without a PDF to read")
		}
		docMustConvert(t, c, fmtPDF, fmtTXT, docPath("sample.pdf"), convert.Options{})
		if !pdfium.Started() {
			t.Fatal("PDFium did not start for a PDF")
		}
		return
	}
	if convtest.RaceEnabled {
		t.Skip("compiling PDFium in a second process takes half a minute under -race")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPDFium_StartsLazily$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CONVSVC_PDFIUM_LAZY_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestPDF_KilledOnTimeout renders a page that takes minutes under a short deadline: PDFium
// must be stopped mid-page, the error must say so, and the next PDF must render as usual.
func TestPDF_KilledOnTimeout(t *testing.T) {
	c := docCatalog()
	docMustConvert(t, c, fmtPDF, fmtTXT, docPath("sample.pdf"), convert.Options{}) // PDFium compiled before the clock starts
	in, err := os.Open(filepath.Join("..", "..", "testdata", "hostile", "doc-render-bomb.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start, startCPU := time.Now(), cputime.Self()
	_, err = c.Convert(ctx, fmtPDF, "png", convert.Options{}, in, io.Discard, t.TempDir())
	elapsed, cpu := time.Since(start), cputime.Self()-startCPU
	docWantError(t, err, "conversion timed out")
	// The render-bomb burns minutes of CPU unless the timeout kills it. The bound is on CPU,
	// not wall time: at a load of 10 on 2 cores a second of this process's CPU takes about five
	// of the clock's, so a wall-time bound is one a busy machine breaks. PDFium renders on one
	// thread, so a second
	// of deadline is at most a second of its CPU; the rest is generous room for the runtime.
	if limit := 15 * time.Second * convtest.RaceSlowdown; cpu > limit {
		t.Errorf("stopped after %v of CPU (%v of wall time), over %v", cpu, elapsed, limit)
	}
	t.Logf("stopped after %v of CPU (%v of wall time)", cpu.Round(time.Millisecond), elapsed.Round(time.Millisecond))
	docMustConvert(t, c, fmtPDF, "png", docPath("sample.pdf"), convert.Options{DPI: 30})
}

// TestPDF_Concurrent renders more pages at once than there are PDFium instances.
func TestPDF_Concurrent(t *testing.T) {
	c := docCatalog()
	var wg sync.WaitGroup
	errs := make(chan error, 3*pdfium.Workers)
	for i := range 3 * pdfium.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := os.Open(docPath("sample.pdf"))
			if err != nil {
				errs <- err
				return
			}
			defer in.Close()
			errs <- func() error {
				_, err := c.Convert(context.Background(), fmtPDF, "png", convert.Options{Page: i%3 + 1, DPI: 50}, in, io.Discard, t.TempDir())
				return err
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestPDF_InstanceSeesNoFiles opens a PDF whose page embeds a file by path: PDFium has no
// file system, so the reference resolves to nothing instead of the host's file.
func TestPDF_InstanceSeesNoFiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("SECRET-CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	pdf := testpdf.PDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 4 0 R >>",
		"<< /Length 0 /F ("+secret+") >>\nstream\n\nendstream",
	)
	out, err := docConvertData(t, docCatalog(), fmtPDF, fmtTXT, pdf, convert.Options{})
	if err != nil && !errors.As(err, new(*convert.Error)) {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("SECRET")) {
		t.Fatal("PDFium read a host file")
	}
}
