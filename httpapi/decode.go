package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// readJSONBody reads a bounded JSON body and checks its Content-Type.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readJSONBodyMax(w, r, maxBodyBytes)
}

// readJSONBodyMax is readJSONBody with another size limit (a batch's).
func readJSONBodyMax(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, errorf(CodeUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errorf(CodeInvalidRequest, "a JSON request body is required")
	}
	return body, nil
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown fields and trailing data.
// Names must match exactly and appear once (checkExactKeys), and the body must be UTF-8, so
// a proxy or another parser in front of the server can never read different values from it.
func decodeStrict(body []byte, v any) error {
	if !utf8.Valid(body) {
		return errorf(CodeInvalidRequest, "the body is not valid UTF-8")
	}
	if err := checkExactKeys(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Code: CodeInvalidRequest, Message: describeJSONError(err), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(CodeInvalidRequest, "the body must hold one JSON object and nothing after it")
	}
	return nil
}

// describeJSONError turns a decoder error into a message that names the problem and the field.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "the body must be a JSON object"
		}
		return fmt.Sprintf("field %s must be a %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON body ends too early"
	default:
		return "invalid JSON body: " + err.Error()
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64", "int32":
		return "integer"
	case "slice":
		return "JSON array"
	case "map", "struct", "ptr":
		return "JSON object"
	default:
		return goKind
	}
}

// parseInteger reads a JSON number that must be a whole number, however it is written
// (100, 1e3, 2.0e9). It reports whether the text was a whole number at all.
func parseInteger(raw json.RawMessage) (*big.Int, bool) {
	text := strings.TrimSpace(string(raw))
	if text == "" || !(text[0] == '-' || text[0] >= '0' && text[0] <= '9') {
		return nil, false
	}
	if len(text) > 400 {
		return nil, false // absurdly long numerals are not sizes
	}
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		// Huge exponents make big.ParseFloat slow; no size needs more than a few digits.
		exp, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
		if err != nil || exp > 100 || exp < -100 {
			mantissa, _, err := big.ParseFloat(text[:i], 10, 64, big.ToZero)
			if err != nil {
				return nil, false
			}
			switch {
			case mantissa.Sign() == 0:
				return new(big.Int), true
			case exp > 100:
				huge := new(big.Int).Exp(big.NewInt(10), big.NewInt(100), nil)
				return huge.Mul(huge, big.NewInt(int64(mantissa.Sign()))), true
			default:
				return nil, false
			}
		}
	}
	f, _, err := big.ParseFloat(text, 10, 256, big.ToZero)
	if err != nil || !f.IsInt() {
		return nil, false
	}
	n, _ := f.Int(nil)
	return n, true
}

// strictQuery parses the request's query and refuses what two readers could read differently:
// a malformed query (encoding/json's sibling net/url drops a pair with a semicolon or a bad
// escape without a word) and a parameter given twice (r.URL.Query().Get takes the first, many
// proxies and frameworks the last).
func strictQuery(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &Error{Code: CodeInvalidRequest, Message: "the query string is malformed: separate parameters with & and percent-encode values", Err: err}
	}
	for name, values := range q {
		if len(values) > 1 {
			return nil, errorf(CodeInvalidRequest, fmt.Sprintf("query parameter %s appears more than once; send each parameter once", strconv.Quote(name)))
		}
	}
	return q, nil
}

// maxJSONDepth bounds how deeply checkExactKeys follows nested arrays and objects; no request
// body of the API nests more than three levels.
const maxJSONDepth = 32

// errJSONSyntax stops checkExactKeys at malformed JSON, which the decoder then describes.
var errJSONSyntax = errors.New("malformed JSON")

// checkExactKeys walks the first JSON value of body along the Go type t it will be decoded
// into and refuses what encoding/json would quietly accept: a field name that matches a
// struct field only case-insensitively ("Input_Bytes"), and a name repeated in one object
// (encoding/json keeps the last, other parsers the first). Malformed JSON is left to the
// decoder, which names the problem.
func checkExactKeys(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := walkExact(dec, t, "", 0)
	if errors.Is(err, errJSONSyntax) {
		return nil
	}
	return err
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walkExact reads one value from dec; t is the Go type it decodes into (nil: any, or a type
// that decodes itself, whose names are not checked but whose duplicates are).
func walkExact(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	if depth > maxJSONDepth {
		return errorf(CodeInvalidRequest, fmt.Sprintf("the JSON body nests more than %d levels", maxJSONDepth))
	}
	tok, err := dec.Token()
	if err != nil {
		return errJSONSyntax
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkExact(dec, elem, path+"[]", depth+1); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := make(map[string]struct{}, 4)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return errJSONSyntax
			}
			name, _ := tok.(string)
			if _, dup := seen[name]; dup {
				return errorf(CodeInvalidRequest, fmt.Sprintf("field %s appears more than once; send each field once", strconv.Quote(path+name)))
			}
			seen[name] = struct{}{}
			ft := elem
			if fields != nil {
				var known bool
				if ft, known = fields[name]; !known {
					return errorf(CodeInvalidRequest, unknownFieldMessage(path+name, name, fields))
				}
			}
			if err := walkExact(dec, ft, path+name+".", depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errJSONSyntax
	}
	return nil
}

// unknownFieldMessage names an unknown field, and the field it differs from only in case.
func unknownFieldMessage(full, name string, fields map[string]reflect.Type) string {
	for known := range fields {
		if strings.EqualFold(known, name) {
			return fmt.Sprintf("unknown field %s; field names are case-sensitive: did you mean %s?", strconv.Quote(full), strconv.Quote(known))
		}
	}
	return "unknown field " + strconv.Quote(full)
}

// fieldCache maps a struct type to its JSON field names and their types.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields lists the names encoding/json decodes into t's fields (exported fields, by their
// json tag or Go name, embedded structs' fields promoted) with their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	addJSONFields(m, t, 0)
	fieldCache.Store(t, m)
	return m
}

func addJSONFields(m map[string]reflect.Type, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth < 8 {
				addJSONFields(m, ft, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := m[name]; !taken || depth == 0 {
			m[name] = f.Type
		}
	}
}
