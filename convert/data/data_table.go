package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/convsvc/convsvc/convert"
)

// Limits of tabular data, which streams row by row.
const (
	// DataMaxColumns is the most columns a table may have (Excel's own limit).
	DataMaxColumns = 16384
	// DataMaxRecordBytes bounds one CSV/TSV record or NDJSON line, which is held in memory whole.
	DataMaxRecordBytes = 16 << 20
)

// absent marks a column that a JSON or NDJSON row lacks, so JSON targets can leave it out
// rather than write null.
type absentValue struct{}

var absent = absentValue{}

// tableReader yields a header and then rows of cells: string, json.Number, bool, nil or absent.
type tableReader interface {
	columns() []string
	// next returns the next row, as long as the header; it is valid until the next call.
	next() ([]any, error) // io.EOF after the last row
}

// tableWriter receives the header once, then the rows, then end.
type tableWriter interface {
	begin(cols []string) error
	row(vals []any) error
	end() error
}

// copyTable streams every row from r to w, checking ctx every 256 rows.
func copyTable(ctx context.Context, r tableReader, w tableWriter) error {
	if err := w.begin(r.columns()); err != nil {
		return err
	}
	for n := 0; ; n++ {
		if n&0xff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		row, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := w.row(row); err != nil {
			return err
		}
	}
	return w.end()
}

// inferCell gives a CSV field the JSON type it spells: canonical numbers of at most 15
// significant digits (so "007", "+1" and 16-digit card numbers stay strings) and the words
// true and false; everything else, empty fields included, is a string.
func inferCell(s string) any {
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	if len(s) == 0 || len(s) > 40 || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return s
	}
	if !validJSONNumber(s) || significantDigits(s) > 15 {
		return s
	}
	return json.Number(s)
}

// significantDigits counts the digits of a number literal's mantissa, leading zeros excluded.
func significantDigits(s string) int {
	n, leading := 0, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' {
			continue
		}
		if leading && c == '0' {
			continue
		}
		leading = false
		n++
	}
	return n
}

// nestedValue is an object or array in a table cell, as compact JSON (see nestedCellTargets).
type nestedValue struct{ json []byte }

// cellText writes a cell as text for CSV, TSV, Markdown and HTML.
func cellText(v any) string {
	switch v := v.(type) {
	case nestedValue:
		return string(v.json)
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return "" // nil, absent
}

// ---- CSV and TSV ----

type csvTableReader struct {
	r    *csv.Reader
	lim  *recordLimiter
	cols []string
	row  []any
	name string // "CSV" or "TSV"
}

// recordLimiter fails a read once one record has taken more than DataMaxRecordBytes, since
// encoding/csv holds a record in memory however long it is.
type recordLimiter struct {
	ctx   context.Context
	r     io.Reader
	read  int64
	limit int64
}

var errRecordTooLong = errors.New("record too long")

func (l *recordLimiter) Read(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	if l.read >= l.limit {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}

func newCSVTableReader(ctx context.Context, in *io.SectionReader, sep rune) (*csvTableReader, error) {
	name := "CSV"
	if sep == '\t' {
		name = "TSV"
	}
	head := make([]byte, convert.SniffLen)
	n, _ := in.ReadAt(head, 0)
	if err := checkTextHead(head[:n], name); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(in, 0, in.Size()), 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(3)
	}
	lim := &recordLimiter{ctx: ctx, r: br, limit: DataMaxRecordBytes + 64<<10}
	cr := csv.NewReader(lim)
	cr.Comma = sep
	cr.ReuseRecord = true
	cr.LazyQuotes = sep == '\t'
	t := &csvTableReader{r: cr, lim: lim, name: name}
	rec, err := cr.Read()
	if err == io.EOF {
		return t, nil // an empty file: no columns, no rows
	}
	if err != nil {
		return nil, t.error(err)
	}
	if len(rec) > DataMaxColumns {
		return nil, convert.Errorf(nil, "input has %d columns, over the limit of %d", len(rec), DataMaxColumns)
	}
	t.cols = make([]string, len(rec))
	copy(t.cols, rec) // ReuseRecord: the strings themselves are not reused
	t.row = make([]any, len(rec))
	lim.limit = cr.InputOffset() + DataMaxRecordBytes + 64<<10
	return t, nil
}

func (t *csvTableReader) columns() []string { return t.cols }

func (t *csvTableReader) next() ([]any, error) {
	rec, err := t.r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, err
		}
		return nil, t.error(err)
	}
	t.lim.limit = t.r.InputOffset() + DataMaxRecordBytes + 64<<10
	for i, f := range rec {
		t.row[i] = inferCell(f)
	}
	return t.row, nil
}

