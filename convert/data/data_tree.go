package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	yaml "go.yaml.in/yaml/v3"

	"github.com/convsvc/convsvc/convert"
)

// The tree model shared by json, yaml, toml and xml. A value is one of:
//
//	object       a JSON-like object that keeps its keys in document order
//	[]any        an array
//	string
//	json.Number  a finite number, kept as its literal text so that nothing is rounded
//	float64      only ±Inf and NaN, which YAML and TOML hold and JSON does not
//	bool
//	nil          null
type (
	member struct {
		key string
		val any
	}
	object []member
)

// get returns the value of key and whether it is present.
func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// Limits of tree-shaped data, which is held in memory whole.
const (
	// DataMaxTreeBytes is the largest json, yaml, toml or xml input read as a tree (every tree
	// conversion, and yaml, toml and xml to tables); JSON to tables streams and has no such limit.
	DataMaxTreeBytes = 32 << 20
	// DataMaxYAMLBytes is the lower limit for YAML input: go.yaml.in/yaml/v3 builds a node of
	// about 30 times the text's size (24 MB of YAML peaked at 706 MB).
	DataMaxYAMLBytes = 16 << 20
	// DataMaxDepth bounds nesting; deeper input fails instead of exhausting the stack.
	DataMaxDepth = 1000
	// DataMaxNodes bounds the values of one tree, aliases expanded. A tree takes about 12
	// times its JSON text in memory (a 27 MB file peaked at 320-370 MB converting to TOML or XML).
	DataMaxNodes = 10_000_000
	// DataMaxTOMLKeyChecks bounds the work go-toml does to check a TOML file's keys: it looks
	// each key and table header up among every entry made after its parent, so one wide table
	// or many table headers take quadratic time (8,000 keys in one table: 73 ms; 4x that, 14x
	// the time). tomlKeyOrder counts those steps the same way and refuses a file past this
	// (about 75 ms of checking): a table of 8,000 keys passes, one of 9,000 does not.
	DataMaxTOMLKeyChecks = 32_000_000
)

// lossError is a value the target format cannot hold; the converter prefixes "from -> to: ".
type lossError struct{ msg string }

func (e *lossError) Error() string { return e.msg }

func lossf(format string, args ...any) error { return &lossError{fmt.Sprintf(format, args...)} }

