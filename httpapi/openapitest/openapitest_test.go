package openapitest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/httpapi/openapitest"
)

func loadDocument(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// recorder is a testing.TB that keeps what Client reports instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
}

func (r *recorder) reports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

// job returns a conforming succeeded Job as a map, for cases to spoil.
func job() map[string]any {
	return map[string]any{
		"id":            "job_abc123",
		"status":        "succeeded",
		"input_format":  "png",
		"target_format": "webp",
		"input_bytes":   48213,
		"options":       nil,
		"attempt":       1,
		"error_code":    nil,
		"error_message": nil,
		"error_reason":  nil,
		"expires_at":    "2026-11-03T10:15:00Z",
		"created_at":    "2026-11-02T10:15:00Z",
		"started_at":    "2026-11-02T10:15:02Z",
		"finished_at":   "2026-11-02T10:15:03.5+01:00",
		"output": map[string]any{
			"bytes":          20117,
			"sha256":         strings.Repeat("ab", 32),
			"url":            "http://127.0.0.1:8081/outputs/job_abc123?expires=1&size=20117&sig=ff",
			"url_expires_in": 900,
			"warnings":       []any{map[string]any{"code": "sheets_dropped", "message": "sheets Costs, Notes were not converted"}},
			"verified":       true,
			"cached":         false,
		},
	}
}

// createdJob returns a conforming Job as create answers it.
func createdJob() map[string]any {
	j := job()
	j["status"] = "created"
	j["attempt"] = 0
	j["started_at"] = nil
	j["finished_at"] = nil
	j["output"] = nil
	return j
}

func apiKey() map[string]any {
	return map[string]any{
		"id": "key_1", "account_id": "acct_1", "prefix": "cs_live_a1B2", "created_at": "2026-11-02T10:00:00Z", "revoked_at": nil, "presets_only": false,
	}
}

func account() map[string]any {
	return map[string]any{
		"id": "acct_1", "name": "default", "spend_cap_cents": 1000, "reserved_cents": 2, "spent_cents": 7,
		"monthly_spend": []any{map[string]any{"month": "2026-11", "spent_cents": 7}}, "created_at": "2026-11-02T10:00:00Z",
		"max_running": 4, "max_queued": nil,
	}
}

func with(m map[string]any, key string, value any) map[string]any {
	m = maps.Clone(m)
	m[key] = value
	return m
}

func without(m map[string]any, key string) map[string]any {
	m = maps.Clone(m)
	delete(m, key)
	return m
}

func errorBody(code string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": "something"}}
}

var rateLimitHeaders = map[string]string{"RateLimit-Limit": "600", "RateLimit-Remaining": "599", "RateLimit-Reset": "1"}

