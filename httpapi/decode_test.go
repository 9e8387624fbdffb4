package httpapi

import (
	"errors"
	"testing"

	"github.com/convsvc/convsvc/store"
)

func TestParseCreateJob(t *testing.T) {
	tests := []struct {
		body string
		size int64
		code string
	}{
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10}`, 10, ""},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":1e3}`, 1000, ""},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":2.0e9}`, 2000000000, ""},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":2000000000.5}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":-1e999}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":1e-999}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":0e999}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":99999999999999999999999}`, 0, CodeFileTooLarge},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":true}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":{}}`, 0, CodeInvalidRequest},
		{`{"input_format":"","target_format":"jpeg","input_bytes":1}`, 0, CodeInvalidRequest},
		{`null`, 0, CodeInvalidRequest},
		{`"x"`, 0, CodeInvalidRequest},
	}
	for _, tt := range tests {
		_, _, size, _, err := parseCreateJob([]byte(tt.body))
		var apiErr *Error
		switch {
		case tt.code == "" && (err != nil || size != tt.size):
			t.Errorf("%s: got %d %v, want %d", tt.body, size, err, tt.size)
		case tt.code != "" && (!errors.As(err, &apiErr) || apiErr.Code != tt.code):
			t.Errorf("%s: got %v, want %s", tt.body, err, tt.code)
		}
	}
}

// FuzzParseCreateJob: whatever the body, the decoder answers with a size in range or an API
// error with a 4xx code; it never panics.
func FuzzParseCreateJob(f *testing.F) {
	f.Add([]byte(`{"input_format":"png","target_format":"jpeg","input_bytes":10}`))
	f.Add([]byte(`{"input_format":"png","target_format":"jpeg","input_bytes":1e999999999}`))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, size, _, err := parseCreateJob(body)
		if err == nil {
			if size < 1 || size > store.MaxInputBytes {
				t.Fatalf("accepted size %d", size)
			}
			return
		}
		var apiErr *Error
		if !errors.As(err, &apiErr) || statusOf(apiErr) != 400 {
			t.Fatalf("error %v is not a 400 API error", err)
		}
	})
}