// childPath appends an object key to a path like $.a.b.
func childPath(path, key string) string {
	ident := key != ""
	for i, r := range key {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ident = false
			break
		}
	}
	if ident {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// kindOf names a value's kind for messages.
func kindOf(v any) string {
	switch v := v.(type) {
	case object:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case float64:
		switch {
		case math.IsNaN(v):
			return "NaN"
		case v > 0:
			return "infinity"
		default:
			return "-infinity"
		}
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// isFloatLiteral reports whether a number literal has a fraction or an exponent.
func isFloatLiteral(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// floatNumber turns a finite float into a literal that still reads as a float ("1.0", not "1").
func floatNumber(f float64) json.Number {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return json.Number(s)
}

// validJSONNumber reports whether s is a number in JSON's grammar.
func validJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// readTreeInput reads a whole tree-shaped input after checking its size.
func readTreeInput(ctx context.Context, in *io.SectionReader, name string) ([]byte, error) {
	limit := int64(DataMaxTreeBytes)
	if name == "YAML" {
		limit = DataMaxYAMLBytes
	}
	if in.Size() > limit {
		return nil, convert.Errorf(nil, "input is %s, over the %s limit for %s", convert.ByteSize(in.Size()), convert.ByteSize(limit), name)
	}
	data := make([]byte, in.Size())
	if _, err := in.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, convert.Errorf(err, "could not read the input")
	}
	return data, ctx.Err()
}

// nodeCounter enforces DataMaxNodes and DataMaxDepth while a tree is built, and counts its
// values into the job's progress (treeProgress): pos, when set, is how far the reader is.
type nodeCounter struct {
	ctx   context.Context
	nodes int
	prog  *treeProgress
	pos   func() (done, total int64)
}

// newNodeCounter counts the values of a tree read under ctx; pos may be nil.
func newNodeCounter(ctx context.Context, pos func() (done, total int64)) nodeCounter {
	return nodeCounter{ctx: ctx, prog: treeProgressFrom(ctx), pos: pos}
}

func (c *nodeCounter) add(depth int) error {
	c.nodes++
	if c.prog != nil {
		c.prog.read = int64(c.nodes)
		if c.pos != nil && c.nodes%treeProgressEvery == 0 {
			c.prog.readAt(c.pos())
		}
	}
	if depth > DataMaxDepth {
		return convert.Errorf(nil, "input is nested more than %d levels deep", DataMaxDepth)
	}
	if c.nodes > DataMaxNodes {
		return convert.Errorf(nil, "input holds more than %d values", DataMaxNodes)
	}
	if c.nodes&0xffff == 0 {
		return c.ctx.Err()
	}
	return nil
}

// ---- JSON ----

// decodeJSONTree reads one JSON value, keeping key order and number literals.
func decodeJSONTree(ctx context.Context, data []byte) (any, error) {
	if err := checkTextHead(data, "JSON"); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := new(newNodeCounter(ctx, func() (int64, int64) { return dec.InputOffset(), int64(len(data)) }))
	v, err := jsonValue(dec, c, 0)
	if err != nil {
		return nil, jsonError(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line, col := lineCol(data, off)
		return nil, convert.Errorf(err, "input is not a valid JSON file (more data after the first value, at line %d, column %d; is it NDJSON?)", line, col)
	}
	return v, nil
}

func jsonValue(dec *json.Decoder, c *nodeCounter, depth int) (any, error) {
	if err := c.add(depth); err != nil {
		return nil, err
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := object{}
			var seen map[string]bool
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				if len(obj) >= 8 {
					if seen == nil {
						seen = make(map[string]bool, 16)
						for _, m := range obj {
							seen[m.key] = true
						}
					}
					if seen[key] {
						return nil, convert.Errorf(nil, "input is not a valid JSON file (key %q appears twice in one object)", key)
					}
					seen[key] = true
				} else if _, dup := obj.get(key); dup {
					return nil, convert.Errorf(nil, "input is not a valid JSON file (key %q appears twice in one object)", key)
				}
				v, err := jsonValue(dec, c, depth+1)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{key, v})
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := jsonValue(dec, c, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

// jsonError turns a decoding error into an *Error with a line and column.
func jsonError(data []byte, dec *json.Decoder, err error) error {
	var ce *convert.Error
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(data)) == 0 {
			return convert.Errorf(err, "input is not a valid JSON file (it is empty)")
		}
		return convert.Errorf(err, "input is not a valid JSON file (it ends in the middle of a value)")
	}
	line, col := lineCol(data, off)
	return convert.Errorf(err, "input is not a valid JSON file (line %d, column %d: %s)", line, col, strings.TrimPrefix(err.Error(), "json: "))
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// writeJSONTree writes v as indented JSON.
func writeJSONTree(ctx context.Context, w io.Writer, v any) error {
	bw := bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 32<<10)
	buf := make([]byte, 0, 256)
	var err error
	buf, err = appendJSONValue(buf, v, "$", 0, bw, treeProgressFrom(ctx))
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

// appendJSONValue appends v, indented; it flushes buf to w when it grows past 16 KB.
// Each value counts as written into prog (nil: none).
func appendJSONValue(buf []byte, v any, path string, indent int, w io.Writer, prog *treeProgress) ([]byte, error) {
	prog.wrote()
	if len(buf) > 16<<10 {
		if _, err := w.Write(buf); err != nil {
			return buf, err
		}
		buf = buf[:0]
	}
	var err error
	switch v := v.(type) {
	case object:
		if len(v) == 0 {
			return append(buf, "{}"...), nil
		}
		buf = append(buf, '{')
		for i, m := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendNewline(buf, indent+1)
			buf = appendJSONString(buf, m.key)
			buf = append(buf, ": "...)
			if buf, err = appendJSONValue(buf, m.val, childPath(path, m.key), indent+1, w, prog); err != nil {
				return buf, err
			}
		}
		buf = appendNewline(buf, indent)
		return append(buf, '}'), nil
	case []any:
		if len(v) == 0 {
			return append(buf, "[]"...), nil
		}
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendNewline(buf, indent+1)
			if buf, err = appendJSONValue(buf, e, indexPath(path, i), indent+1, w, prog); err != nil {
				return buf, err
			}
		}
		buf = appendNewline(buf, indent)
		return append(buf, ']'), nil
	default:
		return appendJSONScalar(buf, v, path)
	}
}

func appendNewline(buf []byte, indent int) []byte {
	buf = append(buf, '\n')
	for range indent {
		buf = append(buf, "  "...)
	}
	return buf
}

// appendJSONCompact appends v as JSON without spaces or newlines.
func appendJSONCompact(buf []byte, v any, path string) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case object:
		buf = append(buf, '{')
		for i, m := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, m.key)
			buf = append(buf, ':')
			if buf, err = appendJSONCompact(buf, m.val, childPath(path, m.key)); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendJSONCompact(buf, e, indexPath(path, i)); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	}
	return appendJSONScalar(buf, v, path)
}

