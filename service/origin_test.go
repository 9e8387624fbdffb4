package service

import "testing"

// TestOriginOf: the default CORS origin is what a browser sends in Origin for a page served
// from the public URL: scheme, host and port, without path or trailing slash.
func TestOriginOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://files.example.com/convsvc/", "https://files.example.com"},
		{"https://files.example.com:8443/", "https://files.example.com:8443"},
		{"not a url", "not a url"},
	} {
		if got := originOf(c.in); got != c.want {
			t.Errorf("originOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
