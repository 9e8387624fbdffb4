package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeStrict_ExactNamesOnce: every JSON body the API and the admin API decode names its
// fields exactly and once, so a proxy and the server never read different values from it.
// encoding/json alone matches names case-insensitively and keeps the last of duplicates.
func TestDecodeStrict_ExactNamesOnce(t *testing.T) {
	create := func() any { return &createJobRequest{} }
	account := func() any { return &accountRequest{} }
	tests := []struct {
		name string
		into func() any
		body string
		want string // "" for accepted; else a word the message must hold
	}{
		{"create exact", create, `{"input_format":"png","target_format":"jpeg","input_bytes":10}`, ""},
		{"create with options", create, `{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{"quality":80,"lossless":true}}`, ""},
		{"escaped name is the same name", create, `{"input\u005fformat":"png","target_format":"jpeg","input_bytes":10}`, ""},
		{"Input_Bytes", create, `{"input_format":"png","target_format":"jpeg","Input_Bytes":10}`, `did you mean "input_bytes"`},
		{"INPUT_FORMAT", create, `{"INPUT_FORMAT":"png","target_format":"jpeg","input_bytes":10}`, "unknown field"},
		{"long s folds to s", create, `{"input_format":"png","target_format":"jpeg","input_byte\u017f":10}`, `did you mean "input_bytes"`},
		{"long s in an option", create, `{"input_format":"png","target_format":"webp","input_bytes":10,"options":{"lo\u017fsless":true}}`, "unknown field"},
		{"option case", create, `{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{"Quality":80}}`, `"options.Quality"`},
		{"duplicate size", create, `{"input_format":"png","target_format":"jpeg","input_bytes":10,"input_bytes":2000000000}`, "more than once"},
		{"duplicate format", create, `{"input_format":"png","input_format":"gif","target_format":"jpeg","input_bytes":10}`, "more than once"},
		{"duplicate through an escape", create, `{"input_format":"png","input\u005fformat":"gif","target_format":"jpeg","input_bytes":10}`, "more than once"},
		{"duplicate option", create, `{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{"quality":10,"quality":90}}`, `"options.quality" appears more than once`},
		{"duplicate options object", create, `{"options":{},"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{}}`, "more than once"},
		{"duplicate inside a raw value", create, `{"input_format":"png","target_format":"jpeg","input_bytes":{"a":1,"a":2}}`, "more than once"},
		{"invalid UTF-8", create, "{\"input_format\":\"p\xffg\",\"target_format\":\"jpeg\",\"input_bytes\":10}", "UTF-8"},
		{"too deep", create, `{"input_bytes":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "nests"},
		{"malformed is still described", create, `{"input_format":"png",`, "ends too early"},
		{"account exact", account, `{"name":"a","spend_cap_cents":5}`, ""},
		{"account case", account, `{"name":"a","Spend_Cap_Cents":5}`, `did you mean "spend_cap_cents"`},
		{"account duplicate cap", account, `{"name":"a","spend_cap_cents":5,"spend_cap_cents":500000}`, "more than once"},
		{"account duplicate name", account, `{"name":"a","name":"b"}`, "more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeStrict([]byte(tt.body), tt.into())
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidRequest || statusOf(apiErr) != 400 {
				t.Fatalf("got %v, want 400 invalid_request", err)
			}
			if !strings.Contains(apiErr.Message, tt.want) {
				t.Fatalf("message %q does not say %q", apiErr.Message, tt.want)
			}
		})
	}
}

// FuzzDecodeStrict: whatever decodeStrict accepts into a create request is a body in which
// every object names each field once, and exactly as the request type spells it, and the
// request equals what an exact, first-wins reading of the same body gives. Seeds are in
// testdata/fuzz/FuzzDecodeStrict.
func FuzzDecodeStrict(f *testing.F) {
	f.Add([]byte(`{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{"quality":80}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req createJobRequest
		if err := decodeStrict(body, &req); err != nil {
			var apiErr *Error
			if !errors.As(err, &apiErr) || statusOf(apiErr) != 400 {
				t.Fatalf("error %v is not a 400 API error", err)
			}
			return
		}
		// An independent reading: the top-level object's members in order, names as written.
		dec := json.NewDecoder(bytes.NewReader(body))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("accepted a body that is not an object: %q", body)
		}
		members := map[string]json.RawMessage{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("accepted malformed JSON %q: %v", body, err)
			}
			name := tok.(string)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("accepted malformed JSON %q: %v", body, err)
			}
			if _, dup := members[name]; dup {
				t.Fatalf("accepted %q with %q twice", body, name)
			}
			members[name] = raw
		}
		fields := jsonFields(reflect.TypeFor[createJobRequest]())
		var exact createJobRequest
		for name, raw := range members {
			if _, ok := fields[name]; !ok {
				t.Fatalf("accepted %q with field %q, which the request does not spell so", body, name)
			}
			var err error
			switch name {
			case "input_format":
				err = json.Unmarshal(raw, &exact.InputFormat)
			case "target_format":
				err = json.Unmarshal(raw, &exact.TargetFormat)
			case "input_bytes":
				exact.InputBytes = raw
			case "options":
				err = json.Unmarshal(raw, &exact.Options)
			}
			if err != nil {
				t.Fatalf("field %s of accepted %q: %v", name, body, err)
			}
		}
		if exact.Options != nil {
			var names map[string]json.RawMessage
			if json.Unmarshal(members["options"], &names) == nil {
				optFields := jsonFields(reflect.TypeOf(*exact.Options))
				for name := range names {
					if _, ok := optFields[name]; !ok {
						t.Fatalf("accepted %q with option %q, which Options does not spell so", body, name)
					}
				}
			}
		}
		// encoding/json compacts nothing in RawMessage: compare the values, not the bytes.
		if !reflect.DeepEqual(exact.InputFormat, req.InputFormat) || !reflect.DeepEqual(exact.TargetFormat, req.TargetFormat) ||
			!reflect.DeepEqual(exact.Options, req.Options) || !bytes.Equal(bytes.TrimSpace(exact.InputBytes), bytes.TrimSpace(req.InputBytes)) {
			t.Fatalf("%q: decodeStrict read %+v, an exact reading %+v", body, req, exact)
		}
	})
}
