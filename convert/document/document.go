package document

import (
	"context"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document/internal/pdfium"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/internal/bytesize"
)

// Version names the document family's converters' output for the conversion cache
// (convert.Converter.Version): raise it whenever a change alters what they write, so cached
// outputs of the old code are never served.
const Version = "document/1"

// Document, PDF and vector formats.
//
//   - markdown (CommonMark + GFM, goldmark) -> html, txt, pdf, epub
//   - html -> markdown (html-to-markdown, tables and strikethrough kept), txt, pdf, epub
//   - txt -> html, pdf
//   - docx (word/document.xml read with archive/zip + encoding/xml) -> html, markdown, txt
//   - pdf -> every writable raster (PDFium compiled to wasm, run by wazero), txt, and pdf
//     (the pages option's selection, copied by PDFium)
//   - svg (oksvg) -> every writable raster, pdf
//   - every readable raster -> pdf (one page sized to the image; JPEG embedded as is)
//
// PDF output is laid out here on fpdf with the Go fonts (gofont, BSD) embedded as UTF-8 TrueType:
// headings, wrapped paragraphs, lists, code in monospace, tables, images from data: URIs,
// pagination. Nothing a document refers to is ever fetched: links stay links, images that
// are not data: URIs are dropped, SVG and XML DTDs are refused.

// Limits of the document converters, on top of Limits.
const (
	// MaxMarkupBytes bounds HTML and text inputs, which are held in memory whole together
	// with their syntax tree (Markdown has its own, smaller MaxMarkdownBytes).
	MaxMarkupBytes = 16 << 20
	// MaxSVGBytes bounds SVG inputs, parsed whole into paths.
	MaxSVGBytes = 16 << 20
	// MaxPDFPages bounds the pages of a PDF read (text extraction, page numbers) or written.
	MaxPDFPages = 10000
	// DefaultPDFDPI is the resolution PDF pages are rendered at when the job sets no dpi.
	DefaultPDFDPI = 150
)

// Document format ids.
const (
	fmtPDF      = "pdf"
	fmtMarkdown = "markdown"
	fmtHTML     = "html"
	fmtTXT      = "txt"
	fmtDOCX     = "docx"
	fmtEPUB     = "epub"
	fmtSVG      = "svg"
)

// documentFormats lists the formats this family registers.
var documentFormats = []convert.Format{
	{ID: fmtPDF, Name: "PDF document", Category: convert.CategoryDocument, Extensions: []string{"pdf"}, MIME: "application/pdf", Options: []string{convert.OptPages}, MultiPage: true},
	{ID: fmtMarkdown, Name: "Markdown document", Category: convert.CategoryDocument, Extensions: []string{"md", "markdown"}, MIME: "text/markdown"},
	{ID: fmtHTML, Name: "HTML document", Category: convert.CategoryDocument, Extensions: []string{"html", "htm"}, MIME: "text/html"},
	{ID: fmtTXT, Name: "Plain text", Category: convert.CategoryDocument, Extensions: []string{"txt"}, MIME: "text/plain"},
	{ID: fmtDOCX, Name: "Word document", Category: convert.CategoryDocument, Extensions: []string{"docx"},
		MIME: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
	{ID: fmtEPUB, Name: "EPUB e-book", Category: convert.CategoryDocument, Extensions: []string{"epub"}, MIME: "application/epub+zip"},
	{ID: fmtSVG, Name: "SVG image", Category: convert.CategoryImage, Extensions: []string{"svg"}, MIME: "image/svg+xml"},
}

// docRun is the body of a document converter.
type docRun = func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error

// budgetedRun reserves memory from the catalog's budget for run, as estimated from the
// input's size.
func budgetedRun(c *convert.Catalog, estimate func(size int64) int64, run docRun) docRun {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		est := int64(convimage.BaseConversionMemory) + estimate(in.Size())
		if err := c.AcquireMemory(ctx, est, "converting this "+bytesize.Format(in.Size())+" document"); err != nil {
			return err
		}
		defer c.ReleaseMemory(est)
		return run(ctx, in, out, p)
	}
}

