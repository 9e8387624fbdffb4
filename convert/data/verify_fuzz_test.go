package data

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// sameCount requires the chunk scanners (at several chunk sizes) to count b as format id as
// the byte scanner does: the same records, or both an error.
func sameCount(t *testing.T, id string, b []byte, sizes ...int) {
	t.Helper()
	sr := io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
	want, werr := refCountRecords(context.Background(), id, sr)
	for _, size := range sizes {
		got, err := countRecordsBuf(context.Background(), id, sr, size)
		if (err != nil) != (werr != nil) || (err == nil && got != want) {
			t.Fatalf("%s in chunks of %d: %d records, %v; the byte scanner: %d, %v (input %q)", id, size, got, err, want, werr, b)
		}
	}
}

// FuzzCountRecords feeds the output checks' record scanners any bytes as CSV, TSV, NDJSON
// and JSON: each counts or fails, never panics, and counts as the byte-at-a-time scanner it
// replaced does, whatever the chunks.
func FuzzCountRecords(f *testing.F) {
	convtest.AddFuzzSamples(f, "data", "sample*")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, id := range []string{"csv", "tsv", "ndjson", "json"} {
			n, err := countRecords(context.Background(), id, io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))))
			if err == nil && n < -1 {
				t.Fatalf("%s: %d records", id, n)
			}
			sameCount(t, id, b, 1, 3, 64<<10)
		}
	})
}

// TestCountRecords_SameAsByteScanner counts the samples and inputs made to cross every state
// at a chunk's edge (quotes, doubled quotes, escapes, line ends inside strings, CRLF, nested
// brackets, text after the value, cut short) with chunks of 1 to 7 bytes and 64 KiB.
func TestCountRecords_SameAsByteScanner(t *testing.T) {
	inputs := [][]byte{
		[]byte("a,b\n1,2\n\"x,\"\"y\"\"\",3\r\n\n4,5\n"),
		[]byte("a,b\n\"open,2\n"),
		[]byte("a,b\n1,2,3\n"),
		[]byte("a,b\n1,2"),
		[]byte("a\tb\n\"1\t2\n3\t4\n"),
		[]byte(`[{"a":"x\"]\\","b":[1,2,{"c":"}"}]},2,"s",[],{}, null ,true]`),
		[]byte(`[1,2`),
		[]byte(`[1,"2]`),
		[]byte(`{"a":1} 2`),
		[]byte(`]`),
		[]byte(" \n "),
		[]byte("{\"a\":\"line\nbreak\"}\n{\"b\":2}\n\n[1]\n"),
		[]byte("{\"a\":1}\n{\"b\":\n"),
		[]byte("{\"a\":\"\\\\\"}\n\"\\\"\"\n3\n"),
	}
	for _, name := range []string{"sample.csv", "sample.tsv", "sample.json", "sample.ndjson"} {
		b, err := os.ReadFile(filepath.Join(convtest.Testdata, "data", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	for _, b := range inputs {
		for _, id := range []string{"csv", "tsv", "ndjson", "json"} {
			sameCount(t, id, b, 1, 2, 3, 4, 5, 6, 7, 64<<10)
		}
	}
}
