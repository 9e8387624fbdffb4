package data

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// TestData_Scaling holds issue 18 item 2 for the data family: every reader and writer takes
// about 4x the CPU time for 4x the input, for the shapes that would expose a check against
// every earlier item (wide objects, many attributes, many distinct or repeated children,
// merge keys, many tables, many columns and rows).
func TestData_Scaling(t *testing.T) {
	build := func(n int, head, tail string, item func(i int) string, sep string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(item(i))
		}
		b.WriteString(tail)
		return []byte(b.String())
	}
	wideJSON := func(n int) []byte {
		return build(n, "{", "}", func(i int) string { return fmt.Sprintf(`"key%d":%d`, i, i) }, ",")
	}
	rowsJSON := func(n int) []byte {
		return build(n, "[", "]", func(i int) string { return fmt.Sprintf(`{"id":%d,"name":"n%d","ok":true}`, i, i) }, ",")
	}
	cases := []struct {
		name, from, to string
		n              int
		gen            func(n int) []byte
	}{
		{"json wide object to yaml", "json", "yaml", 20_000, wideJSON},
		{"json wide object to toml", "json", "toml", 20_000, wideJSON},
		{"json wide object to xml", "json", "xml", 20_000, wideJSON},
		{"json rows to csv", "json", "csv", 10_000, rowsJSON},
		{"json rows to xlsx", "json", "xlsx", 5_000, rowsJSON},
		{"json tables to toml", "json", "toml", 5_000, func(n int) []byte {
			return build(n, "{", "}", func(i int) string { return fmt.Sprintf(`"t%d":{"a":%d,"b":"x"}`, i, i) }, ",")
		}},
		{"yaml wide mapping", "yaml", "json", 10_000, func(n int) []byte {
			return build(n, "", "\n", func(i int) string { return fmt.Sprintf("key%d: %d", i, i) }, "\n")
		}},
		{"yaml merge keys", "yaml", "json", 2_000, func(n int) []byte {
			return build(n, "base: &b {a: 1, b: 2, c: 3}\nitems:\n", "\n", func(i int) string { return fmt.Sprintf("  - {<<: *b, id: %d}", i) }, "\n")
		}},
		// go-toml's key check is quadratic in one table's keys and in the number of table
		// headers, which DataMaxTOMLKeyChecks bounds (TestData_TOMLWideTableRefused); keys
		// spread over tables scale linearly.
		{"toml keys in tables of 500", "toml", "json", 5_000, func(n int) []byte {
			return build(n, "", "\n", func(i int) string {
				h := ""
				if i%500 == 0 {
					h = fmt.Sprintf("[g%d]\n", i/500)
				}
				return h + fmt.Sprintf("key%d = %d", i, i)
			}, "\n")
		}},
		{"toml array of tables", "toml", "json", 5_000, func(n int) []byte {
			return build(n, "", "\n", func(i int) string { return fmt.Sprintf("[[row]]\na = %d\nb = \"x\"", i) }, "\n")
		}},
		{"xml many attributes", "xml", "json", 10_000, func(n int) []byte {
			return build(n, "<r ", "/>", func(i int) string { return fmt.Sprintf(`a%d="%d"`, i, i) }, " ")
		}},
		{"xml distinct children", "xml", "json", 10_000, func(n int) []byte {
			return build(n, "<r>", "</r>", func(i int) string { return fmt.Sprintf("<c%d>%d</c%d>", i, i, i) }, "")
		}},
		{"xml repeated children", "xml", "json", 10_000, func(n int) []byte {
			return build(n, "<r>", "</r>", func(i int) string { return fmt.Sprintf("<c>%d</c>", i) }, "")
		}},
		{"xml mixed text", "xml", "json", 10_000, func(n int) []byte {
			return build(n, "<r>", "</r>", func(i int) string { return fmt.Sprintf("t%d<b/>", i) }, "")
		}},
		{"csv rows", "csv", "json", 10_000, func(n int) []byte {
			return build(n, "a,b,c\n", "\n", func(i int) string { return fmt.Sprintf("%d,x%d,true", i, i) }, "\n")
		}},
		{"csv wide", "csv", "json", 2_000, func(n int) []byte {
			h := build(n, "", "\n", func(i int) string { return fmt.Sprintf("c%d", i) }, ",")
			return append(h, build(n, "", "\n", func(i int) string { return fmt.Sprint(i) }, ",")...)
		}},
		{"ndjson rows", "ndjson", "csv", 10_000, func(n int) []byte {
			return build(n, "", "\n", func(i int) string { return fmt.Sprintf(`{"id":%d,"v":"x"}`, i) }, "\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			convtest.Scaling(t, cputime.Self, tc.n, tc.gen, func(t *testing.T, in []byte) error {
				_, err := runCatalog(t, tc.from, tc.to, in)
				return err
			})
		})
	}
	t.Run("xlsx rows to csv", func(t *testing.T) {
		convtest.Scaling(t, cputime.Self, 5_000, func(n int) []byte {
			var rows strings.Builder
			rows.WriteString(`<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c><c r="B1" t="s"><v>0</v></c></row>`)
			shared := []string{"b"}
			for r := 2; r <= n; r++ {
				fmt.Fprintf(&rows, `<row r="%d"><c r="A%d"><v>%d</v></c><c r="B%d" t="s"><v>%d</v></c></row>`, r, r, r, r, r-1)
				shared = append(shared, fmt.Sprintf("s%d", r))
			}
			return craftXLSX(t, rows.String(), shared)
		}, func(t *testing.T, in []byte) error {
			_, err := runCatalog(t, "xlsx", "csv", in)
			return err
		})
	})
}

// TestData_TOMLWideTableRefused: go-toml's key check is quadratic in a table's keys and in
// the number of table headers, so a file past DataMaxTOMLKeyChecks is refused before it
// decodes: a table of 8,000 keys converts, one of 9,000 (top level, under a header or
// inline) or 10,000 headers are refused, each in bounded time.
func TestData_TOMLWideTableRefused(t *testing.T) {
	keys := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format, i)
		}
		return b.String()
	}
	if _, err := runCatalog(t, "toml", "json", []byte(keys(8000, "k%d = 1\n"))); err != nil {
		t.Fatalf("a table of 8,000 keys: %v", err)
	}
	if _, err := runCatalog(t, "toml", "json", []byte(keys(2000, "[t%d]\na = 1\n"))); err != nil {
		t.Fatalf("2,000 tables: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{keys(9000, "k%d = 1\n"), "at line 8"},
		{"[a.b]\n" + keys(9000, "k%d = 1\n"), "checking them for duplicates would take over 32000000 steps"},
		{keys(10000, "[t%d]\n"), "input's keys are too many for their tables"},
		{"x = {" + strings.TrimSuffix(keys(9000, "k%d = 1,"), ",") + "}\n", "input's keys are too many for their tables"},
	} {
		_, err := runCatalog(t, "toml", "json", []byte(tc.in))
		wantUserError(t, err, tc.want)
	}
}