// reply answers with status, headers and body: a map or slice is sent as
// JSON, a string as it is. Request-Id is set unless headers set it to "".
func reply(status int, headers map[string]string, body any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Request-Id", "req_1")
		var data []byte
		switch b := body.(type) {
		case nil:
		case string:
			data = []byte(b)
		default:
			var err error
			if data, err = json.Marshal(b); err != nil {
				panic(err)
			}
			w.Header().Set("Content-Type", "application/json")
		}
		for k, v := range headers {
			if v == "" {
				w.Header().Del(k)
				continue
			}
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		w.Write(data)
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func TestDocument_Valid(t *testing.T) {
	doc := loadDocument(t)
	openapitest.New(t, doc)

	var d struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas map[string]struct {
				Enum     []any    `json:"enum"`
				Required []string `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", d.OpenAPI)
	}
	apiCodes := []string{
		"invalid_request", "unsupported_format", "file_too_large", "size_mismatch", "unauthorized",
		"limit_reached", "not_found", "method_not_allowed", "invalid_state", "idempotency_mismatch",
		"request_too_large", "unsupported_media_type", "rate_limited", "internal_error", "storage_unavailable",
		"too_many_connections", "not_implemented", "presets_only", "queue_full",
	}
	storageCodes := append(slices.Clone(apiCodes),
		"invalid_signature", "url_expired", "upload_sealed", "upload_in_progress", "length_required", "job_finished", "transfer_stalled", "cors_refused",
		"insufficient_storage")
	apiCodes = append(apiCodes, "checksum_mismatch") // start's only: object storage never answers it
	for _, tc := range []struct {
		schema string
		want   []string
	}{
		{"ErrorCode", apiCodes},
		{"StorageErrorCode", storageCodes},
		{"JobStatus", []string{"created", "uploaded", "queued", "running", "succeeded", "failed", "cancelled"}},
		{"JobErrorCode", []string{"conversion_failed", "expired_or_exhausted", "worker_shutdown"}}, // SPEC's three, no more
		{"FormatCategory", []string{"image", "document", "data", "audio", "archive"}},
	} {
		var got []string
		for _, e := range d.Components.Schemas[tc.schema].Enum {
			got = append(got, fmt.Sprint(e))
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s enum = %v, want %v", tc.schema, got, want)
		}
	}
	wantJob := []string{"id", "status", "input_format", "target_format", "input_bytes", "attempt", "error_code",
		"error_message", "error_reason", "expires_at", "created_at", "started_at", "finished_at", "output", "options"}
	if got := d.Components.Schemas["Job"].Required; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(wantJob))) {
		t.Errorf("Job required = %v, want %v", got, wantJob)
	}
}

// TestDocument_ErrorStatuses holds every documented error response to the
// status each code belongs to, and every job response to the rate-limit headers.
func TestDocument_ErrorStatuses(t *testing.T) {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
		Comp  struct {
			Responses map[string]response `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(loadDocument(t), &d); err != nil {
		t.Fatal(err)
	}
	statusOf := map[string][]string{
		"invalid_request": {"400"}, "unsupported_format": {"400"}, "file_too_large": {"400"}, "size_mismatch": {"400"},
		"unauthorized": {"401", "403"}, "limit_reached": {"403"}, "not_found": {"404"}, "method_not_allowed": {"405"},
		"invalid_state": {"409"}, "idempotency_mismatch": {"409"}, "checksum_mismatch": {"409"}, "request_too_large": {"413"},
		"unsupported_media_type": {"415"}, "rate_limited": {"429"}, "queue_full": {"429"}, "internal_error": {"500"}, "storage_unavailable": {"502", "503"},
		"invalid_signature": {"403"}, "url_expired": {"403"}, "upload_sealed": {"409"}, "upload_in_progress": {"409"}, "job_finished": {"409"}, "transfer_stalled": {"408"},
		"length_required": {"411"}, "cors_refused": {"403"}, "too_many_connections": {"503"},
		"not_implemented": {"501"}, "insufficient_storage": {"507"}, "presets_only": {"403"},
	}
	resolve := func(r response) response {
		if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
			return d.Comp.Responses[name]
		}
		return r
	}
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "parameters" || method == "servers" {
				continue
			}
			var op struct {
				Tags      []string            `json:"tags"`
				Responses map[string]response `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			for status, r := range op.Responses {
				r = resolve(r)
				where := fmt.Sprintf("%s %s %s", strings.ToUpper(method), path, status)
				// The connection cap's 503 is written by the listener before a request is
				// read: no Request-Id, no rate-limit headers, always Retry-After.
				switch {
				case connLevel(r):
					if len(r.Headers) != 1 || r.Headers["Retry-After"] == nil {
						t.Errorf("%s: too_many_connections documented with headers %v, want Retry-After alone", where, r.Headers)
					}
				case r.Headers["Request-Id"] == nil:
					t.Errorf("%s: no Request-Id header", where)
				}
				if slices.Contains(op.Tags, "jobs") && !connLevel(r) {
					for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
						if _, ok := r.Headers[h]; !ok {
							t.Errorf("%s: no %s header", where, h)
						}
					}
					if _, ok := r.Headers["Retry-After"]; (status == "429") != ok {
						t.Errorf("%s: Retry-After documented = %v", where, ok)
					}
				}
				mt, ok := r.Content["application/json"]
				if status[0] < '4' || !ok || len(mt.Schema.AllOf) == 0 || !strings.HasSuffix(mt.Schema.AllOf[0].Ref, "Error") {
					continue
				}
				// The narrowing is the second allOf member, typed in full so that
				// generators keep code and message typed (issue 22).
				if len(mt.Schema.AllOf) != 2 {
					t.Errorf("%s: error response is allOf of %d schemas, want the error schema and its narrowing", where, len(mt.Schema.AllOf))
					continue
				}
				n := mt.Schema.AllOf[1]
				if n.Type != "object" || n.Properties.Error.Type != "object" || n.Properties.Error.Properties.Code.Type != "string" ||
					n.Properties.Error.Properties.Message.Type != "string" {
					t.Errorf("%s: error narrowing is not typed in full: %+v", where, n)
				}
				codes := n.Properties.Error.Properties.Code.Enum
				if len(codes) == 0 {
					t.Errorf("%s: error response does not pin its codes", where)
				}
				for _, c := range codes {
					if !slices.Contains(statusOf[c], status) {
						t.Errorf("%s: code %q does not belong to status %s", where, c, status)
					}
				}
			}
		}
	}
}

// connLevel reports whether r is the connection cap's answer: an error response pinned to
// too_many_connections alone.
func connLevel(r response) bool {
	mt, ok := r.Content["application/json"]
	return ok && len(mt.Schema.AllOf) == 2 &&
		slices.Equal(mt.Schema.AllOf[1].Properties.Error.Properties.Code.Enum, []string{"too_many_connections"})
}

type response struct {
	Ref     string         `json:"$ref"`
	Headers map[string]any `json:"headers"`
	Content map[string]struct {
		Schema struct {
			AllOf []struct {
				Ref        string `json:"$ref"`
				Type       string `json:"type"`
				Properties struct {
					Error struct {
						Type       string `json:"type"`
						Properties struct {
							Code struct {
								Type string   `json:"type"`
								Enum []string `json:"enum"`
							} `json:"code"`
							Message struct {
								Type string `json:"type"`
							} `json:"message"`
						} `json:"properties"`
					} `json:"error"`
				} `json:"properties"`
			} `json:"allOf"`
		} `json:"schema"`
	} `json:"content"`
}

func TestNew_InvalidDocument(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":       "{",
		"no info":        `{"openapi":"3.1.0","paths":{}}`,
		"dangling $ref":  `{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"$ref":"#/components/responses/Nope"}}}}}}`,
		"no error parts": `{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{TB: t}
			if v := openapitest.New(rec, []byte(doc)); v != nil || !rec.fatal {
				t.Errorf("New accepted an invalid document (fatal = %v)", rec.fatal)
			}
		})
	}
}

