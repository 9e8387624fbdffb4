package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/convsvc/convsvc/convert"
)

// Trees as documents. A tree that is a table (an array of objects, or wraps one in objects
// of a single member) becomes a Markdown or HTML table as before; any other tree (a
// configuration file of several tables, a list of values) is laid out as a tree, so that every
// key and value can be read and found:
//
//   - an object's scalar members, arrays of scalars (joined with ", ") and empty objects and
//     arrays are rows of a two-column key | value table;
//   - each member holding an object is a section: a heading naming its path (server.tls,
//     servers[0]; levels by depth, at most 6), then its own members the same way;
//   - an array of objects whose members are all scalars or arrays of scalars (TOML's arrays of
//     tables, records) is a table under its heading, one column per key;
//   - any other array: its scalars are key | value rows keyed [0], [1], ..., its objects and
//     arrays sections of their own (key[i]).
//
// An object's scalar rows come before its sections, as TOML writes them.

// treeDocMaxLevel is the deepest heading level.
const treeDocMaxLevel = 6

// docWriter writes the blocks of a tree document.
type docWriter interface {
	heading(level int, text string) error
	table(cols []string, rows [][]string) error
	end() error
}

// treeIsTable reports whether a tree is a table as newTreeTable reads one: an array whose
// first element is an object (or an empty array), or an object of one member wrapping such
// an array (or an empty object).
func treeIsTable(v any) bool {
	for {
		switch x := v.(type) {
		case []any:
			if len(x) == 0 {
				return true
			}
			_, ok := x[0].(object)
			return ok
		case object:
			if len(x) == 0 {
				return true
			}
			if len(x) > 1 {
				return false
			}
			switch x[0].val.(type) {
			case object, []any:
				v = x[0].val
				continue
			}
			return false
		default:
			return false
		}
	}
}

// jsonIsTable answers treeIsTable for a JSON input without building its tree: it reads its
// tokens (one pass, memory as deep as the input's nesting), so a large table still streams.
// A syntax error answers true: the table reader reports it with its position.
func jsonIsTable(ctx context.Context, in *io.SectionReader) bool {
	r := bufio.NewReaderSize(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())}, 64<<10)
	if b, err := r.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		r.Discard(3)
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return true
	}
	table, err := jsonValueIsTable(dec, tok, 0)
	return table || err != nil
}

// jsonValueIsTable reads the value that begins with tok and reports whether it is a table.
// It returns as soon as the answer is known; a wrapper's member is read to its end, to see
// whether another member follows it.
func jsonValueIsTable(dec *json.Decoder, tok json.Token, depth int) (bool, error) {
	if depth > DataMaxDepth {
		return false, errors.New("too deep")
	}
	switch tok {
	case json.Delim('['):
		if !dec.More() {
			return true, nil
		}
		first, err := dec.Token()
		if err != nil {
			return false, err
		}
		if first != json.Delim('{') {
			return false, nil
		}
		// Read the rest of the array, a wrapper's caller looks past it: the first element by
		// its tokens, the others whole (Decode scans a value several times faster than Token
		// reads it, and the RawMessage's buffer is reused).
		if err := skipJSON(dec, 1); err != nil {
			return false, err
		}
		var raw json.RawMessage
		for dec.More() {
			if err := dec.Decode(&raw); err != nil {
				return false, err
			}
		}
		_, err = dec.Token() // ']'
		return true, err
	case json.Delim('{'):
		if !dec.More() {
			_, err := dec.Token()
			return true, err
		}
		if _, err := dec.Token(); err != nil { // the key
			return false, err
		}
		val, err := dec.Token()
		if err != nil {
			return false, err
		}
		if val != json.Delim('{') && val != json.Delim('[') {
			return false, nil
		}
		table, err := jsonValueIsTable(dec, val, depth+1)
		if err != nil || !table {
			return false, err
		}
		if dec.More() {
			return false, nil // another member beside the wrapped table
		}
		_, err = dec.Token() // '}'
		return true, err
	}
	return false, nil
}

// skipJSON reads tokens until depth open arrays and objects have closed.
func skipJSON(dec *json.Decoder, depth int) error {
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return nil
}

