package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/webhook"
)

// FuzzDeliverTo: whatever deliver_to a create carries, checkDeliverTo either refuses it with a
// 400 or returns a delivery whose URL is the one sent and whose headers are valid field names
// with values free of line breaks, none of them set by the transfer itself; and the job view
// of it never shows a header's value or the URL's query.
func FuzzDeliverTo(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://bucket.example/o.jpg?X-Amz-Signature=abc","headers":{"Content-Type":"image/jpeg"}}`,
		`{"url":"https://bucket.example/o","headers":{"Host":"evil"}}`,
		`{"url":"https://bucket.example/o","headers":{"X-A":"a\r\nX-B: b"}}`,
		`{"url":"ftp://bucket.example/o"}`,
		`{"headers":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req deliverToRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		d, err := checkDeliverTo(&req)
		if err != nil {
			if e, ok := err.(*Error); !ok || statusOf(e) != 400 {
				t.Fatalf("refusal %v is not a 400 API error", err)
			}
			return
		}
		if d == nil || req.URL == nil || d.URL != *req.URL || len(d.Headers) > maxDeliverHeaders {
			t.Fatalf("accepted %+v from %s", d, body)
		}
		v := viewDeliverTo(d)
		for name, value := range d.Headers {
			if !validHeaderName(name) || strings.ContainsAny(value, "\r\n\x00") || reservedDeliverHeaders[strings.ToLower(name)] {
				t.Fatalf("accepted header %q: %q", name, value)
			}
			if v.Headers[name] != webhook.Redacted {
				t.Fatalf("view shows header %s as %q", name, v.Headers[name])
			}
		}
		if v.URL != webhook.RedactURL(d.URL) {
			t.Fatalf("view URL %q", v.URL)
		}
	})
}
