package document

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/convert/internal/zipxml"
)

// FuzzOutputStructure feeds the PDF structure reader and the EPUB zip-of-XML check any
// bytes: each fails or passes, never panics.
func FuzzOutputStructure(f *testing.F) {
	convtest.AddFuzzSamples(f, "documents", "sample*")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
		pdfStructure(r)
		zipxml.Check(context.Background(), r, "mimetype")
	})
}
