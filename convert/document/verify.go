package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/convsvc/convsvc/convert"
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
// at a cross-reference table or stream inside the file, %%EOF at the end), and PDFium opens it
// with the pages the job promised: those the pages option selects of a PDF input, at least one
// otherwise. PDFium reads what fpdf (Markdown, HTML, text, SVG and rasters to PDF) writes;
// page selection (PDF to PDF) is written by PDFium itself.
func verifyPDF(c *convert.Catalog) convert.Verifier {
	return func(ctx context.Context, out *io.SectionReader, chk convert.Check) error {
		if err := pdfStructure(out); err != nil {
			return err
		}
		want := -1
		if chk.InputFormat == fmtPDF && chk.Input != nil {
			n, err := pdfPageCount(ctx, c, chk.Input)
			if err != nil {
				return fmt.Errorf("the input's pages could not be counted again: %w", err)
			}
			want = n
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
		}
		got, err := pdfPageCount(ctx, c, out)
		if err != nil {
			return err
		}
		if want >= 0 && got != want {
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
	s, err := openPDF(ctx, r)
	if err != nil {
		return 0, err
	}
	defer s.close()
	return s.pages, nil
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
	if !bytes.HasPrefix(at, []byte("xref")) && !bytes.Contains(at, []byte(" obj")) {
		return fmt.Errorf("the PDF's startxref %d does not point at a cross-reference", off)
	}
	return nil
}
