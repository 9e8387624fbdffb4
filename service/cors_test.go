package service

import (
	"slices"
	"testing"
)

// TestDefaultCORSOrigins: without --cors-origins object storage allows the origin of the API's
// public URL; a public URL on an unspecified address (--listen 0.0.0.0:8080 or [::]:8080 and no
// --public-url) is no origin a browser sends, so the loopback names on its port stand in.
// Before, http://0.0.0.0:8080 itself was the allowed origin.
func TestDefaultCORSOrigins(t *testing.T) {
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"http://127.0.0.1:8080", []string{"http://127.0.0.1:8080"}},
		{"https://convert.example.com", []string{"https://convert.example.com"}},
		{"https://convert.example.com/base", []string{"https://convert.example.com"}},
		{"http://0.0.0.0:8080", []string{"http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"}},
		{"http://[::]:9000", []string{"http://127.0.0.1:9000", "http://localhost:9000", "http://[::1]:9000"}},
	} {
		if got := defaultCORSOrigins(c.url); !slices.Equal(got, c.want) {
			t.Errorf("defaultCORSOrigins(%q) = %v, want %v", c.url, got, c.want)
		}
	}
}