// treeDocument converts a tree input to a Markdown or HTML target: laid out as a tree when
// it is not a table (handled false: the caller converts it as a table). A JSON input is
// checked without reading its tree, and one over DataMaxTreeBytes is always a table.
func treeDocument(ctx context.Context, from, to string, in *io.SectionReader, out io.Writer, p convert.Params) (handled bool, err error) {
	if from == "json" && (in.Size() > DataMaxTreeBytes || jsonIsTable(ctx, in)) {
		return false, nil
	}
	tree, err := readTree(ctx, from, in)
	if err != nil {
		return true, err
	}
	reportTreeLosses(ctx, from, in, p)
	if treeIsTable(tree) {
		r, err := newTreeTable(tree, true)
		if err != nil {
			return true, err
		}
		w, closeW, err := newTableWriter(ctx, to, out)
		if err != nil {
			return true, err
		}
		defer closeW()
		return true, copyTable(ctx, r, w)
	}
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)
	var w docWriter = &markdownDocWriter{bw: bw}
	if to == "html" {
		w = &htmlDocWriter{bw: bw}
	}
	return true, writeTreeDoc(ctx, w, tree)
}

// writeTreeDoc lays a tree out as a document (see above).
func writeTreeDoc(ctx context.Context, w docWriter, v any) error {
	t := &treeDoc{ctx: ctx, w: w}
	switch x := v.(type) {
	case object:
		t.object(x, "", 0)
	case []any:
		t.array(x, "", 0)
	default:
		t.err = w.table([]string{"value"}, [][]string{{scalarText(x)}})
	}
	if t.err != nil {
		return t.err
	}
	return w.end()
}

type treeDoc struct {
	ctx   context.Context
	w     docWriter
	err   error
	steps int
}

// check notes the context's end every so often.
func (t *treeDoc) check() bool {
	if t.err == nil {
		if t.steps++; t.steps&0x3ff == 0 {
			t.err = t.ctx.Err()
		}
	}
	return t.err == nil
}

func (t *treeDoc) heading(depth int, path string) {
	if t.err == nil {
		t.err = t.w.heading(min(max(depth, 1), treeDocMaxLevel), path)
	}
}

func (t *treeDoc) table(cols []string, rows [][]string) {
	if t.err == nil && len(rows) > 0 {
		t.err = t.w.table(cols, rows)
	}
}

// object writes an object's scalar members as key | value rows, then a section per nested one.
func (t *treeDoc) object(o object, path string, depth int) {
	var rows [][]string
	for _, m := range o {
		if s, ok := inlineText(m.val); ok {
			rows = append(rows, []string{m.key, s})
		}
	}
	t.table([]string{"key", "value"}, rows)
	for _, m := range o {
		if !t.check() {
			return
		}
		if _, ok := inlineText(m.val); ok {
			continue
		}
		p := keyPath(path, m.key)
		t.heading(depth+1, p)
		switch x := m.val.(type) {
		case object:
			t.object(x, p, depth+1)
		case []any:
			t.array(x, p, depth+1)
		}
	}
}

// array writes a uniform array of objects as a table, any other as rows of its scalars and
// sections of its other elements.
func (t *treeDoc) array(a []any, path string, depth int) {
	if cols, ok := recordColumns(a); ok {
		rows := make([][]string, len(a))
		for i, e := range a {
			row := make([]string, len(cols))
			for _, m := range e.(object) {
				s, _ := inlineText(m.val)
				row[cols[m.key]] = s
			}
			rows[i] = row
		}
		names := make([]string, len(cols))
		for k, i := range cols {
			names[i] = k
		}
		t.table(names, rows)
		return
	}
	var rows [][]string
	for i, e := range a {
		if s, ok := inlineText(e); ok {
			rows = append(rows, []string{"[" + strconv.Itoa(i) + "]", s})
		}
	}
	t.table([]string{"index", "value"}, rows)
	for i, e := range a {
		if !t.check() {
			return
		}
		if _, ok := inlineText(e); ok {
			continue
		}
		p := path + "[" + strconv.Itoa(i) + "]"
		t.heading(depth+1, p)
		switch x := e.(type) {
		case object:
			t.object(x, p, depth+1)
		case []any:
			t.array(x, p, depth+1)
		}
	}
}

// recordColumns returns the column of each key when every element of a is an object whose
// members are all inline (inlineText) and the keys are at most DataMaxColumns.
func recordColumns(a []any) (map[string]int, bool) {
	if len(a) == 0 {
		return nil, false
	}
	cols := map[string]int{}
	for _, e := range a {
		o, ok := e.(object)
		if !ok {
			return nil, false
		}
		for _, m := range o {
			if _, ok := inlineText(m.val); !ok {
				return nil, false
			}
			if _, ok := cols[m.key]; !ok {
				if len(cols) >= DataMaxColumns {
					return nil, false
				}
				cols[m.key] = len(cols)
			}
		}
	}
	return cols, true
}