func (t *csvTableReader) error(err error) error {
	if errors.Is(err, errRecordTooLong) {
		return convert.Errorf(err, "input has a record longer than %s (after byte %d); is it really %s?", convert.ByteSize(DataMaxRecordBytes), t.r.InputOffset(), t.name)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return convert.Errorf(err, "input is not a valid %s file (line %d has a different number of fields than the header's %d; every row needs the same number of fields)", t.name, pe.StartLine, len(t.cols))
		}
		return convert.Errorf(err, "input is not a valid %s file (line %d, column %d: %v)", t.name, pe.Line, pe.Column, pe.Err)
	}
	return convert.Errorf(err, "could not read the input")
}

type csvTableWriter struct {
	w    *csv.Writer
	bw   *bufio.Writer
	rec  []string
	rows int
}

func newCSVTableWriter(ctx context.Context, out io.Writer, sep rune) *csvTableWriter {
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)
	w := csv.NewWriter(bw)
	w.Comma = sep
	w.UseCRLF = sep == ',' // RFC 4180; TSV lines end in LF
	return &csvTableWriter{w: w, bw: bw}
}

func (c *csvTableWriter) begin(cols []string) error {
	if len(cols) == 0 {
		return nil
	}
	c.rec = make([]string, len(cols))
	return c.w.Write(cols)
}

func (c *csvTableWriter) row(vals []any) error {
	for i, v := range vals {
		c.rec[i] = cellText(v)
	}
	return c.w.Write(c.rec)
}

func (c *csvTableWriter) end() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	return c.bw.Flush()
}

// ---- JSON (array of flat objects) and NDJSON ----

// checkUniqueColumns fails when a header repeats a name, which objects cannot hold.
func checkUniqueColumns(cols []string, target string) error {
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		if seen[c] {
			return lossf("the header names column %q twice, but %s objects need unique keys", c, target)
		}
		seen[c] = true
	}
	return nil
}

// jsonRowsWriter writes rows as objects, one per line: a JSON array or NDJSON.
type jsonRowsWriter struct {
	bw     *bufio.Writer
	cols   []string
	keys   [][]byte // quoted keys
	buf    []byte
	ndjson bool
	n      int
}

func newJSONRowsWriter(ctx context.Context, out io.Writer, ndjson bool) *jsonRowsWriter {
	return &jsonRowsWriter{bw: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10), ndjson: ndjson}
}

func (j *jsonRowsWriter) begin(cols []string) error {
	target := "JSON"
	if j.ndjson {
		target = "NDJSON"
	}
	if err := checkUniqueColumns(cols, target); err != nil {
		return err
	}
	j.cols = cols
	for _, c := range cols {
		j.keys = append(j.keys, appendJSONString(nil, c))
	}
	if !j.ndjson {
		_, err := j.bw.WriteString("[")
		return err
	}
	return nil
}

func (j *jsonRowsWriter) row(vals []any) error {
	b := j.buf[:0]
	if !j.ndjson {
		if j.n > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
	}
	b = append(b, '{')
	first := true
	for i, v := range vals {
		if v == absent {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, j.keys[i]...)
		b = append(b, ':')
		var err error
		if b, err = appendJSONScalar(b, v, ""); err != nil {
			return err
		}
	}
	b = append(b, '}')
	if j.ndjson {
		b = append(b, '\n')
	}
	j.buf = b
	j.n++
	_, err := j.bw.Write(b)
	return err
}

func (j *jsonRowsWriter) end() error {
	if !j.ndjson {
		s := "\n]\n"
		if j.n == 0 {
			s = "]\n"
		}
		if _, err := j.bw.WriteString(s); err != nil {
			return err
		}
	}
	return j.bw.Flush()
}