// appendJSONScalar appends a scalar; ±Inf and NaN fail, since JSON has no way to write them.
func appendJSONScalar(buf []byte, v any, path string) ([]byte, error) {
	switch v := v.(type) {
	case nestedValue:
		return append(buf, v.json...), nil
	case string:
		return appendJSONString(buf, v), nil
	case json.Number:
		return append(buf, v...), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case nil:
		return append(buf, "null"...), nil
	case float64:
		return buf, lossf("value at %s is %s, which JSON cannot hold", path, kindOf(v))
	}
	return buf, lossf("value at %s is %s, which JSON cannot hold", path, kindOf(v))
}

// appendJSONString quotes s as encoding/json does, without escaping <, > and &.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// ---- YAML ----

// decodeYAMLTree reads a single-document YAML file. Aliases are expanded under the same
// budget go.yaml.in/yaml/v3 applies when decoding into Go values, which it does not apply to
// yaml.Node; dates and other timestamps stay strings.
func decodeYAMLTree(ctx context.Context, data []byte) (any, error) {
	if err := checkTextHead(data, "YAML"); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty document is null
		}
		return nil, convert.Errorf(err, "input is not a valid YAML file (%s)", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, convert.Errorf(nil, "input holds more than one YAML document (line %d starts another); convert one document at a time", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, convert.Errorf(err, "input is not a valid YAML file (%s)", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	y := &yamlConv{lines: int64(bytes.Count(data, []byte{'\n'})) + 1}
	y.c = newNodeCounter(ctx, func() (int64, int64) { return int64(y.line), y.lines })
	return y.value(&doc, 0)
}

type yamlConv struct {
	c          nodeCounter
	line       int   // the line of the value being converted
	lines      int64 // the input's
	aliasDepth int
	aliased    int
}

// allowedAliasRatio mirrors go.yaml.in/yaml/v3: small documents may come 99% from aliases,
// documents of 4M values and more only 10%.
func allowedAliasRatio(n int) float64 {
	const low, high = 400_000, 4_000_000
	switch {
	case n <= low:
		return 0.99
	case n >= high:
		return 0.10
	}
	return 0.99 - 0.89*float64(n-low)/float64(high-low)
}

func (y *yamlConv) value(n *yaml.Node, depth int) (any, error) {
	y.line = max(y.line, n.Line)
	if err := y.c.add(depth); err != nil {
		return nil, err
	}
	if y.aliasDepth > 0 {
		y.aliased++
	}
	if y.aliased > 100 && y.c.nodes > 1000 && float64(y.aliased)/float64(y.c.nodes) > allowedAliasRatio(y.c.nodes) {
		return nil, convert.Errorf(nil, "input is not a valid YAML file (its aliases expand to too many values, as in a \"billion laughs\" attack)")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return y.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, convert.Errorf(nil, "input is not a valid YAML file (unknown alias at line %d)", n.Line)
		}
		y.aliasDepth++
		v, err := y.value(n.Alias, depth+1)
		y.aliasDepth--
		return v, err
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := y.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case yaml.MappingNode:
		return y.mapping(n, depth)
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, convert.Errorf(nil, "input is not a valid YAML file (unexpected node at line %d)", n.Line)
}

func (y *yamlConv) mapping(n *yaml.Node, depth int) (any, error) {
	obj := make(object, 0, len(n.Content)/2)
	index := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := yamlKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := index[key]; dup {
			return nil, convert.Errorf(nil, "input is not a valid YAML file (key %q appears twice in the mapping at line %d)", key, n.Line)
		}
		val, err := y.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		index[key] = len(obj)
		obj = append(obj, member{key, val})
	}
	// Merge keys (<<: *base) add the members the mapping does not set itself.
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, s := range srcs {
			v, err := y.value(s, depth+1)
			if err != nil {
				return nil, err
			}
			mo, ok := v.(object)
			if !ok {
				return nil, convert.Errorf(nil, "input is not a valid YAML file (a merge key at line %d does not refer to a mapping)", s.Line)
			}
			for _, mm := range mo {
				if _, set := index[mm.key]; !set {
					index[mm.key] = len(obj)
					obj = append(obj, mm)
				}
			}
		}
	}
	return obj, nil
}