// inlineText is a value's text when it fits a table cell: a scalar, an array of scalars
// (joined with ", "), an empty object or array.
func inlineText(v any) (string, bool) {
	switch x := v.(type) {
	case object:
		if len(x) == 0 {
			return "{}", true
		}
		return "", false
	case []any:
		if len(x) == 0 {
			return "[]", true
		}
		parts := make([]string, len(x))
		for i, e := range x {
			switch e.(type) {
			case object, []any:
				return "", false
			}
			parts[i] = scalarText(e)
		}
		return strings.Join(parts, ", "), true
	}
	return scalarText(v), true
}

// scalarText writes a scalar as it reads in the source: null as null, ±Inf and NaN as TOML does.
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		switch {
		case math.IsNaN(x):
			return "nan"
		case x > 0:
			return "inf"
		default:
			return "-inf"
		}
	}
	return cellText(v)
}

// keyPath appends a key to a dotted path, quoting it as TOML does when it is not a bare key.
func keyPath(path, key string) string {
	bare := key != ""
	for _, r := range key {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			bare = false
			break
		}
	}
	if !bare {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// markdownDocWriter writes a tree document as Markdown.
type markdownDocWriter struct {
	bw    *bufio.Writer
	wrote bool // a block was written: the next is set apart by a blank line
}

func (m *markdownDocWriter) sep() {
	if m.wrote {
		m.bw.WriteByte('\n')
	}
	m.wrote = true
}

func (m *markdownDocWriter) heading(level int, text string) error {
	m.sep()
	m.bw.WriteString(strings.Repeat("#", level) + " " + markdownEscape(text, true) + "\n")
	return nil
}

func (m *markdownDocWriter) table(cols []string, rows [][]string) error {
	m.sep()
	t := &markdownTableWriter{bw: m.bw}
	if err := t.begin(cols); err != nil {
		return err
	}
	for _, r := range rows {
		if err := t.line(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *markdownDocWriter) end() error { return m.bw.Flush() }

// markdownEscape makes text read literally in a Markdown heading or table cell (see
// appendMarkdownEscaped).
func markdownEscape(s string, heading bool) string {
	return string(appendMarkdownEscaped(nil, s, heading))
}

// appendMarkdownEscaped appends s escaped to read literally in a Markdown heading or table
// cell: the punctuation that could start emphasis, code, HTML, entities or cells is escaped
// with a backslash, brackets too when they could make an inline link ("](" ; with no link
// definitions in the document, no other bracket is a link), # in a heading, and line breaks
// become <br>.
func appendMarkdownEscaped(b []byte, s string, heading bool) []byte {
	link := strings.Contains(s, "](")
	prev := ' '
	for i, r := range s {
		switch r {
		case '\\', '`', '*', '<', '>', '|', '~', '&':
			b = append(b, '\\')
		case '_':
			// Between letters or digits (snake_case) an underscore never makes emphasis.
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			if !alnum(prev) || !alnum(next) {
				b = append(b, '\\')
			}
		case '[', ']':
			if link {
				b = append(b, '\\')
			}
		case '#':
			if heading {
				b = append(b, '\\')
			}
		case '\n':
			b = append(b, "<br>"...)
			continue
		case '\r':
			continue
		}
		b = utf8.AppendRune(b, r)
		prev = r
	}
	return b
}

// alnum reports whether r is a letter or digit, as CommonMark's flanking rules see them.
func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// htmlDocWriter writes a tree document as an HTML page.
type htmlDocWriter struct {
	bw      *bufio.Writer
	started bool
}

func (h *htmlDocWriter) start() {
	if !h.started {
		h.bw.WriteString("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>Data</title>\n</head>\n<body>\n")
		h.started = true
	}
}

func (h *htmlDocWriter) heading(level int, text string) error {
	h.start()
	tag := "h" + strconv.Itoa(level)
	h.bw.WriteString("<" + tag + ">" + html.EscapeString(text) + "</" + tag + ">\n")
	return nil
}

func (h *htmlDocWriter) table(cols []string, rows [][]string) error {
	h.start()
	h.bw.WriteString("<table>\n<thead>\n<tr>")
	for _, c := range cols {
		h.bw.WriteString("<th>" + html.EscapeString(c) + "</th>")
	}
	h.bw.WriteString("</tr>\n</thead>\n<tbody>\n")
	for _, r := range rows {
		h.bw.WriteString("<tr>")
		for _, c := range r {
			h.bw.WriteString("<td>" + strings.ReplaceAll(html.EscapeString(c), "\n", "<br>") + "</td>")
		}
		h.bw.WriteString("</tr>\n")
	}
	_, err := h.bw.WriteString("</tbody>\n</table>\n")
	return err
}

func (h *htmlDocWriter) end() error {
	h.start()
	h.bw.WriteString("</body>\n</html>\n")
	return h.bw.Flush()
}
