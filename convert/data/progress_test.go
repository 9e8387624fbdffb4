package data

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// treeRecords is a JSON array of n records of five members each, one nested.
func treeRecords(n int) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "record %d", "ok": %t, "score": %d.5, "tags": {"a": "x%d", "b": [1, 2]}}`, i, i, i%2 == 0, i%97, i%13)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestTreeProgress_Values: tree conversions report the values they have read, by how far into
// the input those reach (JSON's and XML's offset, YAML's line), then the values written of
// those read; each sequence starts at 0, strictly grows, and has values in both phases.
func TestTreeProgress_Values(t *testing.T) {
	c := testCatalog()
	js := treeRecords(600) // 5,400 values
	var yml, xml bytes.Buffer
	for _, conv := range []struct {
		to  string
		out *bytes.Buffer
	}{{"yaml", &yml}, {"xml", &xml}} {
		if _, err := c.Convert(t.Context(), "json", conv.to, convert.Options{}, convtest.WriteTemp(t, js), conv.out, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		from, to string
		in       []byte
	}{{"json", "yaml", js}, {"yaml", "json", yml.Bytes()}, {"xml", "json", xml.Bytes()}, {"json", "toml", js}} {
		got := convtest.Progress(t, c, tc.from, tc.to, convert.Options{}, tc.in)
		t.Logf("%s -> %s: %d reports %v", tc.from, tc.to, len(got), got)
		convtest.CheckProgress(t, tc.from+" -> "+tc.to, got, 3, [2]float64{0, treeReadShare}, [2]float64{treeReadShare, 1})
	}
}

// TestTreeProgress_Share measures treeReadShare: how much of a tree conversion's CPU its
// reading takes. It runs only with CONVSVC_MEASURE=1.
func TestTreeProgress_Share(t *testing.T) {
	if os.Getenv("CONVSVC_MEASURE") == "" {
		t.Skip("set CONVSVC_MEASURE=1 to measure the read's share")
	}
	js := treeRecords(15000)
	for _, to := range []string{"yaml", "xml", "toml", "json"} {
		for range 3 {
			start := cputime.Self()
			tree, err := readTree(t.Context(), "json", convtest.BytesSection(js))
			if err != nil {
				t.Fatal(err)
			}
			read := cputime.Self() - start
			var out strings.Builder
			if err := writeTree(t.Context(), to, &out, tree); err != nil {
				t.Fatal(err)
			}
			all := cputime.Self() - start
			t.Logf("%d KB json -> %s, CPU: read %v (%.0f%%), write %v", len(js)>>10, to, read, 100*float64(read)/float64(all), all-read)
		}
	}
}