// yamlKey turns a scalar key into a string; mapping and sequence keys have no JSON form.
func yamlKey(k *yaml.Node) (string, error) {
	for k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", lossf("the mapping key at line %d is not a scalar, which only YAML can hold", k.Line)
	}
	if k.Tag == "!!null" {
		return "", nil
	}
	return k.Value, nil
}

// yamlScalar resolves a scalar by its tag; timestamps, binary and custom tags stay strings.
func yamlScalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, convert.Errorf(err, "input is not a valid YAML file (line %d: %q is not a boolean)", n.Line, n.Value)
		}
		return b, nil
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, convert.Errorf(err, "input is not a valid YAML file (line %d: %q is not an integer)", n.Line, n.Value)
		}
		switch v := v.(type) {
		case int:
			return json.Number(strconv.Itoa(v)), nil
		case int64:
			return json.Number(strconv.FormatInt(v, 10)), nil
		case uint64:
			return json.Number(strconv.FormatUint(v, 10)), nil
		case float64: // too big for 64 bits: keep the digits
			if s := strings.ReplaceAll(strings.TrimPrefix(n.Value, "+"), "_", ""); validJSONNumber(s) {
				return json.Number(s), nil
			}
			return floatNumber(v), nil
		}
		return n.Value, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, convert.Errorf(err, "input is not a valid YAML file (line %d: %q is not a number)", n.Line, n.Value)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return f, nil
		}
		if validJSONNumber(n.Value) {
			return json.Number(n.Value), nil
		}
		return floatNumber(f), nil
	}
	return n.Value, nil
}

// writeYAMLTree writes v as a YAML document in block style with two-space indentation. It is
// written here rather than with yaml.v3's encoder, which needs a yaml.Node per value and held
// about a hundred times the input's size in memory (2.6 GB for 27 MB of JSON). Strings are
// plain where that cannot be read as anything else, double-quoted with JSON escapes otherwise.
func writeYAMLTree(ctx context.Context, w io.Writer, v any) error {
	yw := &yamlWriter{w: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 32<<10), prog: treeProgressFrom(ctx)}
	if err := yw.item(v, 0, true); err != nil {
		return err
	}
	if _, err := yw.w.Write(yw.buf); err != nil {
		return err
	}
	return yw.w.Flush()
}

type yamlWriter struct {
	w    *bufio.Writer
	buf  []byte
	prog *treeProgress // counts each value written
}

func (yw *yamlWriter) indent(n int) {
	for range n {
		yw.buf = append(yw.buf, ' ')
	}
}

// item writes a value whose line is already started (after "- " or at the document's start)
// when inline, else at the given indentation on lines of its own.
func (yw *yamlWriter) item(v any, indent int, inline bool) error {
	yw.prog.wrote()
	if len(yw.buf) > 16<<10 {
		if _, err := yw.w.Write(yw.buf); err != nil {
			return err
		}
		yw.buf = yw.buf[:0]
	}
	switch v := v.(type) {
	case object:
		if len(v) == 0 {
			yw.buf = append(yw.buf, "{}\n"...)
			return nil
		}
		for i, m := range v {
			if i > 0 || !inline {
				yw.indent(indent)
			}
			yw.buf = appendYAMLString(yw.buf, m.key)
			yw.buf = append(yw.buf, ':')
			if err := yw.member(m.val, indent); err != nil {
				return err
			}
		}
	case []any:
		if len(v) == 0 {
			yw.buf = append(yw.buf, "[]\n"...)
			return nil
		}
		for i, e := range v {
			if i > 0 || !inline {
				yw.indent(indent)
			}
			yw.buf = append(yw.buf, "- "...)
			if err := yw.item(e, indent+2, true); err != nil {
				return err
			}
		}
	default:
		yw.buf = appendYAMLScalar(yw.buf, v)
		yw.buf = append(yw.buf, '\n')
	}
	return nil
}

