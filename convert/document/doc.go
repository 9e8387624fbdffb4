// Package document is the document family: Markdown, HTML, plain text, DOCX, EPUB, PDF and
// SVG. It lays out Markdown, HTML, text, DOCX and EPUB as PDF, converts between the markup
// formats, extracts PDF text, renders PDF pages and SVG drawings to every raster format of the
// image family, and embeds images in PDFs. The pages option renders several pages (pdf_pages.go):
// into a zip of page files, one multi-page TIFF, or for pdf -> pdf a new PDF of those pages.
// RegisterPDFPageArchive adds pdf -> zip (one PNG per page) once the archive family's zip
// format is registered. SVG is drawn by convert/document/internal/svg, PDFs are read and
// rendered by convert/document/internal/pdfium, and text faces come from convert/internal/fonts;
// this package reads the inputs, lays out documents and registers the converters.
//
// Modules: yuin/goldmark (Markdown), golang.org/x/net/html and JohannesKaufmann/html-to-markdown
// (HTML), codeberg.org/go-pdf/fpdf with the Go fonts (PDF layout), klippa-app/go-pdfium in
// WebAssembly run by tetratelabs/wazero (PDF reading and rendering, no cgo), srwiley/oksvg and
// rasterx (SVG), golang.org/x/text (legacy text encodings), and convert/image for pixels.
//
// Limits: MaxMarkdownBytes, MaxMarkupBytes and MaxSVGBytes bound the inputs held in memory,
// MaxPDFPages the pages read or rendered, Limits.MaxPixels every rendered raster (DefaultPDFDPI
// unless the dpi option says otherwise); DOCX and EPUB archives are read within entry and
// expansion limits, and external references (files, URLs) are never fetched. Renderings reserve
// their memory estimate from the catalog's budget.
package document