type exchange struct {
	name    string
	method  string
	path    string
	header  map[string]string
	body    string
	handler http.HandlerFunc
	wantErr string // substring of the error; "" for none
}

var bearer = map[string]string{"Authorization": "Bearer cs_live_whatever"}
var jsonBearer = merge(bearer, map[string]string{"Content-Type": "application/json"})

var downloadHeaders = map[string]string{
	"Content-Type":        "image/webp",
	"ETag":                `"abc"`,
	"Content-Disposition": `attachment; filename="job_abc123.webp"`,
	"Accept-Ranges":       "bytes",
}

var exchanges = []exchange{
	// The Job shape.
	{name: "conforming job", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, job())},
	{name: "job with null fields", method: "GET", path: "/v1/jobs/job_abc123?wait=5", header: bearer,
		handler: reply(200, rateLimitHeaders, with(createdJob(), "input_bytes", nil))},
	{name: "failed job", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(with(with(job(), "status", "failed"), "error_code", "conversion_failed"), "output", nil))},
	{name: "job missing attempt", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, without(job(), "attempt")), wantErr: "attempt"},
	{name: "job with extra field", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "colour", "blue")), wantErr: "colour"},
	{name: "job with bogus status", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "status", "bogus")), wantErr: "bogus"},
	{name: "job with bogus error_code", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "error_code", "oops")), wantErr: "doesn't match"},
	{name: "job with negative attempt", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "attempt", -1)), wantErr: "doesn't match"},
	{name: "job with bad date", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "expires_at", "tomorrow")), wantErr: "doesn't match"},
	{name: "job with relative output url", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "output", map[string]any{
			"bytes": 1, "sha256": strings.Repeat("0", 64), "url": "/outputs/job_abc123", "url_expires_in": 900})), wantErr: "doesn't match"},
	{name: "job with an unknown warning code", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "output", map[string]any{
			"bytes": 1, "sha256": strings.Repeat("0", 64), "url": "http://h/outputs/job_abc123", "url_expires_in": 900,
			"warnings": []any{map[string]any{"code": "something_lost", "message": "x"}}})), wantErr: "doesn't match"},
	{name: "job output without warnings", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "output", map[string]any{
			"bytes": 1, "sha256": strings.Repeat("0", 64), "url": "http://h/outputs/job_abc123", "url_expires_in": 900})), wantErr: "doesn't match"},
	{name: "job with empty output", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "output", map[string]any{})), wantErr: "doesn't match"},
	{name: "job id without prefix", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "id", "abc123")), wantErr: "doesn't match"},

	// Statuses and headers.
	{name: "undocumented 201", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(201, rateLimitHeaders, job()), wantErr: "status 201 is not documented"},
	{name: "undocumented 418", method: "GET", path: "/v1/formats", handler: reply(418, nil, errorBody("internal_error")),
		wantErr: "status 418 is not documented"},
	{name: "no rate-limit headers", method: "GET", path: "/v1/jobs/job_abc123", header: bearer,
		handler: reply(200, nil, job()), wantErr: "RateLimit-"},
	{name: "no Request-Id", method: "GET", path: "/v1/formats",
		handler: reply(200, map[string]string{"Request-Id": ""}, []any{}), wantErr: "Request-Id"},
	{name: "429 without Retry-After", method: "POST", path: "/v1/jobs/job_abc123/start", header: bearer,
		handler: reply(429, rateLimitHeaders, errorBody("rate_limited")), wantErr: "Retry-After"},
	{name: "429 with Retry-After", method: "POST", path: "/v1/jobs/job_abc123/start", header: bearer,
		handler: reply(429, merge(rateLimitHeaders, map[string]string{"Retry-After": "3"}), errorBody("rate_limited"))},
	{name: "text error body", method: "GET", path: "/v1/formats/png",
		handler: reply(404, map[string]string{"Content-Type": "text/plain"}, "not found"), wantErr: "Content-Type"},

	// Error bodies.
	{name: "not found", method: "GET", path: "/v1/formats/nope", handler: reply(404, nil, errorBody("not_found"))},
	{name: "code of another status", method: "GET", path: "/v1/formats/nope",
		handler: reply(404, nil, errorBody("rate_limited")), wantErr: "doesn't match"},
	{name: "unknown code", method: "GET", path: "/v1/formats/nope",
		handler: reply(404, nil, errorBody("gone")), wantErr: "doesn't match"},
	{name: "error with extra field", method: "GET", path: "/v1/formats/nope",
		handler: reply(404, nil, map[string]any{"error": map[string]any{"code": "not_found", "message": "x", "hint": "y"}}), wantErr: "hint"},
	{name: "limit reached on start", method: "POST", path: "/v1/jobs/job_abc123/start", header: bearer,
		handler: reply(403, rateLimitHeaders, errorBody("limit_reached"))},
	{name: "limit reached on cancel", method: "POST", path: "/v1/jobs/job_abc123/cancel", header: bearer,
		handler: reply(403, rateLimitHeaders, errorBody("limit_reached")), wantErr: "doesn't match"},

	// Requests the document does not allow must be rejected.
	{name: "no key, 401", method: "GET", path: "/v1/jobs/job_abc123",
		handler: reply(401, rateLimitHeaders, errorBody("unauthorized"))},
	{name: "no key, 200", method: "GET", path: "/v1/jobs/job_abc123",
		handler: reply(200, rateLimitHeaders, job()), wantErr: "instead of rejecting it"},
	{name: "wait out of range, 400", method: "GET", path: "/v1/jobs/job_abc123?wait=61", header: bearer,
		handler: reply(400, rateLimitHeaders, errorBody("invalid_request"))},
	{name: "wait out of range, 200", method: "GET", path: "/v1/jobs/job_abc123?wait=61", header: bearer,
		handler: reply(200, rateLimitHeaders, job()), wantErr: "instead of rejecting it"},
	{name: "input_bytes 0, 400", method: "POST", path: "/v1/jobs", header: jsonBearer,
		body:    `{"input_format":"png","target_format":"webp","input_bytes":0}`,
		handler: reply(400, rateLimitHeaders, errorBody("invalid_request"))},
	{name: "too large, 400", method: "POST", path: "/v1/jobs", header: jsonBearer,
		body:    `{"input_format":"png","target_format":"webp","input_bytes":2000000001}`,
		handler: reply(400, rateLimitHeaders, errorBody("file_too_large"))},
	{name: "body on start", method: "POST", path: "/v1/jobs/job_abc123/start", header: jsonBearer, body: `{}`,
		handler: reply(200, rateLimitHeaders, with(job(), "status", "queued")), wantErr: "instead of rejecting it"},

	// Operation-specific narrowing.
	{name: "create", method: "POST", path: "/v1/jobs", header: merge(jsonBearer, map[string]string{"Idempotency-Key": "k1"}),
		body: `{"input_format":"png","target_format":"webp","input_bytes":48213}`,
		handler: reply(200, rateLimitHeaders, map[string]any{
			"job": createdJob(), "upload_url": "http://127.0.0.1:8081/uploads/job_abc123?expires=1&size=48213&sig=ab", "upload_expires_in": 900})},
	// A new job is created, or queued when it fetches its input (source_url); never further.
	{name: "create returning a running job", method: "POST", path: "/v1/jobs", header: jsonBearer,
		body: `{"input_format":"png","target_format":"webp","input_bytes":48213}`,
		handler: reply(200, rateLimitHeaders, map[string]any{
			"job": with(createdJob(), "status", "running"), "upload_url": "http://h/u", "upload_expires_in": 900}), wantErr: "doesn't match"},
	{name: "create with a wrapped job missing", method: "POST", path: "/v1/jobs", header: jsonBearer,
		body:    `{"input_format":"png","target_format":"webp","input_bytes":48213}`,
		handler: reply(200, rateLimitHeaders, createdJob()), wantErr: "doesn't match"},
	{name: "cancel", method: "POST", path: "/v1/jobs/job_abc123/cancel", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "status", "cancelled"))},
	{name: "cancel leaving the job running", method: "POST", path: "/v1/jobs/job_abc123/cancel", header: bearer,
		handler: reply(200, rateLimitHeaders, with(job(), "status", "running")), wantErr: "doesn't match"},
	{name: "list", method: "GET", path: "/v1/jobs?limit=2&status=queued&starting_after=job_x", header: bearer,
		handler: reply(200, rateLimitHeaders, map[string]any{"data": []any{job(), createdJob()}, "has_more": true})},
	{name: "ready", method: "GET", path: "/readyz", handler: reply(200, nil, map[string]any{"status": "ready", "reasons": []string{}})},
	{name: "not ready", method: "GET", path: "/readyz",
		handler: reply(503, nil, map[string]any{"status": "not_ready", "reasons": []string{"draining"}})},
	{name: "ready with reasons missing", method: "GET", path: "/readyz",
		handler: reply(200, nil, map[string]any{"status": "ready"}), wantErr: "reasons"},
	{name: "200 not ready", method: "GET", path: "/readyz",
		handler: reply(200, nil, map[string]any{"status": "not_ready", "reasons": []string{"x"}}), wantErr: "doesn't match"},

	// Admin: schemas without 3.1-only keywords take kin-openapi's other validator.
	{name: "keys", method: "GET", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, map[string]any{"data": []any{apiKey(), with(apiKey(), "revoked_at", "2026-11-02T11:00:00Z")}, "has_more": false})},
	{name: "key revoked_at not a date", method: "GET", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, map[string]any{"data": []any{with(apiKey(), "revoked_at", "soon")}, "has_more": false}), wantErr: "doesn't match"},
	{name: "key revoked_at a number", method: "GET", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, map[string]any{"data": []any{with(apiKey(), "revoked_at", 5)}, "has_more": false}), wantErr: "doesn't match"},
	{name: "key missing revoked_at", method: "GET", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, map[string]any{"data": []any{without(apiKey(), "revoked_at")}, "has_more": false}), wantErr: "revoked_at"},
	{name: "revoke", method: "DELETE", path: "/v1/admin/keys/key_1", header: bearer,
		handler: reply(200, nil, with(apiKey(), "revoked_at", "2026-11-02T11:00:00Z"))},
	{name: "revoke leaving revoked_at null", method: "DELETE", path: "/v1/admin/keys/key_1", header: bearer,
		handler: reply(200, nil, apiKey()), wantErr: "doesn't match"},
	{name: "new key", method: "POST", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, with(apiKey(), "key", "cs_live_"+strings.Repeat("a1B", 12)+"xy"))},
	{name: "new key without secret", method: "POST", path: "/v1/admin/accounts/acct_1/keys", header: bearer,
		handler: reply(200, nil, apiKey()), wantErr: "key"},
	{name: "account", method: "GET", path: "/v1/admin/accounts/acct_1", header: bearer, handler: reply(200, nil, account())},
	{name: "account with bad month", method: "GET", path: "/v1/admin/accounts/acct_1", header: bearer,
		handler: reply(200, nil, with(account(), "monthly_spend", []any{map[string]any{"month": "November", "spent_cents": 1}})), wantErr: "doesn't match"},
	{name: "account with max_running 0", method: "GET", path: "/v1/admin/accounts/acct_1", header: bearer,
		handler: reply(200, nil, with(account(), "max_running", 0)), wantErr: "doesn't match"},
	{name: "patch account max_queued 0", method: "PATCH", path: "/v1/admin/accounts/acct_1", header: jsonBearer, body: `{"max_queued":0}`,
		handler: reply(200, nil, account()), wantErr: "instead of rejecting it"},
	{name: "create account without cap", method: "POST", path: "/v1/admin/accounts", header: jsonBearer, body: `{"name":"a"}`,
		handler: reply(200, nil, account()), wantErr: "instead of rejecting it"},
	{name: "error without message", method: "GET", path: "/v1/admin/accounts", header: bearer,
		handler: reply(403, nil, map[string]any{"error": map[string]any{"code": "unauthorized"}}), wantErr: "message"},
	{name: "formats", method: "GET", path: "/v1/formats",
		handler: reply(200, nil, []any{map[string]any{"id": "png", "name": "PNG", "category": "image", "extensions": []string{"png"}, "mime": "image/png"}})},
	{name: "format with bogus category", method: "GET", path: "/v1/formats",
		handler: reply(200, nil, []any{map[string]any{"id": "png", "name": "PNG", "category": "picture", "extensions": []string{"png"}, "mime": "image/png"}}),
		wantErr: "picture"},

	// Routes the document does not list.
	{name: "unknown path, 404", method: "GET", path: "/v1/nope", handler: reply(404, nil, errorBody("not_found"))},
	{name: "unknown path, 200", method: "GET", path: "/v1/nope", handler: reply(200, nil, map[string]any{}), wantErr: "no path"},
	{name: "unlisted method, 405", method: "DELETE", path: "/v1/jobs/job_abc123",
		handler: reply(405, map[string]string{"Allow": "GET"}, errorBody("method_not_allowed"))},
	{name: "unlisted method, no Allow", method: "DELETE", path: "/v1/jobs/job_abc123",
		handler: reply(405, nil, errorBody("method_not_allowed")), wantErr: "Allow"},
	{name: "unlisted method, 200", method: "DELETE", path: "/v1/jobs/job_abc123",
		handler: reply(200, nil, job()), wantErr: "not a documented operation"},

	// Object storage.
	{name: "upload", method: "PUT", path: "/uploads/job_abc123?expires=1&size=3&sig=ab", body: "abc",
		handler: reply(200, nil, map[string]any{"bytes": 3, "sha256": strings.Repeat("0", 64)})},
	{name: "upload sealed", method: "PUT", path: "/uploads/job_abc123?expires=1&size=3&sig=ab", body: "abc",
		handler: reply(409, nil, errorBody("upload_sealed"))},
	{name: "upload without sig", method: "PUT", path: "/uploads/job_abc123?expires=1&size=3", body: "abc",
		handler: reply(403, nil, errorBody("invalid_signature"))},
	{name: "upload error with an API-only code", method: "PUT", path: "/uploads/job_abc123?expires=1&size=3&sig=ab", body: "abc",
		handler: reply(403, nil, errorBody("limit_reached")), wantErr: "doesn't match"},
	{name: "upload, unlisted method", method: "POST", path: "/uploads/job_abc123?expires=1&size=3&sig=ab",
		handler: reply(405, map[string]string{"Allow": "PUT"}, errorBody("method_not_allowed"))},
	{name: "download", method: "GET", path: "/outputs/job_abc123?expires=1&size=4&sig=ab",
		handler: reply(200, downloadHeaders, "RIFF")},
	{name: "download range", method: "GET", path: "/outputs/job_abc123?expires=1&size=4&sig=ab", header: map[string]string{"Range": "bytes=0-1"},
		handler: reply(206, merge(downloadHeaders, map[string]string{"Content-Range": "bytes 0-1/4"}), "RI")},
	{name: "download without ETag", method: "GET", path: "/outputs/job_abc123?expires=1&size=4&sig=ab",
		handler: reply(200, merge(downloadHeaders, map[string]string{"ETag": ""}), "RIFF"), wantErr: "ETag"},
	{name: "head", method: "HEAD", path: "/outputs/job_abc123?expires=1&size=4&sig=ab", handler: reply(200, downloadHeaders, nil)},
	{name: "head without Content-Disposition", method: "HEAD", path: "/outputs/job_abc123?expires=1&size=4&sig=ab",
		handler: reply(200, merge(downloadHeaders, map[string]string{"Content-Disposition": ""}), nil), wantErr: "Content-Disposition"},
	{name: "not modified", method: "GET", path: "/outputs/job_abc123?expires=1&size=4&sig=ab", header: map[string]string{"If-None-Match": `"abc"`},
		handler: reply(304, map[string]string{"ETag": `"abc"`}, nil)},
	{name: "download expired", method: "GET", path: "/outputs/job_abc123?expires=1&size=4&sig=ab",
		handler: reply(403, nil, errorBody("url_expired"))},
}