// jsonTableReader streams a JSON table in two passes over the input: the first checks the
// shape and gathers the columns (the union of all keys, in order of first appearance), the
// second yields the rows. Memory holds one row at a time.
//
// A table is an array of flat objects, or one flat object (a single row). Objects with a
// single member are unwrapped on the way to it, so {"rows": {"row": [...]}} (how XML
// records and TOML arrays of tables read) is a table too; the wrapper names are not kept.
// NDJSON is one flat object per line; blank lines are skipped.
type jsonTableReader struct {
	ctx    context.Context
	in     *io.SectionReader
	ndjson bool
	nested bool   // cells may hold objects and arrays (as nestedValue)
	name   string // "JSON" or "NDJSON"
	first  bool   // in the first pass
	cols   []string
	index  map[string]int
	row    []any
	seen   map[string]bool

	// JSON
	dec       *json.Decoder
	peeked    json.Token
	wrapped   int    // wrapper objects around the table
	tablePath string // where the table is, for messages
	single    bool   // the table is one object, already opened
	pending   *member
	done      bool
	n         int // rows read

	// NDJSON
	sc     *bufio.Scanner
	lineNo int
}

func newJSONTableReader(ctx context.Context, in *io.SectionReader, ndjson, nested bool) (*jsonTableReader, error) {
	t := &jsonTableReader{ctx: ctx, in: in, ndjson: ndjson, nested: nested, name: "JSON", index: map[string]int{}, seen: map[string]bool{}}
	if ndjson {
		t.name = "NDJSON"
	}
	head := make([]byte, convert.SniffLen)
	n, _ := in.ReadAt(head, 0)
	if err := checkTextHead(head[:n], t.name); err != nil {
		return nil, err
	}
	t.first = true
	if err := t.start(); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		if i&0xff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := t.scanRow(); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
	}
	t.first = false
	t.row = make([]any, len(t.cols))
	if err := t.start(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *jsonTableReader) columns() []string { return t.cols }

func (t *jsonTableReader) next() ([]any, error) {
	for i := range t.row {
		t.row[i] = absent
	}
	if err := t.scanRow(); err != nil {
		return nil, err
	}
	return t.row, nil
}

func (t *jsonTableReader) token() (json.Token, error) {
	if t.peeked != nil {
		tok := t.peeked
		t.peeked = nil
		return tok, nil
	}
	tok, err := t.dec.Token()
	if err != nil {
		return nil, t.syntax(err)
	}
	return tok, nil
}

// syntax turns a decoder error into an *Error.
func (t *jsonTableReader) syntax(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if t.dec.InputOffset() == 0 {
			return convert.Errorf(err, "input is not a valid %s file (it is empty)", t.name)
		}
		return convert.Errorf(err, "input is not a valid %s file (it ends in the middle of a value)", t.name)
	}
	off := t.dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	return convert.Errorf(err, "input is not a valid %s file (at byte %d: %s)", t.name, off, strings.TrimPrefix(err.Error(), "json: "))
}

// start positions the reader at the first row.
func (t *jsonTableReader) start() error {
	r := bufio.NewReaderSize(&convert.ContextReader{Ctx: t.ctx, R: io.NewSectionReader(t.in, 0, t.in.Size())}, 64<<10)
	if b, err := r.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		r.Discard(3)
	}
	t.done, t.single, t.pending, t.wrapped, t.lineNo, t.n, t.peeked = false, false, nil, 0, 0, 0, nil
	if t.ndjson {
		t.sc = bufio.NewScanner(r)
		t.sc.Buffer(make([]byte, 0, 64<<10), DataMaxRecordBytes)
		return nil
	}
	t.dec = json.NewDecoder(r)
	t.dec.UseNumber()
	t.tablePath = "$"
	for {
		if t.wrapped > DataMaxDepth {
			return convert.Errorf(nil, "input is nested more than %d levels deep", DataMaxDepth)
		}
		tok, err := t.token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['):
			return nil
		case json.Delim('{'):
			t.single = true
			if !t.dec.More() {
				return nil // {}: one row without columns
			}
			kt, err := t.token()
			if err != nil {
				return err
			}
			vt, err := t.token()
			if err != nil {
				return err
			}
			if d, ok := vt.(json.Delim); ok && (d == '{' || d == '[') {
				t.single = false
				t.wrapped++
				t.tablePath = childPath(t.tablePath, kt.(string))
				t.peeked = d
				continue
			}
			t.pending = &member{kt.(string), vt}
			return nil
		default:
			return lossf("the top level is %s, but a table needs an array of objects", tokenKind(tok))
		}
	}
}

