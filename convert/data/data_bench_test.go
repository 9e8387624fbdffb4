package data

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// benchCSV returns a CSV of about size bytes: an id, a name, a price, a flag and free text.
func benchCSV(size int) []byte {
	var b bytes.Buffer
	b.WriteString("id,name,price,active,comment\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%d,user %d,%d.%02d,%v,\"a comment, with a comma and \"\"quotes\"\" %d\"\n", i, i%977, i%1000, i%100, i%3 == 0, i)
	}
	return b.Bytes()
}

// benchConverter measures one converter on in-memory input, reporting input MB/s and output size.
func benchConverter(b *testing.B, run func(context.Context, *io.SectionReader, io.Writer, convert.Params) error, input []byte) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	var out convert.CountingWriter
	out.W = io.Discard
	for b.Loop() {
		out.N = 0
		if err := run(context.Background(), io.NewSectionReader(bytes.NewReader(input), 0, int64(len(input))), &out, convert.Params{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.N), "out-bytes")
}

func BenchmarkData(b *testing.B) {
	csv10 := benchCSV(10 << 20)
	b.Run("csv-json-10MB", func(b *testing.B) { benchConverter(b, dataRun("csv", "json"), csv10) })
	b.Run("csv-ndjson-10MB", func(b *testing.B) { benchConverter(b, dataRun("csv", "ndjson"), csv10) })
	var js bytes.Buffer
	if err := dataRun("csv", "json")(context.Background(), io.NewSectionReader(bytes.NewReader(csv10), 0, int64(len(csv10))), &js, convert.Params{}); err != nil {
		b.Fatal(err)
	}
	b.Run("json-csv-10MB", func(b *testing.B) { benchConverter(b, dataRun("json", "csv"), js.Bytes()) })
	// A table wrapped in an object: Markdown reads its shape first (jsonIsTable), a pass of
	// its own over the tokens, then converts it as a table in the table reader's two passes.
	wrapped := append(append([]byte(`{"rows": `), js.Bytes()...), '}')
	b.Run("json-wrapped-markdown-10MB", func(b *testing.B) { benchConverter(b, dataRun("json", "markdown"), wrapped) })
	b.Run("json-wrapped-shape-10MB", func(b *testing.B) {
		b.SetBytes(int64(len(wrapped)))
		for b.Loop() {
			if !jsonIsTable(context.Background(), io.NewSectionReader(bytes.NewReader(wrapped), 0, int64(len(wrapped)))) {
				b.Fatal("not a table")
			}
		}
	})
	json2 := js.Bytes()[:bytes.IndexByte(js.Bytes()[2<<20:], '\n')+2<<20]
	json2 = append(bytes.TrimRight(bytes.Clone(json2), ",\n"), "\n]\n"...)
	b.Run("json-yaml-2MB", func(b *testing.B) { benchConverter(b, dataRun("json", "yaml"), json2) })
	var x bytes.Buffer
	csv2 := benchCSV(2 << 20)
	if err := dataRun("csv", "xlsx")(context.Background(), io.NewSectionReader(bytes.NewReader(csv2), 0, int64(len(csv2))), &x, convert.Params{}); err != nil {
		b.Fatal(err)
	}
	b.Run("csv-xlsx-2MB", func(b *testing.B) { benchConverter(b, dataRun("csv", "xlsx"), csv2) })
	b.Run(fmt.Sprintf("xlsx-csv-%dKB", x.Len()>>10), func(b *testing.B) { benchConverter(b, dataRun("xlsx", "csv"), x.Bytes()) })
}
