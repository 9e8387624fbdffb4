// Package testpdf writes small PDFs for tests from their objects' bodies: the objects
// numbered from 1, a cross-reference table with each object's true offset, and the trailer.
// Tests use it for the PDFs a PDF library would not write (hostile page trees, many pages
// made cheaply) without each writing the file structure again.
package testpdf

import "github.com/convsvc/convsvc/internal/pdfwrite"

// PDF is a PDF 1.4 file of objects, numbered from 1 in order; object 1 must be the catalog
// (the trailer's /Root). The cross-reference table holds each object's byte offset
// (pdfwrite.File).
func PDF(objects ...string) []byte {
	bodies := make([][]byte, len(objects))
	for i, o := range objects {
		bodies[i] = []byte(o)
	}
	return pdfwrite.File(bodies...)
}

// Stream is the body of a stream object holding content (a page's drawing operators), with
// its /Length (pdfwrite.Stream).
func Stream(content string) string {
	return string(pdfwrite.Stream("", []byte(content)))
}
