package data

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// proxyTOML is a configuration file of several top-level tables, nested tables, arrays of
// scalars and an array of tables: what once became one row of narrow columns of compact JSON
// in a PDF, wrapped inside its numbers ("808" / "0") and keys ("\"ceiling\":" / "4.5").
const proxyTOML = `title = "Edge proxy"

[server]
host = "proxy.internal.example.com"
port = 8080
tls = true

[server.tls_options]
min_version = "1.2"
ciphers = ["TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"]

[limits]
ceiling = 4.5
floor = 0.25
burst = 1200

[database]
url = "postgres://app@db.internal.example.com:5432/app?sslmode=require"
pool = 16

[logging]
level = "info"
targets = ["stdout", "/var/log/proxy/access.log"]

[cache]
ttl_seconds = 3600
max_entries = 100000

[[upstreams]]
name = "alpha"
weight = 3

[[upstreams]]
name = "beta"
weight = 7
`

// TestData_TreeAsPDF: a tree that is not a table is laid out as one in a PDF (through HTML):
// every key and every value is found whole in the PDF's text, as the repo's own PDF text
// extraction (PDFium) reads it.
func TestData_TreeAsPDF(t *testing.T) {
	pdf, err := runCatalog(t, "toml", "pdf", []byte(proxyTOML))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCatalog(t, "pdf", "txt", pdf)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	var tokens []string
	for _, line := range strings.Split(proxyTOML, "\n") {
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		tokens = append(tokens, k)
		for _, s := range regexp.MustCompile(`"[^"]*"|[^\s\[\],"]+`).FindAllString(v, -1) {
			tokens = append(tokens, strings.Trim(s, `"`))
		}
	}
	tokens = append(tokens, "server.tls_options", "upstreams")
	for _, tok := range tokens {
		if !regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(tok) + `($|[\s,])`).MatchString(text) {
			t.Errorf("the PDF's text lacks %q whole:\n%s", tok, text)
		}
	}
}

// TestData_TreeAsMarkdown: the layout itself: scalars as key | value rows, a section per
// table named by its path, arrays of scalars joined, an array of tables as a table, and
// Markdown's punctuation in keys and values escaped.
func TestData_TreeAsMarkdown(t *testing.T) {
	got := dataConvertOK(t, "toml", "markdown", proxyTOML+"\n[odd]\n\"a.b|c\" = \"*x* <y> `z`\"\n")
	want := "| key | value |\n| --- | --- |\n| title | Edge proxy |\n\n" +
		"# server\n\n| key | value |\n| --- | --- |\n| host | proxy.internal.example.com |\n| port | 8080 |\n| tls | true |\n\n" +
		"## server.tls_options\n\n| key | value |\n| --- | --- |\n| min_version | 1.2 |\n| ciphers | TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256 |\n\n" +
		"# limits\n\n| key | value |\n| --- | --- |\n| ceiling | 4.5 |\n| floor | 0.25 |\n| burst | 1200 |\n\n" +
		"# database\n\n| key | value |\n| --- | --- |\n| url | postgres://app@db.internal.example.com:5432/app?sslmode=require |\n| pool | 16 |\n\n" +
		"# logging\n\n| key | value |\n| --- | --- |\n| level | info |\n| targets | stdout, /var/log/proxy/access.log |\n\n" +
		"# cache\n\n| key | value |\n| --- | --- |\n| ttl_seconds | 3600 |\n| max_entries | 100000 |\n\n" +
		"# upstreams\n\n| name | weight |\n| --- | --- |\n| alpha | 3 |\n| beta | 7 |\n\n" +
		"# odd\n\n| key | value |\n| --- | --- |\n| a.b\\|c | \\*x\\* \\<y\\> \\`z\\` |\n"
	if got != want {
		t.Errorf("markdown:\n%s\nwant\n%s", got, want)
	}
}

