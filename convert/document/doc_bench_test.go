//go:build unix

package document

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// docBenchInputs writes the document benchmark inputs: the samples, and larger generated
// Markdown (about 200 KB: 50 sections of prose, lists, code and a table) and HTML (about
// 1 MB, the Markdown rendered five times over).
func docBenchInputs(b *testing.B) map[string]string {
	b.Helper()
	dir := b.TempDir()
	paths := map[string]string{}
	for _, name := range []string{"sample.md", "sample.html", "sample.txt", "sample.docx", "sample.pdf", "sample.svg"} {
		paths[name] = docPath(name)
	}
	paths["sample.jpeg"] = filepath.Join("..", "..", "testdata", "images", "sample.jpeg")
	paths["sample.png"] = filepath.Join("..", "..", "testdata", "images", "sample.png")
	var md strings.Builder
	for i := range 50 {
		fmt.Fprintf(&md, "## Section %d\n\n", i+1)
		for range 4 {
			md.WriteString(strings.Repeat("Plain words with **bold**, *italic* and `code` in Zürich and Москва. ", 6) + "\n\n")
		}
		md.WriteString("- one\n- two\n  - nested\n1. first\n2. second\n\n```\nfunc f() { return }\n```\n\n")
		md.WriteString("| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n| four | five | six |\n\n")
	}
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		paths[name] = p
	}
	write("large.md", md.String())
	doc, err := parseMarkdown(context.Background(), []byte(md.String()))
	if err != nil {
		b.Fatal(err)
	}
	body, err := renderMarkdownHTML(doc, []byte(md.String()))
	if err != nil {
		b.Fatal(err)
	}
	write("large.html", "<html><body>"+strings.Repeat(string(body), 5)+"</body></html>")
	return paths
}

// BenchmarkDocuments measures the document family's conversions. pdf->png renders page 1 of
// the sample (A5) at 150 dpi; PDFium is compiled before the timer starts (see
// BenchmarkPDFiumFirstCall for that cost).
func BenchmarkDocuments(b *testing.B) {
	paths := docBenchInputs(b)
	c := testCatalog(convert.Limits{})
	if _, err := docConvertFile(b, c, fmtPDF, fmtTXT, paths["sample.pdf"], convert.Options{}); err != nil {
		b.Fatal(err)
	}
	cases := []struct{ input, from, to string }{
		{"sample.md", fmtMarkdown, fmtPDF},
		{"large.md", fmtMarkdown, fmtPDF},
		{"large.md", fmtMarkdown, fmtHTML},
		{"large.md", fmtMarkdown, fmtEPUB},
		{"sample.html", fmtHTML, fmtMarkdown},
		{"large.html", fmtHTML, fmtMarkdown},
		{"large.html", fmtHTML, fmtTXT},
		{"sample.html", fmtHTML, fmtPDF},
		{"sample.txt", fmtTXT, fmtPDF},
		{"sample.docx", fmtDOCX, fmtMarkdown},
		{"sample.pdf", fmtPDF, "png"},
		{"sample.pdf", fmtPDF, fmtTXT},
		{"sample.svg", fmtSVG, "png"},
		{"sample.svg", fmtSVG, fmtPDF},
		{"sample.jpeg", "jpeg", fmtPDF},
		{"sample.png", "png", fmtPDF},
	}
	for _, tc := range cases {
		b.Run(tc.input+"->"+tc.to, func(b *testing.B) {
			f, err := os.Open(paths[tc.input])
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			var out convert.CountingWriter
			out.W = discard{}
			dir := b.TempDir()
			for b.Loop() {
				out.N = 0
				if _, err := c.Convert(context.Background(), tc.from, tc.to, convert.Options{}, f, &out, dir); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.N), "out-bytes")
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkPDFiumFirstCall measures a fresh process's first PDF conversion (sample.pdf to
// text): compiling PDFium's wasm module dominates. It reports the child's CPU time and peak
// RSS; the child is this test binary running TestPDFiumFirstCallChild.
func BenchmarkPDFiumFirstCall(b *testing.B) {
	var cpu, rss float64
	var n int
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPDFiumFirstCallChild$", "-test.count=1", "-test.bench=^$")
		cmd.Env = append(os.Environ(), "CONVSVC_PDFIUM_FIRST_CALL=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
			rss = max(rss, float64(ru.Maxrss)/1024)
		}
		n++
	}
	b.ReportMetric(cpu/float64(n), "cpu-s/op")
	b.ReportMetric(rss, "peak-rss-MB")
}

// TestPDFiumFirstCallChild is BenchmarkPDFiumFirstCall's child process.
func TestPDFiumFirstCallChild(t *testing.T) {
	if os.Getenv("CONVSVC_PDFIUM_FIRST_CALL") != "1" {
		t.Skip("run by BenchmarkPDFiumFirstCall")
	}
	docMustConvert(t, testCatalog(convert.Limits{}), fmtPDF, fmtTXT, docPath("sample.pdf"), convert.Options{})
}