// member writes a mapping value after its "key:".
func (yw *yamlWriter) member(v any, indent int) error {
	switch c := v.(type) {
	case object:
		if len(c) > 0 {
			yw.buf = append(yw.buf, '\n')
			return yw.item(v, indent+2, false)
		}
	case []any:
		if len(c) > 0 {
			yw.buf = append(yw.buf, '\n')
			return yw.item(v, indent+2, false)
		}
	}
	yw.buf = append(yw.buf, ' ')
	return yw.item(v, indent, true)
}

func appendYAMLScalar(buf []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendYAMLString(buf, v)
	case json.Number:
		return append(buf, v...)
	case float64:
		switch {
		case math.IsNaN(v):
			return append(buf, ".nan"...)
		case v > 0:
			return append(buf, ".inf"...)
		}
		return append(buf, "-.inf"...)
	case bool:
		return strconv.AppendBool(buf, v)
	}
	return append(buf, "null"...)
}

// appendYAMLString writes s plain when no YAML reader could take it for anything but that
// string, and double-quoted otherwise.
func appendYAMLString(buf []byte, s string) []byte {
	if yamlPlainOK(s) {
		return append(buf, s...)
	}
	return appendJSONString(buf, s)
}

// yamlPlainOK is deliberately conservative: a string that starts like a number, an
// indicator or a YAML 1.1 boolean or null is quoted.
func yamlPlainOK(s string) bool {
	if s == "" || strings.TrimSpace(s) != s || len(s) > 1024 {
		return false
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9', strings.IndexByte("-?:,[]{}#&*!|>'\"%@`.+~=<", c) >= 0:
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == utf8.RuneError {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// ---- TOML ----

// decodeTOMLTree reads a TOML document. go-toml checks it and gives the values; its
// unstable parser gives the order keys appear in, which a Go map loses. Dates and times stay
// strings (RFC 3339).
func decodeTOMLTree(ctx context.Context, data []byte) (any, error) {
	if err := checkTextHead(data, "TOML"); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	order, err := tomlKeyOrder(data)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, convert.Errorf(err, "input is not a valid TOML file (line %d, column %d: %s)", line, col, de.Error())
		}
		return nil, convert.Errorf(err, "input is not a valid TOML file (%v)", err)
	}
	c := new(newNodeCounter(ctx, nil))
	return tomlValue(m, "", order, c, 0)
}

// tomlKeyOrder maps "parent\x00key" paths to the rank of their first appearance. It
// refuses a file whose keys go-toml would take more than DataMaxTOMLKeyChecks steps to
// check, before go-toml sees it.
func tomlKeyOrder(data []byte) (map[string]int, error) {
	order := map[string]int{}
	checks := 0
	// record notes path; go-toml looks up its parts from the from'th on (a key under the
	// current table, a table header from the root).
	record := func(path []string, from int) {
		p, parent := "", -1
		for i, k := range path {
			if i > 0 {
				p += "\x00"
			}
			p += k
			if i >= from {
				checks += len(order) - parent - 1 // go-toml scans the entries after the parent's
			}
			r, ok := order[p]
			if !ok {
				r = len(order)
				order[p] = r
			}
			parent = r
		}
	}
	keyOf := func(it unstable.Iterator) []string {
		var parts []string
		for it.Next() {
			parts = append(parts, string(it.Node().Data))
		}
		return parts
	}
	var walkValue func(path []string, v *unstable.Node)
	walkValue = func(path []string, v *unstable.Node) {
		switch v.Kind {
		case unstable.InlineTable:
			for it := v.Children(); it.Next(); {
				kv := it.Node()
				p := append(slices.Clone(path), keyOf(kv.Key())...)
				record(p, len(path))
				walkValue(p, kv.Value())
			}
		case unstable.Array:
			for it := v.Children(); it.Next(); {
				walkValue(path, it.Node())
			}
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(e.Key())
			record(table, 0)
		case unstable.KeyValue:
			path := append(slices.Clone(table), keyOf(e.Key())...)
			record(path, len(table))
			walkValue(path, e.Value())
		}
		if checks > DataMaxTOMLKeyChecks {
			return nil, convert.Errorf(nil, "input's keys are too many for their tables (at line %d): checking them for duplicates would take over %d steps (one table with more than about 8,000 keys, or thousands of [table] headers); split wide tables into sub-tables or use JSON", tomlLine(data, e), DataMaxTOMLKeyChecks)
		}
	}
	return order, nil
}

