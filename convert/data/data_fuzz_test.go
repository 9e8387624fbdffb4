package data

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// bytesSection wraps bytes as a converter's input.
func bytesSection(b []byte) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

// requireUserError fails unless err is nil or an *Error: whatever the input, a converter
// reports problems the user can read, and never panics.
func requireUserError(t *testing.T, err error) {
	t.Helper()
	var ce *convert.Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
}

func addFuzzSamples(f *testing.F, dir, pattern string) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", dir, pattern))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
}

// FuzzTabular feeds arbitrary bytes to the CSV, TSV and NDJSON readers and writes what they
// accept as JSON, which must read back with the same number of rows.
func FuzzTabular(f *testing.F) {
	addFuzzSamples(f, "data", "sample.csv")
	addFuzzSamples(f, "data", "sample.tsv")
	addFuzzSamples(f, "data", "sample.ndjson")
	addFuzzSamples(f, "hostile", "data-ragged.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, from := range []string{"csv", "tsv", "ndjson"} {
			var out bytes.Buffer
			err := dataRun(from, "json")(ctx, bytesSection(data), &out, convert.Params{})
			requireUserError(t, err)
			if err != nil {
				continue
			}
			_, rows := countRows(t, from, data)
			_, back := countRows(t, "json", out.Bytes())
			if rows != back {
				t.Fatalf("%s: %d rows in, %d rows in the JSON", from, rows, back)
			}
		}
	})
}

func countRows(t *testing.T, format string, data []byte) (int, int) {
	t.Helper()
	r, closeFn, err := openTableReader(context.Background(), format, bytesSection(data), false, convert.Params{})
	if err != nil {
		t.Fatalf("reading back %s: %v", format, err)
	}
	defer closeFn()
	n := 0
	for {
		if _, err := r.next(); err == io.EOF {
			return len(r.columns()), n
		} else if err != nil {
			t.Fatalf("reading back %s: %v", format, err)
		}
		n++
	}
}

// FuzzXML reads arbitrary XML into the tree model; what it accepts must survive
// XML -> JSON -> XML -> JSON unchanged after the first step.
func FuzzXML(f *testing.F) {
	addFuzzSamples(f, "data", "sample.xml")
	addFuzzSamples(f, "hostile", "data-xxe.xml")
	f.Add([]byte(`<a x="1"><b>t</b><b/>mixed<c:d xmlns:c="u"> s </c:d></a>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var j1, x2, j2 bytes.Buffer
		err := dataRun("xml", "json")(ctx, bytesSection(data), &j1, convert.Params{})
		requireUserError(t, err)
		if err != nil {
			return
		}
		err = dataRun("json", "xml")(ctx, bytesSection(j1.Bytes()), &x2, convert.Params{})
		requireUserError(t, err)
		if err != nil {
			return
		}
		if err := dataRun("xml", "json")(ctx, bytesSection(x2.Bytes()), &j2, convert.Params{}); err != nil {
			t.Fatalf("our own XML does not read back: %v\n%s", err, x2.Bytes())
		}
		if !bytes.Equal(j1.Bytes(), j2.Bytes()) {
			t.Fatalf("XML -> JSON -> XML -> JSON changed the tree:\n%s\n%s", j1.Bytes(), j2.Bytes())
		}
	})
}

// FuzzTree reads arbitrary JSON, YAML and TOML and writes every other tree format, and
// Markdown and HTML (tables or trees laid out as documents): errors must be *Error, JSON that
// is written must read back, and the token-level shape check of JSON (jsonIsTable) must agree
// with the tree's (treeIsTable).
func FuzzTree(f *testing.F) {
	addFuzzSamples(f, "data", "sample.json")
	addFuzzSamples(f, "data", "sample.yaml")
	addFuzzSamples(f, "data", "sample.toml")
	addFuzzSamples(f, "hostile", "data-billion-laughs.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, from := range []string{"json", "yaml", "toml"} {
			for _, to := range []string{"json", "yaml", "toml", "xml", "csv", "markdown", "html"} {
				if from == to {
					continue
				}
				var out bytes.Buffer
				err := dataRun(from, to)(ctx, bytesSection(data), &out, convert.Params{})
				requireUserError(t, err)
				if err == nil && to == "json" {
					if _, err := decodeJSONTree(ctx, out.Bytes()); err != nil {
						t.Fatalf("%s -> json wrote JSON that does not read back: %v\n%s", from, err, out.Bytes())
					}
				}
			}
		}
		if tree, err := decodeJSONTree(ctx, data); err == nil {
			if got, want := jsonIsTable(ctx, bytesSection(data)), treeIsTable(tree); got != want {
				t.Fatalf("jsonIsTable = %v, treeIsTable = %v for %s", got, want, data)
			}
		}
	})
}