// perInputByte estimates n bytes per input byte, counting at most MaxMarkupBytes: larger
// inputs are refused by the converter itself.
func perInputByte(n float64) func(int64) int64 {
	return func(size int64) int64 { return int64(n * float64(min(size, MaxMarkupBytes))) }
}

// docxEstimate is a DOCX's: the input is compressed and mostly images that are not read, so it
// is bounded by what word/document.xml may expand to.
func docxEstimate(size int64) int64 {
	return min(128*size, 6*docxMaxDocumentBytes)
}

// pdfiumEstimate is a PDF read by PDFium: one instance, which reads the input on demand.
func pdfiumEstimate(int64) int64 { return pdfium.InstanceMemory }

// Register adds the documents, PDF and vector graphics formats and their converters, with
// rasters to and from every image format already in c (register the image family first).
func Register(c *convert.Catalog) {
	for _, f := range documentFormats {
		c.AddFormat(f)
	}
	add := func(from, to string, lossy bool, run docRun) {
		// PDFium's conversions count the pages they have done (renderPages, pdfToText); the
		// layouts to PDF the input their pages laid out hold (pdfDoc.layoutProgress).
		counts := from == fmtPDF && to != fmtPDF ||
			to == fmtPDF && (from == fmtMarkdown || from == fmtHTML || from == fmtTXT)
		c.AddConverter(convert.Converter{Version: Version, From: from, To: to, Lossy: lossy, Run: run, Drops: documentDrops(from, to), Counts: counts})
	}

	// Memory estimates per input byte, from the heap peaks of 4 MB Markdown and 14 MB HTML
	// inputs (goldmark's syntax tree and fpdf's pages are the bulk).
	budgeted := func(estimate func(int64) int64, run docRun) docRun { return budgetedRun(c, estimate, run) }
	add(fmtMarkdown, fmtHTML, false, budgeted(perInputByte(64), markdownToHTML))
	add(fmtMarkdown, fmtTXT, true, budgeted(perInputByte(64), markdownToText))
	add(fmtMarkdown, fmtPDF, true, budgeted(perInputByte(128), markdownToPDF))
	add(fmtMarkdown, fmtEPUB, false, budgeted(perInputByte(128), markdownToEPUB))

	add(fmtHTML, fmtMarkdown, true, budgeted(perInputByte(48), htmlToMarkdown))
	add(fmtHTML, fmtTXT, true, budgeted(perInputByte(64), htmlToText))
	add(fmtHTML, fmtPDF, true, budgeted(perInputByte(96), htmlToPDF))
	add(fmtHTML, fmtEPUB, true, budgeted(perInputByte(64), htmlToEPUB))

	add(fmtTXT, fmtHTML, false, budgeted(perInputByte(8), textToHTML))
	add(fmtTXT, fmtPDF, true, budgeted(perInputByte(64), textToPDF))

	add(fmtDOCX, fmtHTML, true, budgeted(docxEstimate, docxToHTML))
	add(fmtDOCX, fmtMarkdown, true, budgeted(docxEstimate, docxToMarkdown))
	add(fmtDOCX, fmtTXT, true, budgeted(docxEstimate, docxToText))

	add(fmtPDF, fmtTXT, true, budgeted(pdfiumEstimate, pdfToText))
	add(fmtPDF, fmtPDF, false, budgeted(selectPDFPagesEstimate, pdfSelectPages))
	add(fmtSVG, fmtPDF, true, svgToPDF(c))

	// Rasters: every writable image format from PDF pages and SVG, and every readable one to
	// PDF, straight through the image family's codecs so no step goes through a temporary PNG.
	for i := range convimage.Codecs {
		codec := &convimage.Codecs[i]
		if _, ok := c.Format(codec.ID); !ok {
			continue
		}
		if codec.Encode != nil {
			add(fmtPDF, codec.ID, true, pdfToRaster(c, codec))
			add(fmtSVG, codec.ID, true, svgToRaster(c, codec))
		}
		if codec.Decode != nil {
			add(codec.ID, fmtPDF, false, rasterToPDF(c, codec))
		}
	}
	registerVerifiers(c)
}