// tomlLine returns the line of an expression's key in data, or 0.
func tomlLine(data []byte, e *unstable.Node) int {
	it := e.Key()
	if !it.Next() {
		return 0
	}
	r := it.Node().Raw
	if r.Length == 0 || int(r.Offset) > len(data) {
		return 0
	}
	return bytes.Count(data[:r.Offset], []byte("\n")) + 1
}

func tomlValue(v any, path string, order map[string]int, c *nodeCounter, depth int) (any, error) {
	if err := c.add(depth); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		rank := func(k string) int {
			p := k
			if path != "" {
				p = path + "\x00" + k
			}
			if r, ok := order[p]; ok {
				return r
			}
			return math.MaxInt
		}
		slices.SortFunc(keys, func(a, b string) int {
			if ra, rb := rank(a), rank(b); ra != rb {
				return ra - rb
			}
			return strings.Compare(a, b)
		})
		obj := make(object, 0, len(keys))
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "\x00" + k
			}
			cv, err := tomlValue(v[k], p, order, c, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{k, cv})
		}
		return obj, nil
	case []any:
		arr := make([]any, len(v))
		for i, e := range v {
			cv, err := tomlValue(e, path, order, c, depth+1)
			if err != nil {
				return nil, err
			}
			arr[i] = cv
		}
		return arr, nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return v, nil
		}
		return floatNumber(v), nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case fmt.Stringer: // toml.LocalDate, LocalTime, LocalDateTime
		return v.String(), nil
	case string, bool:
		return v, nil
	}
	return nil, fmt.Errorf("unexpected TOML value %T", v)
}

// wrapTopArray gives a top-level array the one root TOML and XML need: {"rows": {"row": [...]}},
// which reads back as <rows><row>...</row></rows> and [[rows.row]], and which the table
// readers unwrap again.
func wrapTopArray(v any) any {
	if arr, ok := v.([]any); ok {
		return object{{"rows", object{{"row", arr}}}}
	}
	return v
}

// writeTOMLTree writes v as TOML; null, integers beyond 64 bits and non-table roots fail.
func writeTOMLTree(ctx context.Context, w io.Writer, v any) error {
	root, ok := wrapTopArray(v).(object)
	if !ok {
		return lossf("the top level is %s, but TOML needs a table", kindOf(v))
	}
	tw := &tomlWriter{w: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 32<<10), prog: treeProgressFrom(ctx)}
	if err := tw.table(root, nil, "$", false); err != nil {
		return err
	}
	return tw.w.Flush()
}

type tomlWriter struct {
	w     *bufio.Writer
	buf   []byte
	first bool          // nothing written yet
	prog  *treeProgress // counts each member written (a table's values, inline ones with it)
}

// isTOMLTable reports whether a value is written as a [table] rather than inline.
func isTOMLTable(v any) bool { _, ok := v.(object); return ok }

// isTOMLArrayOfTables reports whether a value is written as [[array]] sections.
func isTOMLArrayOfTables(v any) bool {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	for _, e := range arr {
		if _, ok := e.(object); !ok {
			return false
		}
	}
	return true
}

