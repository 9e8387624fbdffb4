package document

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// BenchmarkPDFPagesAll renders every page of the PDF named by CONVSVC_BENCH_PDF at 150 dpi as
// PNG into a zip (pages "all"), and, in the same run, pdftoppm -r 150 -png on the same file
// (docs/benchmarks.md, "Every page of a PDF").
func BenchmarkPDFPagesAll(b *testing.B) {
	path := os.Getenv("CONVSVC_BENCH_PDF")
	if path == "" {
		b.Skip("set CONVSVC_BENCH_PDF to a PDF")
	}
	c := docCatalog()
	docMustConvert(b, c, fmtPDF, "png", path, convert.Options{}) // PDFium compiled before timing
	b.Run("convsvc", func(b *testing.B) {
		for b.Loop() {
			docMustConvert(b, c, fmtPDF, "png", path, convert.Options{Pages: "all", DPI: 150})
		}
	})
	tool, err := exec.LookPath("pdftoppm")
	if err != nil {
		b.Skip("pdftoppm is not installed")
	}
	b.Run("pdftoppm", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			if out, err := exec.Command(tool, "-r", "150", "-png", path, filepath.Join(dir, "p")).CombinedOutput(); err != nil {
				b.Fatalf("pdftoppm: %v\n%s", err, out)
			}
		}
	})
}
