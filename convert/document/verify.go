package document

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	"github.com/convsvc/convsvc/convert/internal/zipxml"
)

// registerVerifiers adds the output checks of PDF and EPUB. HTML, Markdown and plain text
// have none: any text is a valid file of them (docs/reliability.md).
func registerVerifiers(c *convert.Catalog) {
	c.AddVerifier(fmtPDF, verifyPDF(c))
	c.AddVerifier(fmtEPUB, func(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
		return zipxml.Check(ctx, out, "mimetype", "META-INF/container.xml")
	})
}

// verifyPDF checks a PDF output: its file structure is whole (the header, startxref pointing
// at a cross-reference table or stream inside the file, %%EOF at the end, and every object a
// cross-reference table lists found at its offset). A PDF made of a PDF (page selection) is
// opened by PDFium and must hold the pages the job promised; PDFium also writes those, so the
// page count is the check there. The PDFs fpdf lays out (Markdown, HTML, text, SVG, rasters)
// promise no page count, and opening them in PDFium cost 70% of the conversion
// (docs/benchmarks.md): their structure is the check.
func verifyPDF(c *convert.Catalog) convert.Verifier {
	return func(ctx context.Context, out *io.SectionReader, chk convert.Check) error {
		if err := pdfStructure(out); err != nil {
			return err
		}
		if chk.InputFormat != fmtPDF || chk.Input == nil {
			return nil
		}
		n, err := pdfPageCount(ctx, c, chk.Input)
		if err != nil {
			return fmt.Errorf("the input's pages could not be counted again: %w", err)
		}
		want := n
		if chk.Options.Pages != "" {
			spec, err := convert.ParsePages(chk.Options.Pages)
			if err != nil {
				return err
			}
			pages, err := spec.Resolve(n)
			if err != nil {
				return err
			}
			want = len(pages)
		}
		got, err := pdfPageCount(ctx, c, out)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("the PDF has %d pages where the job promised %d", got, want)
		}
		return nil
	}
}

// pdfPageCount opens a PDF in PDFium, within the catalog's memory budget, and counts its pages.
func pdfPageCount(ctx context.Context, c *convert.Catalog, r *io.SectionReader) (int, error) {
	est := pdfiumEstimate(r.Size())
	if err := c.AcquireMemory(ctx, est, "checking a PDF"); err != nil {
		return 0, err
	}
	defer c.ReleaseMemory(est)
	s, err := pdfium.Open(ctx, r)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.Pages(), nil
}

// pdfStructure checks the frame of a PDF file: "%PDF-" at the start, "%%EOF" in its last
// kilobyte, and the startxref before it pointing inside the file at "xref" or an object (a
// cross-reference stream). A file cut short loses its end.
func pdfStructure(r *io.SectionReader) error {
	head := make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err != nil || !bytes.HasPrefix(head, []byte("%PDF-")) {
		return errors.New("the PDF header is missing")
	}
	n := min(r.Size(), 1024)
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, r.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("the end of the PDF does not read: %w", err)
	}
	eof := bytes.LastIndex(tail, []byte("%%EOF"))
	sx := bytes.LastIndex(tail, []byte("startxref"))
	if eof < 0 || sx < 0 || sx > eof {
		return errors.New("the PDF lacks its trailer (startxref and %%EOF at the end): it was cut short")
	}
	num := bytes.TrimSpace(tail[sx+len("startxref") : eof])
	off, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || off <= 0 || off >= r.Size() {
		return fmt.Errorf("the PDF's startxref %q points outside the file", num)
	}
	at := make([]byte, min(64, r.Size()-off))
	if _, err := r.ReadAt(at, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("the PDF's cross-reference does not read: %w", err)
	}
	if bytes.HasPrefix(at, []byte("xref")) {
		return pdfXrefTable(r, off)
	}
	if !bytes.Contains(at, []byte(" obj")) {
		return fmt.Errorf("the PDF's startxref %d does not point at a cross-reference", off)
	}
	return nil
}

// pdfXrefTable reads a classic cross-reference table at off and wants each object in use at
// its offset ("N G obj").
func pdfXrefTable(r *io.SectionReader, off int64) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, off, r.Size()-off), 16<<10)
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		return strings.TrimSpace(s), err
	}
	if l, err := line(); err != nil || l != "xref" {
		return errors.New("the PDF's cross-reference table does not start with xref")
	}
	at := make([]byte, 32)
	for {
		l, err := line()
		if err != nil {
			return errors.New("the PDF's cross-reference table is cut short")
		}
		if strings.HasPrefix(l, "trailer") {
			return nil
		}
		var first, count int64
		if _, err := fmt.Sscanf(l, "%d %d", &first, &count); err != nil || count < 0 || count > 10_000_000 {
			return fmt.Errorf("the PDF's cross-reference subsection %q is malformed", l)
		}
		for i := range count {
			e, err := line()
			if err != nil {
				return errors.New("the PDF's cross-reference table is cut short")
			}
			var objOff, gen int64
			var kind string
			if _, err := fmt.Sscanf(e, "%d %d %s", &objOff, &gen, &kind); err != nil {
				return fmt.Errorf("the PDF's cross-reference entry %q is malformed", e)
			}
			if kind != "n" {
				continue
			}
			n, _ := r.ReadAt(at, objOff)
			want := strconv.FormatInt(first+i, 10) + " " + strconv.FormatInt(gen, 10) + " obj"
			if objOff <= 0 || !bytes.HasPrefix(bytes.TrimLeft(at[:n], " \r\n"), []byte(want)) {
				return fmt.Errorf("object %d of the PDF is not at offset %d, where its cross-reference puts it", first+i, objOff)
			}
		}
	}
}