// TestData_TreeShapes: JSON, YAML and XML trees take the same layout; a record array, or one
// wrapped in single-member objects, stays a table; arrays of mixed values get index rows and
// sections.
func TestData_TreeShapes(t *testing.T) {
	for _, tc := range []struct{ from, in, want string }{
		{"json", `[1, "two", {"three": 3}, [4]]`,
			"| index | value |\n| --- | --- |\n| [0] | 1 |\n| [1] | two |\n| [3] | 4 |\n\n# [2]\n\n| key | value |\n| --- | --- |\n| three | 3 |\n"},
		{"json", `[[{"a": 1}, {"a": 2}], {"l": "[x](y)"}]`,
			"# [0]\n\n| a |\n| --- |\n| 1 |\n| 2 |\n\n# [1]\n\n| key | value |\n| --- | --- |\n| l | \\[x\\](y) |\n"},
		{"json", `{"a": {"b": {"c": null}}, "d": []}`,
			"| key | value |\n| --- | --- |\n| d | [] |\n\n# a\n\n## a.b\n\n| key | value |\n| --- | --- |\n| c | null |\n"},
		{"json", `{"rows": {"row": [{"a": 1}, {"a": 2}]}}`, "| a |\n| --- |\n| 1 |\n| 2 |\n"},
		{"json", `[{"a": 1, "b": {"c": 2}}]`, "| a | b |\n| --- | --- |\n| 1 | {\"c\":2} |\n"},
		// A wrapped array of objects stays a table, nested values as compact JSON.
		{"yaml", "list:\n  - {name: x, tags: [a, b]}\n  - {name: y, deep: {k: v}}\n",
			"| name | tags | deep |\n| --- | --- | --- |\n| x | [\"a\",\"b\"] |  |\n| y |  | {\"k\":\"v\"} |\n"},
		{"yaml", "n: 1\nlist:\n  - {name: x, tags: [a, b]}\n  - {name: y, deep: {k: v}}\n",
			"| key | value |\n| --- | --- |\n| n | 1 |\n\n# list\n\n## list[0]\n\n| key | value |\n| --- | --- |\n| name | x |\n| tags | a, b |\n\n## list[1]\n\n| key | value |\n| --- | --- |\n| name | y |\n\n### list[1].deep\n\n| key | value |\n| --- | --- |\n| k | v |\n"},
		{"xml", "<config><a>1</a><b>2</b></config>", "# config\n\n| key | value |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n"},
	} {
		if got := dataConvertOK(t, tc.from, "markdown", tc.in); got != tc.want {
			t.Errorf("%s %s:\n%s\nwant\n%s", tc.from, tc.in, got, tc.want)
		}
	}
	html := dataConvertOK(t, "json", "html", `{"a & b": 1, "s": {"k": "<v>"}}`)
	for _, want := range []string{"<tr><td>a &amp; b</td><td>1</td></tr>", "<h1>s</h1>", "<tr><td>k</td><td>&lt;v&gt;</td></tr>"} {
		if !strings.Contains(html, want) {
			t.Errorf("html lacks %q:\n%s", want, html)
		}
	}
}

// TestJSONIsTable: the token-level shape check of a JSON input agrees with the tree's.
func TestJSONIsTable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`[]`, true}, {`{}`, true}, {`[{"a": 1}, 2]`, true}, {`{"a": {"b": [{"c": 1}]}}`, true},
		{`{"a": {}}`, true}, {"\uFEFF[{}]", true},
		{`[1, {"a": 1}]`, false}, {`{"a": 1}`, false}, {`{"a": [{"x": 1}], "b": 2}`, false},
		{`{"a": [1, 2]}`, false}, {`"s"`, false}, {`{"a": {"b": 1, "c": [{}]}}`, false},
	} {
		tree, err := decodeJSONTree(context.Background(), []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonIsTable(context.Background(), bytesSection([]byte(tc.in))); got != tc.want || treeIsTable(tree) != tc.want {
			t.Errorf("%s: jsonIsTable %v, treeIsTable %v, want %v", tc.in, got, treeIsTable(tree), tc.want)
		}
	}
}

// TestData_MarkdownTableEscapes: a table cell reads literally in Markdown: no emphasis, code,
// HTML tag (which a renderer would hide), entity or link is made of a value.
func TestData_MarkdownTableEscapes(t *testing.T) {
	got := dataConvertOK(t, "json", "markdown", `[{"t": "<friends> & *x* a_b _c_ \\ [l](u) &amp; ~s~ |"}]`)
	want := "| t |\n| --- |\n| \\<friends\\> \\& \\*x\\* a_b \\_c\\_ \\\\ \\[l\\](u) \\&amp; \\~s\\~ \\| |\n"
	if got != want {
		t.Errorf("markdown:\n%s\nwant\n%s", got, want)
	}
}
