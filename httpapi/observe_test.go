package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTemplateOf(t *testing.T) {
	tests := []struct {
		path string
		ps   []paramKV
		want string
	}{
		{"/v1/jobs", nil, "/v1/jobs"},
		{"/v1/jobs/job_1", []paramKV{{"id", "job_1"}}, "/v1/jobs/:id"},
		{"/v1/jobs/job_1/start", []paramKV{{"id", "job_1"}}, "/v1/jobs/:id/start"},
		{"/v1/jobs/start/start", []paramKV{{"id", "start"}}, "/v1/jobs/:id/start"},
		{"/v1/jobs/x", []paramKV{{"id", "y"}}, RouteUnmatched},
	}
	for _, tt := range tests {
		if got := templateOf(tt.path, tt.ps); got != tt.want {
			t.Errorf("templateOf(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestStorageRoute(t *testing.T) {
	for path, want := range map[string]string{
		"/uploads/job_1?sig=ab": "/uploads/:id",
		"/outputs/job_1":        "/outputs/:id",
		"/outputs/":             RouteUnmatched,
		"/outputs/a/b":          RouteUnmatched,
		"/secret/cs_live_x":     RouteUnmatched,
	} {
		if got := StorageRoute(httptest.NewRequest("GET", path, nil)); got != want {
			t.Errorf("StorageRoute(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestMethodLabel(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "PATCH": "PATCH", "BREW": "other", "get": "other"} {
		if got := methodLabel(m); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", m, got, want)
		}
	}
}

// A generated request id is "req_" and 24 lowercase hex digits (12 random bytes), new each time,
// and passes the check a caller's own id must pass.
func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		hexPart, ok := strings.CutPrefix(id, "req_")
		if !ok || len(hexPart) != 24 || strings.Trim(hexPart, "0123456789abcdef") != "" || !validRequestID(id) {
			t.Fatalf("request id %q", id)
		}
		if seen[id] {
			t.Fatalf("request id %q twice", id)
		}
		seen[id] = true
	}
}