func tokenKind(tok json.Token) string {
	switch tok {
	case json.Delim('['):
		return "an array"
	case json.Delim('{'):
		return "an object"
	}
	return kindOf(tok)
}

// scanRow reads one row: in the first pass it gathers columns, in the second it fills t.row.
func (t *jsonTableReader) scanRow() error {
	if t.ndjson {
		return t.scanLine()
	}
	if t.done {
		return io.EOF
	}
	path := t.tablePath
	if !t.single {
		if !t.dec.More() {
			if _, err := t.token(); err != nil { // ']'
				return err
			}
			return t.finish()
		}
		if !t.first && t.peeked == nil && !t.nested {
			// The first pass checked every row: decoding one into a map is faster than tokens
			// (but would reorder the members of nested values, so not when cells may hold them).
			var m map[string]any
			if err := t.dec.Decode(&m); err != nil {
				return t.syntax(err)
			}
			for k, v := range m {
				i, ok := t.index[k]
				if !ok {
					return fmt.Errorf("input changed between passes")
				}
				t.row[i] = v
			}
			t.n++
			return nil
		}
		tok, err := t.token()
		if err != nil {
			return err
		}
		path = indexPath(t.tablePath, t.n)
		if tok != json.Delim('{') {
			return lossf("value at %s is %s, but a table needs an array of objects", path, tokenKind(tok))
		}
	}
	clear(t.seen)
	if t.pending != nil {
		if err := t.cell(path, t.pending.key, t.pending.val); err != nil {
			return err
		}
		t.pending = nil
	}
	for t.dec.More() {
		kt, err := t.token()
		if err != nil {
			return err
		}
		vt, err := t.token()
		if err != nil {
			return err
		}
		if err := t.cell(path, kt.(string), vt); err != nil {
			return err
		}
	}
	if _, err := t.token(); err != nil { // '}'
		return err
	}
	t.n++
	if t.single {
		if err := t.finish(); err != io.EOF {
			return err
		}
		t.done = true
	}
	return nil
}

// cell records one member of a row object.
func (t *jsonTableReader) cell(path, key string, v json.Token) error {
	if d, ok := v.(json.Delim); ok && t.nested {
		raw, err := t.nestedJSON(d)
		if err != nil {
			return err
		}
		v = nestedValue{raw}
	} else if ok {
		return lossf("value at %s is %s, but a table cell cannot hold one (only text, numbers, booleans and null)", childPath(path, key), tokenKind(d))
	}
	if t.seen[key] {
		return convert.Errorf(nil, "input is not a valid %s file (key %q appears twice in the object at %s)", t.name, key, path)
	}
	t.seen[key] = true
	i, ok := t.index[key]
	if !ok {
		if !t.first {
			return fmt.Errorf("input changed between passes")
		}
		if len(t.cols) >= DataMaxColumns {
			return convert.Errorf(nil, "input has more than %d distinct keys, over the column limit", DataMaxColumns)
		}
		i = len(t.cols)
		t.index[key] = i
		t.cols = append(t.cols, key)
	}
	if !t.first {
		t.row[i] = v
	}
	return nil
}