func (tw *tomlWriter) table(obj object, keys []string, path string, arrayElem bool) error {
	simple, hasSub := 0, false
	for _, m := range obj {
		tw.prog.wrote()
		if isTOMLTable(m.val) || isTOMLArrayOfTables(m.val) {
			hasSub = true
		} else {
			simple++
		}
	}
	if len(keys) > 0 && (arrayElem || simple > 0 || !hasSub) {
		tw.buf = tw.buf[:0]
		if tw.first {
			tw.buf = append(tw.buf, '\n')
		}
		if arrayElem {
			tw.buf = append(tw.buf, "[["...)
		} else {
			tw.buf = append(tw.buf, '[')
		}
		tw.buf = appendTOMLKeyPath(tw.buf, keys)
		if arrayElem {
			tw.buf = append(tw.buf, "]]"...)
		} else {
			tw.buf = append(tw.buf, ']')
		}
		tw.buf = append(tw.buf, '\n')
		if _, err := tw.w.Write(tw.buf); err != nil {
			return err
		}
		tw.first = true
	}
	for _, m := range obj {
		if isTOMLTable(m.val) || isTOMLArrayOfTables(m.val) {
			continue
		}
		tw.buf = appendTOMLKey(tw.buf[:0], m.key)
		tw.buf = append(tw.buf, " = "...)
		var err error
		if tw.buf, err = appendTOMLInline(tw.buf, m.val, childPath(path, m.key), 0); err != nil {
			return err
		}
		tw.buf = append(tw.buf, '\n')
		if _, err := tw.w.Write(tw.buf); err != nil {
			return err
		}
		tw.first = true
	}
	for _, m := range obj {
		sub := append(slices.Clone(keys), m.key)
		switch {
		case isTOMLTable(m.val):
			if err := tw.table(m.val.(object), sub, childPath(path, m.key), false); err != nil {
				return err
			}
		case isTOMLArrayOfTables(m.val):
			for i, e := range m.val.([]any) {
				if err := tw.table(e.(object), sub, indexPath(childPath(path, m.key), i), true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func appendTOMLKeyPath(buf []byte, keys []string) []byte {
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, '.')
		}
		buf = appendTOMLKey(buf, k)
	}
	return buf
}

func appendTOMLKey(buf []byte, k string) []byte {
	bare := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			bare = false
			break
		}
	}
	if bare {
		return append(buf, k...)
	}
	return appendTOMLString(buf, k)
}

func appendTOMLString(buf []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	buf = append(buf, '"')
	for _, r := range s {
		switch r {
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		case '\b':
			buf = append(buf, `\b`...)
		case '\t':
			buf = append(buf, `\t`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\r':
			buf = append(buf, `\r`...)
		default:
			if r < 0x20 || r == 0x7f {
				buf = append(buf, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
			} else {
				buf = utf8.AppendRune(buf, r)
			}
		}
	}
	return append(buf, '"')
}

func appendTOMLInline(buf []byte, v any, path string, depth int) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case object:
		buf = append(buf, '{')
		for i, m := range v {
			if i > 0 {
				buf = append(buf, ", "...)
			} else {
				buf = append(buf, ' ')
			}
			buf = appendTOMLKey(buf, m.key)
			buf = append(buf, " = "...)
			if buf, err = appendTOMLInline(buf, m.val, childPath(path, m.key), depth+1); err != nil {
				return buf, err
			}
		}
		if len(v) > 0 {
			buf = append(buf, ' ')
		}
		return append(buf, '}'), nil
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			if buf, err = appendTOMLInline(buf, e, indexPath(path, i), depth+1); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	case string:
		return appendTOMLString(buf, v), nil
	case json.Number:
		if isFloatLiteral(v) {
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil || math.IsInf(f, 0) {
				return buf, lossf("value at %s is %s, beyond the range of TOML's 64-bit floats", path, v)
			}
			return append(buf, v...), nil
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return buf, lossf("value at %s is %s, beyond the range of TOML's 64-bit integers", path, v)
		}
		return append(buf, v...), nil
	case float64:
		switch {
		case math.IsNaN(v):
			return append(buf, "nan"...), nil
		case v > 0:
			return append(buf, "inf"...), nil
		default:
			return append(buf, "-inf"...), nil
		}
	case bool:
		return strconv.AppendBool(buf, v), nil
	case nil:
		return buf, lossf("value at %s is null, which TOML cannot hold", path)
	}
	return buf, fmt.Errorf("unexpected %T in tree", v)
}
