package image

import (
	"bytes"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzOutputStructure feeds the output checks' structure readers (PNG chunks, JPEG markers,
// RIFF, TIFF IFDs, ISOBMFF boxes) any bytes: each returns an error or nil, never panics or
// loops.
func FuzzOutputStructure(f *testing.F) {
	convtest.AddFuzzSamples(f, "images", "sample*")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
		for _, check := range structureChecks {
			check(r)
		}
	})
}
