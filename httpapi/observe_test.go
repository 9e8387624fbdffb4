package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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

func TestStatusLabel(t *testing.T) {
	for _, code := range []int{200, 201, 202, 204, 304, 400, 404, 429, 500, 503} {
		if got := statusLabel(code); got != strconv.Itoa(code) {
			t.Errorf("statusLabel(%d) = %q", code, got)
		}
	}
}

// The shared header values must survive what handlers and net/http do to a response's header.
func TestSharedHeaderValuesStayUnchanged(t *testing.T) {
	w := httptest.NewRecorder()
	setRateHeaders(w, rateDecision{Limit: 120, Remaining: 7, Reset: 30 * time.Second})
	writeRaw(w, 200, []byte("{}"))
	h := w.Header()
	h.Add("Content-Type", "text/plain")
	h.Add("X-Content-Type-Options", "other")
	h.Add("Ratelimit-Limit", "1")
	h.Add("Ratelimit-Remaining", "2")
	if jsonContentType[0] != "application/json" || len(jsonContentType) != 1 || noSniff[0] != "nosniff" || len(noSniff) != 1 {
		t.Fatalf("shared values changed: %q %q", jsonContentType, noSniff)
	}
	if got := h.Values("Ratelimit-Reset"); len(got) != 1 || got[0] != "30" {
		t.Fatalf("Ratelimit-Reset = %q after adding to its neighbours, want [30]", got)
	}
	w2 := httptest.NewRecorder()
	writeRaw(w2, 200, []byte("{}"))
	if got := w2.Header().Values("Content-Type"); len(got) != 1 || got[0] != "application/json" {
		t.Fatalf("next response's Content-Type = %q", got)
	}
}

// logLineFixture is a keyed request's log line inputs: the request, its info and its recorder.
func logLineFixture() (*slog.Logger, *bytes.Buffer, *http.Request, *requestInfo, *statusRecorder) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	r := httptest.NewRequest("POST", "/v1/jobs/job_1/start", nil)
	info := &requestInfo{id: "req_0123456789abcdef01234567"}
	acct := "acct_0123456789abcdef"
	info.accountID.Store(&acct)
	return log, &buf, r, info, &statusRecorder{status: 200, bytes: 512}
}

// TestLogRequestLine pins the request line's fields, names and JSON types.
func TestLogRequestLine(t *testing.T) {
	log, buf, r, info, rec := logLineFixture()
	logRequest(log, r, info, "POST", "/v1/jobs/:id/start", rec, 2410*time.Microsecond, true)
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf)
	}
	delete(got, "time")
	want := map[string]any{
		"level": "INFO", "msg": "request", "request_id": "req_0123456789abcdef01234567", "method": "POST",
		"route": "/v1/jobs/:id/start", "status": 200.0, "duration_ms": 2.41, "bytes": 512.0,
		"account_id": "acct_0123456789abcdef", "aborted": true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request line\n got %v\nwant %v", got, want)
	}
	buf.Reset()
	logRequest(log, r, info, "POST", "/v1/jobs/:id/start", rec, time.Millisecond, false)
	if strings.Contains(buf.String(), "aborted") {
		t.Errorf("a finished request's line says aborted: %s", buf)
	}
}

// BenchmarkLogRequest is the request line every API and object-storage request writes at
// --log-level info (the default), in both log formats.
func BenchmarkLogRequest(b *testing.B) {
	_, buf, r, info, rec := logLineFixture()
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			log := slog.New(slog.NewTextHandler(buf, nil))
			if format == "json" {
				log = slog.New(slog.NewJSONHandler(buf, nil))
			}
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				logRequest(log, r, info, "POST", "/v1/jobs/:id/start", rec, 2410*time.Microsecond, false)
			}
		})
	}
}
