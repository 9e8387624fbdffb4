// Package pdfwrite writes a small PDF 1.4 file from its objects' bodies: the objects numbered
// from 1, a cross-reference table with each object's true offset, and the trailer. It serves
// PDFs made in code (PDFium's warm-up page, test inputs), not documents: those are laid out by
// fpdf.
package pdfwrite

import (
	"bytes"
	"fmt"
)

// File is a PDF 1.4 file of objects, numbered from 1 in order; object 1 must be the catalog
// (the trailer's /Root). The cross-reference table holds each object's byte offset, so a
// reader need not scan the file to rebuild it.
func File(objects ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		b.Write(o)
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// Stream is the body of a stream object: the dictionary's entries dict (without the angle
// brackets) with /Length added, then data.
func Stream(dict string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<<%s /Length %d >>\nstream\n", dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream")
	return b.Bytes()
}
