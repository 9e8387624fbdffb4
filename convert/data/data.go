package data

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"

	"github.com/convsvc/convsvc/convert"
)

// Version names the data family's converters' output for the conversion cache
// (convert.Converter.Version): raise it whenever a change alters what they write, so cached
// outputs of the old code are never served.
const Version = "data/1"

// Data formats. Two families share the json id:
//
//   - tables: csv, tsv, xlsx, ndjson and json as an array of flat objects, streamed row by
//     row where the format allows (csv, tsv, ndjson and json read in two passes; xlsx within
//     the XLSX* limits); the first row of csv, tsv and xlsx is the header.
//   - trees: json, yaml, toml and xml, held in memory whole (DataMaxTreeBytes, DataMaxNodes).
//
// Every data format converts to every other directly, and to markdown and html tables when
// the catalog has those formats. Trees become tables when they are, or wrap, an array of
// flat objects; tables become trees as an array of objects, which TOML and XML get wrapped
// as {"rows": {"row": [...]}}. A top level of several members (a configuration file), or of
// one array, becomes XML inside <root convsvc="members">, which reading XML unwraps again. An
// object or array in a Markdown, HTML or NDJSON table cell is written as its compact JSON; a
// tree that is not a table goes to Markdown and HTML laid out as a tree (data_treedoc.go). What
// a target cannot hold (null in TOML, nesting in CSV, TSV and XLSX cells, a number beyond 64
// bits in TOML) fails with a message that says where, instead of being dropped.

// dataFormats lists the data formats in registration order.
var dataFormats = []convert.Format{
	{ID: "json", Name: "JSON data", Category: convert.CategoryData, Extensions: []string{"json"}, MIME: "application/json"},
	{ID: "ndjson", Name: "Newline-delimited JSON", Category: convert.CategoryData, Extensions: []string{"ndjson", "jsonl"}, MIME: "application/x-ndjson"},
	{ID: "yaml", Name: "YAML data", Category: convert.CategoryData, Extensions: []string{"yaml", "yml"}, MIME: "application/yaml"},
	{ID: "toml", Name: "TOML data", Category: convert.CategoryData, Extensions: []string{"toml"}, MIME: "application/toml"},
	{ID: "xml", Name: "XML data", Category: convert.CategoryData, Extensions: []string{"xml"}, MIME: "application/xml"},
	{ID: "csv", Name: "CSV table", Category: convert.CategoryData, Extensions: []string{"csv"}, MIME: "text/csv"},
	{ID: "tsv", Name: "TSV table", Category: convert.CategoryData, Extensions: []string{"tsv", "tab"}, MIME: "text/tab-separated-values"},
	{ID: "xlsx", Name: "Excel workbook", Category: convert.CategoryData, Extensions: []string{"xlsx"}, MIME: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
}

// treeFormats are read and written as trees; the others are tables.
var treeFormats = []string{"json", "yaml", "toml", "xml"}

// tableTargets are written row by row; markdown and html belong to the document family.
var tableTargets = []string{"csv", "tsv", "xlsx", "ndjson", "markdown", "html"}

// nestedCellTargets write an object or array in a table cell as its compact JSON: Markdown and
// HTML as the cell's text, NDJSON as the member's value. CSV, TSV and XLSX cells refuse them
// (they would come back as strings that merely look like JSON).
var nestedCellTargets = []string{"markdown", "html", "ndjson"}

// untypedTargets hold only text, so numbers and booleans from a typed source become strings.
var untypedTargets = []string{"csv", "tsv", "xml", "markdown", "html"}

// Register adds the tabular and tree data formats and their converters.
func Register(c *convert.Catalog) {
	for _, f := range dataFormats {
		c.AddFormat(f)
	}
	targets := []string{}
	for _, f := range dataFormats {
		targets = append(targets, f.ID)
	}
	// Tables as Markdown and HTML only when the document family registered those formats
	// (it runs first), and only where it has no converter of its own for the pair.
	for _, id := range []string{"markdown", "html"} {
		if _, ok := c.Format(id); ok {
			targets = append(targets, id)
		}
	}
	for _, from := range dataFormats {
		for _, to := range targets {
			if from.ID == to {
				continue
			}
			if _, taken := c.ConverterFor(convert.Step{From: from.ID, To: to}); taken {
				continue
			}
			typed := !slices.Contains([]string{"csv", "tsv", "xml"}, from.ID)
			lossy := to == "markdown" || to == "html" || typed && slices.Contains(untypedTargets, to)
			var drops []string
			switch from.ID {
			case "xlsx":
				drops = []string{convert.WarnSheetsDropped, convert.WarnFormattingDropped, convert.WarnImagesDropped, convert.WarnLinksDropped}
			case "yaml", "toml", "xml":
				drops = []string{convert.WarnMetadataDropped}
			}
			c.AddConverter(convert.Converter{Version: Version, From: from.ID, To: to, Lossy: lossy, Run: dataRun(from.ID, to), Drops: drops,
				Counts: slices.Contains(treeFormats, from.ID) && slices.Contains(treeFormats, to)})
		}
	}
	registerVerifiers(c)
}

// dataRun returns the converter for one pair: table to table streams; anything with a tree
// on either side goes through the tree model.
func dataRun(from, to string) func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		err := dataConvert(ctx, from, to, in, out, p)
		var le *lossError
		if errors.As(err, &le) {
			return convert.Errorf(err, "%s -> %s: %s", from, to, le.msg)
		}
		return err
	}
}

