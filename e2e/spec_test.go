package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

// specCall is one exchange with the binary: status, header and the decoded JSON body.
type specCall struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (c specCall) code() string {
	e, _ := c.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func specDo(t *testing.T, method, url, key string, body []byte) specCall {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	c := specCall{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &c.body) // an array or a non-JSON body leaves it nil
	return c
}

func specMust(t *testing.T, c specCall, status int, code string) {
	t.Helper()
	if c.status != status || c.code() != code {
		t.Fatalf("got %d %s, want %d %s", c.status, c.raw, status, code)
	}
}

// TestE2E_SpecContract walks SPEC.md's job flow against the real binary with its default
// flags, so the defaults the contract fixes (the 2 GB maximum, 120 requests a minute, the 900 s
// upload URL) are the binary's and not a test configuration's. The httpapi suite asserts each
// row in depth on every backend (docs/spec-tests.md); this is the shipped program's check.
func TestE2E_SpecContract(t *testing.T) {
	p := testproc.Serve(t, binary, filepath.Join(t.TempDir(), "data"))
	if !strings.HasPrefix(p.Key, "cs_live_") {
		t.Fatalf("issued key lacks the live-key prefix")
	}
	create := func(key string, in, out string, size string) specCall {
		return specDo(t, "POST", p.URL+"/v1/jobs", key,
			[]byte(`{"input_format":"`+in+`","target_format":"`+out+`","input_bytes":`+size+`}`))
	}

	// Authentication: no header is 401, a key that is not live is 403, both unauthorized.
	specMust(t, create("", "png", "jpeg", "10"), 401, "unauthorized")
	specMust(t, create(store.NewKeySecret(), "png", "jpeg", "10"), 403, "unauthorized")
	specMust(t, specDo(t, "POST", p.URL+"/v1/jobs/job_doesnotexist/start", "", nil), 401, "unauthorized")
	specMust(t, specDo(t, "POST", p.URL+"/v1/jobs/job_doesnotexist/start", store.NewKeySecret(), nil), 403, "unauthorized")

	// Create's 400s and the input_bytes bounds. From here on the key's writes count against
	// its 120 a minute (checked at the end).
	began := time.Now()
	specMust(t, create(p.Key, "png", "rar", "10"), 400, "unsupported_format")
	specMust(t, create(p.Key, "png", "png", "10"), 400, "unsupported_format")
	specMust(t, create(p.Key, "png", "jpeg", "2000000001"), 400, "file_too_large")
	specMust(t, create(p.Key, "png", "jpeg", "2000000000"), 200, "")

	// Formats: an array of exactly id, name, category, extensions, mime.
	r := specDo(t, "GET", p.URL+"/v1/formats", "", nil)
	var formats []map[string]any
	if err := json.Unmarshal(r.raw, &formats); r.status != 200 || err != nil || len(formats) == 0 {
		t.Fatalf("formats: %d %v %.200s", r.status, err, r.raw)
	}
	for _, f := range formats {
		if keys := slices.Sorted(maps.Keys(f)); !slices.Equal(keys, []string{"category", "extensions", "id", "mime", "name"}) {
			t.Fatalf("format fields %v", keys)
		}
	}

	// Reserve: the job wrapped in "job", created, attempt 0, error_code null, 900 s to upload.
	data := testenv.Sample(t, "images/sample.png")
	size := strconv.Itoa(len(data))
	r = create(p.Key, "png", "jpeg", size)
	specMust(t, r, 200, "")
	if got := r.header.Get("RateLimit-Limit"); got != "120" {
		t.Fatalf("RateLimit-Limit %q, want 120 (SPEC: 120 requests per minute per key)", got)
	}
	job, _ := r.body["job"].(map[string]any)
	id, _ := job["id"].(string)
	if !strings.HasPrefix(id, "job_") || job["status"] != "created" || job["attempt"] != 0.0 ||
		job["input_bytes"] != float64(len(data)) || job["input_format"] != "png" || job["target_format"] != "jpeg" {
		t.Fatalf("reservation %s", r.raw)
	}
	if v, ok := job["error_code"]; !ok || v != nil {
		t.Fatalf("error_code must be null: %s", r.raw)
	}
	if _, err := time.Parse(time.RFC3339, job["expires_at"].(string)); err != nil {
		t.Fatalf("expires_at: %v", err)
	}
	uploadURL, _ := r.body["upload_url"].(string)
	if r.body["upload_expires_in"] != 900.0 || !strings.HasPrefix(uploadURL, "http") {
		t.Fatalf("reservation %s", r.raw)
	}

	// Start with nothing uploaded: 502 storage_unavailable, the job stays created.
	start := p.URL + "/v1/jobs/" + id + "/start"
	specMust(t, specDo(t, "POST", start, p.Key, nil), 502, "storage_unavailable")
	// The signature binds Content-Length: another size is refused at upload (the binary's
	// default object storage is its own blob store, which says size_mismatch).
	specMust(t, specDo(t, "PUT", uploadURL, "", data[:len(data)-1]), 400, "size_mismatch")
	if r := specDo(t, "PUT", uploadURL, "", data); r.status/100 != 2 {
		t.Fatalf("upload: %d %s", r.status, r.raw)
	}
	if r := specDo(t, "GET", p.URL+"/v1/jobs/"+id, p.Key, nil); r.body["status"] != "created" {
		t.Fatalf("after upload: %s, want created (uploaded is not used)", r.raw)
	}

	// Start: the Job itself, not wrapped, then running and succeeded with attempt 1.
	r = specDo(t, "POST", start, p.Key, nil)
	specMust(t, r, 200, "")
	if _, wrapped := r.body["job"]; wrapped || r.body["id"] != id ||
		!slices.Contains([]any{"queued", "running", "succeeded"}, r.body["status"]) {
		t.Fatalf("start: %s", r.raw)
	}
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for r = specDo(t, "GET", p.URL+"/v1/jobs/"+id+"?wait=30", p.Key, nil); r.body["status"] != "succeeded" && r.body["status"] != "failed"; {
		if time.Now().After(deadline) {
			t.Fatalf("job never finished: %s", r.raw)
		}
		r = specDo(t, "GET", p.URL+"/v1/jobs/"+id+"?wait=30", p.Key, nil)
	}
	if r.body["status"] != "succeeded" || r.body["attempt"] != 1.0 || r.body["error_code"] != nil {
		t.Fatalf("finished job: %s", r.raw)
	}
	// A repeated start returns the job unchanged.
	r = specDo(t, "POST", start, p.Key, nil)
	specMust(t, r, 200, "")
	if r.body["status"] != "succeeded" || r.body["attempt"] != 1.0 {
		t.Fatalf("repeated start: %s", r.raw)
	}
	r = specDo(t, "POST", p.URL+"/v1/jobs/job_doesnotexist/start", p.Key, nil)
	specMust(t, r, 404, "not_found")

	// The binary's rate limit: what is left of the key's 120 writes a minute passes (starts of
	// a job that does not exist answer 404), then 429 rate_limited. A window older than the
	// test's requests lets more pass, never fewer.
	left, err := strconv.Atoi(r.header.Get("RateLimit-Remaining"))
	if err != nil || left < 0 || left > 120 || (left != 120-9 && time.Since(began) < 50*time.Second) {
		t.Fatalf("RateLimit-Remaining %q after the key's 9 writes", r.header.Get("RateLimit-Remaining"))
	}
	passed := 0
	for ; passed <= 120; passed++ {
		if r = specDo(t, "POST", p.URL+"/v1/jobs/job_doesnotexist/start", p.Key, nil); r.status != 404 {
			break
		}
	}
	specMust(t, r, 429, "rate_limited")
	if passed < left || (passed != left && time.Since(began) < 50*time.Second) {
		t.Fatalf("%d writes passed before the 429, want the %d RateLimit-Remaining promised", passed, left)
	}
}
