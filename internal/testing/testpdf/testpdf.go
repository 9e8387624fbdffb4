// Package testpdf writes small PDFs for tests from their objects' bodies: the objects
// numbered from 1, a cross-reference table with each object's true offset, and the trailer.
// Tests use it for the PDFs a PDF library would not write (hostile page trees, many pages
// made cheaply) without each writing the file structure again.
package testpdf

import (
	"bytes"
	"fmt"
)

// PDF is a PDF 1.4 file of objects, numbered from 1 in order; object 1 must be the catalog
// (the trailer's /Root). The cross-reference table holds each object's byte offset.
func PDF(objects ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// Stream is the body of a stream object holding content (a page's drawing operators), with
// its /Length.
func Stream(content string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)
}