func newRequest(t *testing.T, base string, ex exchange) *http.Request {
	t.Helper()
	var body io.Reader
	if ex.body != "" {
		body = strings.NewReader(ex.body)
	}
	req, err := http.NewRequest(ex.method, base+ex.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range ex.header {
		req.Header.Set(k, v)
	}
	return req
}

func TestValidator_Check(t *testing.T) {
	v := openapitest.New(t, loadDocument(t))
	for _, ex := range exchanges {
		t.Run(ex.name, func(t *testing.T) {
			srv := httptest.NewServer(ex.handler)
			defer srv.Close()
			req := newRequest(t, srv.URL, ex)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			respBody, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			err = v.Check(req, []byte(ex.body), resp, respBody)
			if err != nil {
				t.Logf("Check: %v", err)
			}
			switch {
			case ex.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case ex.wantErr != "" && err == nil:
				t.Errorf("Check accepted it, want an error about %q", ex.wantErr)
			case ex.wantErr != "" && !strings.Contains(err.Error(), ex.wantErr):
				t.Errorf("Check: %v, want an error about %q", err, ex.wantErr)
			}
		})
	}

	seen := v.Seen()
	for key, want := range map[string]int{
		"GET /v1/jobs/{id} 200":        17,
		"POST /v1/jobs 200":            3,
		"DELETE /v1/jobs/{id} 405":     2,
		"GET /v1/nope 404":             1,
		"HEAD /outputs/{id} 200":       2,
		"POST /uploads/{id} 405":       1,
		"GET /outputs/{id} 304":        1,
		"POST /v1/jobs/{id}/start 429": 2,
	} {
		if got := seen[key]; got != want {
			t.Errorf("Seen()[%q] = %d, want %d", key, got, want)
		}
	}
	ops := v.Operations()
	for _, key := range []string{"GET /v1/jobs/{id} 200", "POST /v1/jobs 409", "PUT /uploads/{id} 411", "HEAD /outputs/{id} 304"} {
		if !slices.Contains(ops, key) {
			t.Errorf("Operations() lacks %q", key)
		}
	}
	for _, key := range []string{"GET /v1/jobs/{id} 201", "DELETE /v1/jobs/{id} 405"} {
		if slices.Contains(ops, key) {
			t.Errorf("Operations() has %q", key)
		}
	}
}

func TestValidator_Client(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	var uploaded int
	mux := http.NewServeMux()
	mux.Handle("GET /v1/jobs/job_good", reply(200, rateLimitHeaders, job()))
	mux.Handle("GET /v1/jobs/job_bad", reply(200, rateLimitHeaders, with(job(), "status", "bogus")))
	mux.Handle("GET /outputs/job_big", reply(200, downloadHeaders, string(big)))
	mux.HandleFunc("PUT /uploads/job_big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		uploaded = int(n)
		reply(200, nil, map[string]any{"bytes": n, "sha256": strings.Repeat("0", 64)})(w, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	rec := &recorder{TB: t}
	v := openapitest.New(t, loadDocument(t))
	v2 := openapitest.New(rec, loadDocument(t))
	client := v2.Client(srv.Client())

	get := func(path string) []byte {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	req, _ := http.NewRequest("GET", srv.URL+"/v1/jobs/job_good", nil)
	req.Header.Set("Authorization", "Bearer cs_live_x")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got["id"] != "job_abc123" {
		t.Errorf("body after validation = %v, %v; want the job", got, err)
	}
	resp.Body.Close()
	if r := rec.reports(); len(r) != 0 {
		t.Fatalf("a conforming exchange was reported: %q", r)
	}

	if b := get("/outputs/job_big?expires=1&size=3145728&sig=ab"); !bytes.Equal(b, big) {
		t.Errorf("large download: got %d bytes, want %d", len(b), len(big))
	}
	req, _ = http.NewRequest("PUT", srv.URL+"/uploads/job_big?expires=1&size=3145728&sig=ab", bytes.NewReader(big))
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if uploaded != len(big) {
		t.Errorf("large upload: server got %d bytes, want %d", uploaded, len(big))
	}
	if r := rec.reports(); len(r) != 0 {
		t.Fatalf("large exchanges were reported: %q", r)
	}

	req, _ = http.NewRequest("GET", srv.URL+"/v1/jobs/job_bad", nil)
	req.Header.Set("Authorization", "Bearer cs_live_x")
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := rec.reports()
	if len(r) != 1 {
		t.Fatalf("reports = %q, want one", r)
	}
	for _, want := range []string{"GET", "/v1/jobs/job_bad", "200", "bogus"} {
		if !strings.Contains(r[0], want) {
			t.Errorf("report %q does not mention %q", r[0], want)
		}
	}
	if got := v2.Seen()["GET /v1/jobs/{id} 200"]; got != 2 {
		t.Errorf(`Seen()["GET /v1/jobs/{id} 200"] = %d, want 2`, got)
	}
	if len(v.Seen()) != 0 {
		t.Errorf("validators share state: %v", v.Seen())
	}
}

// generatorProblems lists what in an OpenAPI document makes client generators lose types
// (docs/openapi.md): a narrowing written beside allOf instead of in it, an allOf overlay or a
// property it narrows without a type, a null overlay (ogen refuses to merge null with string),
// and null inside an enum (oapi-codegen makes a "<nil>" constant of it).
func generatorProblems(doc any) []string {
	var out []string
	var overlay func(s map[string]any, at string)
	overlay = func(s map[string]any, at string) {
		if _, ok := s["type"]; !ok {
			out = append(out, at+": overlay without a type")
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			p, _ := props[name].(map[string]any)
			pat := at + "/properties/" + name
			_, typed := p["type"]
			_, ref := p["$ref"]
			_, anyOf := p["anyOf"]
			_, oneOf := p["oneOf"]
			switch {
			case !typed && !ref && !anyOf && !oneOf:
				out = append(out, pat+": narrowed property without a type")
			case p["type"] == "null":
				out = append(out, pat+": null overlay")
			}
			if _, ok := p["properties"]; ok {
				overlay(p, pat)
			}
		}
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if all, ok := v["allOf"].([]any); ok {
				if _, ok := v["properties"]; ok {
					out = append(out, at+": properties beside allOf")
				}
				for i, m := range all {
					if m, ok := m.(map[string]any); ok && m["$ref"] == nil {
						overlay(m, fmt.Sprintf("%s/allOf/%d", at, i))
					}
				}
			}
			if enum, ok := v["enum"].([]any); ok && slices.Contains(enum, nil) {
				out = append(out, at+": null in enum")
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], at+"/"+k)
			}
		case []any:
			for i, e := range v {
				walk(e, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")
	return out
}

// TestDocument_GeneratorFriendly holds the document to the rules internal/testing/gentest found by
// generating clients (issue 22), so that they hold without the generators at hand.
func TestDocument_GeneratorFriendly(t *testing.T) {
	var doc any
	if err := json.Unmarshal(loadDocument(t), &doc); err != nil {
		t.Fatal(err)
	}
	if got := generatorProblems(doc); len(got) > 0 {
		t.Errorf("openapi.json:\n%s", strings.Join(got, "\n"))
	}

	// Each rule fires on the shape issue 22 found.
	for _, tc := range []struct{ schema, want string }{
		{`{"allOf":[{"$ref":"#/E"}],"properties":{"error":{"type":"object"}}}`, "#/s: properties beside allOf"},
		{`{"allOf":[{"$ref":"#/E"},{"properties":{"status":{"type":"string"}}}]}`, "#/s/allOf/1: overlay without a type"},
		{`{"allOf":[{"$ref":"#/E"},{"type":"object","properties":{"status":{"enum":["a"]}}}]}`, "#/s/allOf/1/properties/status: narrowed property without a type"},
		{`{"allOf":[{"$ref":"#/E"},{"type":"object","properties":{"error":{"type":"object","properties":{"code":{"enum":["a"]}}}}}]}`, "#/s/allOf/1/properties/error/properties/code: narrowed property without a type"},
		{`{"allOf":[{"$ref":"#/E"},{"type":"object","properties":{"revoked_at":{"type":"null"}}}]}`, "#/s/allOf/1/properties/revoked_at: null overlay"},
		{`{"type":["string","null"],"enum":["a",null]}`, "#/s: null in enum"},
	} {
		var s any
		if err := json.Unmarshal([]byte(`{"s":`+tc.schema+`}`), &s); err != nil {
			t.Fatal(err)
		}
		if got := generatorProblems(s); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s: problems %q, want [%q]", tc.schema, got, tc.want)
		}
	}
}