func dataConvert(ctx context.Context, from, to string, in *io.SectionReader, out io.Writer, p convert.Params) error {
	fromTree := slices.Contains(treeFormats, from)
	toTable := slices.Contains(tableTargets, to) || to == "json" && !fromTree
	if fromTree && (to == "markdown" || to == "html") {
		if handled, err := treeDocument(ctx, from, to, in, out, p); handled {
			return err
		}
	}
	if toTable {
		r, closeFn, err := openTableReader(ctx, from, in, slices.Contains(nestedCellTargets, to), p)
		if err != nil {
			return err
		}
		defer closeFn()
		w, closeW, err := newTableWriter(ctx, to, out)
		if err != nil {
			return err
		}
		defer closeW()
		return copyTable(ctx, r, w)
	}
	// A tree target.
	if fromTree {
		ctx = withTreeProgress(ctx, p) // its values read, then written (progress.go)
		tree, err := readTree(ctx, from, in)
		if err != nil {
			return err
		}
		reportTreeLosses(ctx, from, in, p)
		return writeTree(ctx, to, out, tree)
	}
	r, closeFn, err := openTableReader(ctx, from, in, false, p)
	if err != nil {
		return err
	}
	defer closeFn()
	col := &treeCollector{target: formatTitle(to), done: func(tree any) error { return writeTree(ctx, to, out, tree) }}
	return copyTable(ctx, r, col)
}

// formatTitle is how messages name a data format.
func formatTitle(id string) string {
	switch id {
	case "markdown":
		return "Markdown"
	case "html":
		return "HTML"
	case "ndjson":
		return "NDJSON"
	}
	b := []byte(id)
	return string(bytes.ToUpper(b))
}

// openTableReader reads any data format as a table. With nested, a cell may hold an object or
// an array, as a nestedValue; else such a cell fails naming its path. p carries the sheet
// option and the warnings of an xlsx input.
func openTableReader(ctx context.Context, from string, in *io.SectionReader, nested bool, p convert.Params) (tableReader, func(), error) {
	nop := func() {}
	switch from {
	case "csv":
		r, err := newCSVTableReader(ctx, in, ',')
		return r, nop, err
	case "tsv":
		r, err := newCSVTableReader(ctx, in, '\t')
		return r, nop, err
	case "json", "ndjson":
		r, err := newJSONTableReader(ctx, in, from == "ndjson", nested)
		return r, nop, err
	case "xlsx":
		r, err := newXLSXTableReader(ctx, in, p)
		if err != nil {
			return nil, nop, err
		}
		return r, r.close, nil
	}
	tree, err := readTree(ctx, from, in)
	if err != nil {
		return nil, nop, err
	}
	reportTreeLosses(ctx, from, in, p)
	r, err := newTreeTable(tree, nested)
	return r, nop, err
}

// newTableWriter writes a table in a table format.
func newTableWriter(ctx context.Context, to string, out io.Writer) (tableWriter, func(), error) {
	nop := func() {}
	bw := func() *bufio.Writer { return bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10) }
	switch to {
	case "csv":
		return newCSVTableWriter(ctx, out, ','), nop, nil
	case "tsv":
		return newCSVTableWriter(ctx, out, '\t'), nop, nil
	case "json", "ndjson":
		return newJSONRowsWriter(ctx, out, to == "ndjson"), nop, nil
	case "xlsx":
		w, err := newXLSXTableWriter(ctx, out)
		if err != nil {
			return nil, nop, err
		}
		return w, w.close, nil
	case "markdown":
		return &markdownTableWriter{bw: bw()}, nop, nil
	case "html":
		return &htmlTableWriter{bw: bw()}, nop, nil
	}
	return nil, nop, convert.Errorf(convert.ErrUnsupported, "cannot write %s as a table", to)
}

// readTree reads a tree format whole.
func readTree(ctx context.Context, from string, in *io.SectionReader) (any, error) {
	data, err := readTreeInput(ctx, in, formatTitle(from))
	if err != nil {
		return nil, err
	}
	switch from {
	case "json":
		return decodeJSONTree(ctx, data)
	case "yaml":
		return decodeYAMLTree(ctx, data)
	case "toml":
		return decodeTOMLTree(ctx, data)
	case "xml":
		return decodeXMLTree(ctx, data)
	}
	return nil, convert.Errorf(convert.ErrUnsupported, "cannot read %s as a tree", from)
}

// writeTree writes a tree format.
func writeTree(ctx context.Context, to string, out io.Writer, tree any) error {
	switch to {
	case "json":
		return writeJSONTree(ctx, out, tree)
	case "yaml":
		return writeYAMLTree(ctx, out, tree)
	case "toml":
		return writeTOMLTree(ctx, out, tree)
	case "xml":
		return writeXMLTree(ctx, out, tree)
	}
	return convert.Errorf(convert.ErrUnsupported, "cannot write %s as a tree", to)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// checkTextHead checks that the start of an input is UTF-8 text; when it is not, the error
// says what it looks like. Only binary inputs are named by their magic: short text magics
// such as "BM" or "ID3" can begin a CSV header too.
func checkTextHead(data []byte, format string) error {
	head := data[:min(len(data), convert.SniffLen)]
	if len(head) == 0 {
		return nil
	}
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return convert.Errorf(nil, "input is not a valid %s file (it is UTF-16 text; save it as UTF-8)", format)
	}
	if convert.LooksLikeText(head) {
		return nil
	}
	if _, name := convert.Sniff(head); name != "unrecognised data" && name != "text" {
		return convert.Errorf(nil, "input is not a valid %s file (it looks like %s)", format, name)
	}
	return convert.Errorf(nil, "input is not a valid %s file (it is not UTF-8 text)", format)
}
