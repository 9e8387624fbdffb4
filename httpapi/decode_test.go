package httpapi

import (
	"errors"
	"testing"

	"github.com/convsvc/convsvc/convert"
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
		{`{"input_format":"png","input_bytes":1}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":null,"input_bytes":1}`, 0, CodeInvalidRequest},
		{`{"input_format":"png","target_format":7,"input_bytes":1}`, 0, CodeInvalidRequest},
		{`null`, 0, CodeInvalidRequest},
		{`"x"`, 0, CodeInvalidRequest},
	}
	for _, tt := range tests {
		parsed, err := parseCreateJob([]byte(tt.body))
		size := parsed.size
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
	f.Add([]byte(`{"input_format":"png","target_format":"jpeg","source_url":"https://example.com/a.png"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsed, err := parseCreateJob(body)
		size := parsed.size
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

// FuzzParsePlainCreate: whenever the single-pass reader takes a body, encoding/json's strict
// decoder takes it too, with the same formats and size and no options.
func FuzzParsePlainCreate(f *testing.F) {
	for _, body := range []string{
		`{"input_format":"png","target_format":"jpeg","input_bytes":10}`,
		" {\n\t\"input_bytes\" : 2000000000 ,\"target_format\":\"webp\",\"input_format\":\"png\"}\r\n",
		`{"input_format":"png","target_format":"jpeg","input_bytes":10,"input_bytes":11}`,
		`{"INPUT_FORMAT":"png","target_format":"jpeg","input_bytes":10}`,
		`{"input_format":"p\u006eg","target_format":"jpeg","input_bytes":10}`,
		`{"input_format":"png","target_format":"jpeg","input_bytes":010}`,
		`{"input_format":"png","target_format":"jpeg","input_bytes":2000000001}`,
		`{"input_format":"png","target_format":"jpeg","input_bytes":1e3}`,
		`{"input_format":"png","target_format":"jpeg","input_bytes":10} x`,
		`{"input_format":"","target_format":"jpeg","input_bytes":10}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		input, target, size, ok := parsePlainCreate(body)
		if !ok {
			return
		}
		sInput, sTarget, sSize, sOpts, err := parseCreateJobStrict(body)
		if err != nil || sInput != input || sTarget != target || sSize != size || !sOpts.IsZero() {
			t.Fatalf("%q: single pass %q %q %d; strict %q %q %d %+v %v", body, input, target, size, sInput, sTarget, sSize, sOpts, err)
		}
	})
}

// TestParsePlainCreate: the bodies the single pass takes, and those it leaves to the strict
// decoder (which then answers as before: TestParseCreateJob).
func TestParsePlainCreate(t *testing.T) {
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10}`, true},
		{" {\"target_format\" :\"jpeg\",\n\"input_bytes\":\t2000000000, \"input_format\":\"png\" } ", true},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":2000000001}`, false}, // over the maximum
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{}}`, false},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10,"input_bytes":10}`, false},
		{`{"Input_Format":"png","target_format":"jpeg","input_bytes":10}`, false}, // encoding/json matches keys case-insensitively
		{`{"input_format":"p\"g","target_format":"jpeg","input_bytes":10}`, false},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":0}`, false},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":1.0}`, false},
		{`{"input_format":"png","target_format":"jpeg"}`, false},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10}{}`, false},
		{`{"input_format":"png","target_format":"jpeg","input_bytes":10`, false},
	} {
		_, _, size, ok := parsePlainCreate([]byte(tt.body))
		if ok != tt.ok {
			t.Errorf("%s: ok %v, want %v", tt.body, ok, tt.ok)
		} else if ok && size != 10 && size != 2000000000 {
			t.Errorf("%s: size %d", tt.body, size)
		}
	}
}

// BenchmarkParseCreateJob is apibench's create body, through parseCreateJob (the single pass)
// and through the strict decoder alone.
func BenchmarkParseCreateJob(b *testing.B) {
	body := []byte(`{"input_format":"png","target_format":"jpeg","input_bytes":153}`)
	for name, parse := range map[string]func([]byte) (string, string, int64, convert.Options, error){
		"plain": func(body []byte) (string, string, int64, convert.Options, error) {
			c, err := parseCreateJob(body)
			return c.input, c.target, c.size, c.opts, err
		},
		"strict": parseCreateJobStrict,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