// nestedJSON reads the rest of the object or array that open began and returns it as compact
// JSON. Keys and strings are quoted as appendJSONString does; numbers are kept as written.
func (t *jsonTableReader) nestedJSON(open json.Delim) ([]byte, error) {
	buf := []byte{byte(open)}
	// For each open container: whether it is an object, and how many tokens it has had.
	type level struct {
		object bool
		n      int
	}
	stack := []level{{object: open == '{'}}
	for len(stack) > 0 {
		tok, err := t.token()
		if err != nil {
			return nil, err
		}
		top := &stack[len(stack)-1]
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			buf = append(buf, byte(d))
			stack = stack[:len(stack)-1]
			continue
		}
		switch {
		case top.object && top.n%2 == 1:
			buf = append(buf, ':')
		case top.n > 0:
			buf = append(buf, ',')
		}
		top.n++
		if len(buf) > DataMaxRecordBytes {
			return nil, convert.Errorf(nil, "input has a value longer than %s in a table cell", convert.ByteSize(DataMaxRecordBytes))
		}
		if d, ok := tok.(json.Delim); ok {
			buf = append(buf, byte(d))
			stack = append(stack, level{object: d == '{'})
			continue
		}
		if buf, err = appendJSONScalar(buf, tok, ""); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// finish checks the wrappers close without other members and nothing follows the table.
func (t *jsonTableReader) finish() error {
	path := t.tablePath
	for ; t.wrapped > 0; t.wrapped-- {
		path = path[:strings.LastIndexAny(path, ".[")]
		if !t.dec.More() {
			if _, err := t.token(); err != nil {
				return err
			}
			continue
		}
		kt, err := t.token()
		if err != nil {
			return err
		}
		return lossf("the object at %s has a member %q beside the table, but a table needs an array of objects", path, kt)
	}
	if _, err := t.dec.Token(); err != io.EOF {
		if err != nil {
			return t.syntax(err)
		}
		return convert.Errorf(nil, "input is not a valid %s file (more data after the first value; is it NDJSON?)", t.name)
	}
	t.done = true
	return io.EOF
}

// scanLine reads one NDJSON line holding a flat object.
func (t *jsonTableReader) scanLine() error {
	for t.sc.Scan() {
		t.lineNo++
		line := bytes.TrimSpace(t.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if t.lineNo == 1 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		t.dec = json.NewDecoder(bytes.NewReader(line))
		t.dec.UseNumber()
		path := "line " + strconv.Itoa(t.lineNo)
		tok, err := t.dec.Token()
		if err != nil {
			return convert.Errorf(err, "input is not a valid NDJSON file (line %d: %s)", t.lineNo, strings.TrimPrefix(err.Error(), "json: "))
		}
		if tok != json.Delim('{') {
			return lossf("line %d holds %s, but a table needs one object per line", t.lineNo, tokenKind(tok))
		}
		clear(t.seen)
		for t.dec.More() {
			kt, err := t.dec.Token()
			if err != nil {
				return convert.Errorf(err, "input is not a valid NDJSON file (line %d: %s)", t.lineNo, strings.TrimPrefix(err.Error(), "json: "))
			}
			vt, err := t.dec.Token()
			if err != nil {
				return convert.Errorf(err, "input is not a valid NDJSON file (line %d: %s)", t.lineNo, strings.TrimPrefix(err.Error(), "json: "))
			}
			key := kt.(string)
			if err := t.cell("$", key, vt); err != nil {
				var le *lossError
				if errors.As(err, &le) {
					return lossf("value of %q on %s is %s, but a table cell cannot hold one (only text, numbers, booleans and null)", key, path, tokenKind(vt))
				}
				return err
			}
		}
		if _, err := t.dec.Token(); err != nil {
			return convert.Errorf(err, "input is not a valid NDJSON file (line %d: %s)", t.lineNo, strings.TrimPrefix(err.Error(), "json: "))
		}
		if _, err := t.dec.Token(); err != io.EOF {
			return convert.Errorf(err, "input is not a valid NDJSON file (line %d holds more than one value)", t.lineNo)
		}
		return nil
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return convert.Errorf(err, "input has a line longer than %s (line %d)", convert.ByteSize(DataMaxRecordBytes), t.lineNo+1)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return convert.Errorf(err, "could not read the input")
	}
	return io.EOF
}

// ---- trees as tables, tables as trees ----

// treeTable reads a tree (from YAML, TOML or XML) as a table, unwrapping as jsonTableReader does.
type treeTable struct {
	cols []string
	rows []object
	row  []any
	i    int
	idx  map[string]int
}

func newTreeTable(v any, nested bool) (*treeTable, error) {
	path := "$"
	for {
		obj, ok := v.(object)
		if !ok {
			break
		}
		if len(obj) == 1 {
			switch obj[0].val.(type) {
			case object, []any:
				path = childPath(path, obj[0].key)
				v = obj[0].val
				continue
			}
		}
		v = []any{obj}
		break
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, lossf("value at %s is %s, but a table needs an array of objects", path, kindOf(v))
	}
	t := &treeTable{idx: map[string]int{}}
	for i, e := range arr {
		obj, ok := e.(object)
		if !ok {
			return nil, lossf("value at %s is %s, but a table needs an array of objects", indexPath(path, i), kindOf(e))
		}
		for j, m := range obj {
			switch m.val.(type) {
			case object, []any:
				if nested {
					raw, err := appendJSONCompact(nil, m.val, childPath(indexPath(path, i), m.key))
					if err != nil {
						return nil, err
					}
					obj[j].val = nestedValue{raw}
					break
				}
				return nil, lossf("value at %s is %s, but a table cell cannot hold one (only text, numbers, booleans and null)", childPath(indexPath(path, i), m.key), kindOf(m.val))
			case float64:
				return nil, lossf("value at %s is %s, which a table cannot hold", childPath(indexPath(path, i), m.key), kindOf(m.val))
			}
			if _, ok := t.idx[m.key]; !ok {
				if len(t.cols) >= DataMaxColumns {
					return nil, convert.Errorf(nil, "input has more than %d distinct keys, over the column limit", DataMaxColumns)
				}
				t.idx[m.key] = len(t.cols)
				t.cols = append(t.cols, m.key)
			}
		}
		t.rows = append(t.rows, obj)
	}
	t.row = make([]any, len(t.cols))
	return t, nil
}

func (t *treeTable) columns() []string { return t.cols }

func (t *treeTable) next() ([]any, error) {
	if t.i >= len(t.rows) {
		return nil, io.EOF
	}
	for i := range t.row {
		t.row[i] = absent
	}
	for _, m := range t.rows[t.i] {
		t.row[t.idx[m.key]] = m.val
	}
	t.rows[t.i] = nil
	t.i++
	return t.row, nil
}

// treeCollector gathers rows into a tree: an array of objects, absent cells left out.
type treeCollector struct {
	target string
	cols   []string
	rows   []any
	nodes  int
	done   func(tree any) error
}

func (c *treeCollector) begin(cols []string) error {
	if err := checkUniqueColumns(cols, c.target); err != nil {
		return err
	}
	c.cols = slicesClone(cols)
	c.rows = []any{}
	return nil
}

func (c *treeCollector) row(vals []any) error {
	obj := make(object, 0, len(vals))
	for i, v := range vals {
		if v != absent {
			obj = append(obj, member{c.cols[i], v})
		}
	}
	c.nodes += len(obj) + 1
	if c.nodes > DataMaxNodes {
		return convert.Errorf(nil, "input holds more than %d values, over the limit for %s output", DataMaxNodes, c.target)
	}
	c.rows = append(c.rows, obj)
	return nil
}

func (c *treeCollector) end() error { return c.done(c.rows) }

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// ---- Markdown and HTML tables ----

type markdownTableWriter struct {
	bw   *bufio.Writer
	cols int
	buf  []byte
}

// line writes one row, each cell escaped to read literally (markdownEscape).
func (m *markdownTableWriter) line(cells []string) error {
	b := append(m.buf[:0], '|')
	for _, c := range cells {
		b = append(b, ' ')
		b = appendMarkdownEscaped(b, c, false)
		b = append(b, " |"...)
	}
	b = append(b, '\n')
	m.buf = b
	_, err := m.bw.Write(b)
	return err
}

func (m *markdownTableWriter) begin(cols []string) error {
	m.cols = len(cols)
	if len(cols) == 0 {
		return nil
	}
	if err := m.line(cols); err != nil {
		return err
	}
	sep := strings.Repeat("| --- ", len(cols)) + "|\n"
	_, err := m.bw.WriteString(sep)
	return err
}

func (m *markdownTableWriter) row(vals []any) error {
	cells := make([]string, len(vals))
	for i, v := range vals {
		cells[i] = cellText(v)
	}
	return m.line(cells)
}

func (m *markdownTableWriter) end() error { return m.bw.Flush() }

type htmlTableWriter struct {
	bw *bufio.Writer
}

func (h *htmlTableWriter) begin(cols []string) error {
	h.bw.WriteString("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>Table</title>\n</head>\n<body>\n<table>\n<thead>\n<tr>")
	for _, c := range cols {
		h.bw.WriteString("<th>")
		h.bw.WriteString(html.EscapeString(c))
		h.bw.WriteString("</th>")
	}
	_, err := h.bw.WriteString("</tr>\n</thead>\n<tbody>\n")
	return err
}

func (h *htmlTableWriter) row(vals []any) error {
	h.bw.WriteString("<tr>")
	for _, v := range vals {
		h.bw.WriteString("<td>")
		h.bw.WriteString(html.EscapeString(cellText(v)))
		h.bw.WriteString("</td>")
	}
	_, err := h.bw.WriteString("</tr>\n")
	return err
}

func (h *htmlTableWriter) end() error {
	h.bw.WriteString("</tbody>\n</table>\n</body>\n</html>\n")
	return h.bw.Flush()
}
