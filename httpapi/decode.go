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
	"strconv"
	"strings"
)

// readJSONBody reads a bounded JSON body and checks its Content-Type.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, errorf(CodeUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errorf(CodeInvalidRequest, "a JSON request body is required")
	}
	return body, nil
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown fields and trailing data.
func decodeStrict(body []byte, v any) error {
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
