package data

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzCountRecords feeds the output checks' record scanners any bytes as CSV, TSV, NDJSON
// and JSON: each counts or fails, never panics.
func FuzzCountRecords(f *testing.F) {
	convtest.AddFuzzSamples(f, "data", "sample*")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, id := range []string{"csv", "tsv", "ndjson", "json"} {
			n, err := countRecords(context.Background(), id, io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))))
			if err == nil && n < -1 {
				t.Fatalf("%s: %d records", id, n)
			}
		}
	})
}
