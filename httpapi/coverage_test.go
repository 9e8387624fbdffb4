package httpapi_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// These tests produce the documented statuses of the admin and object-storage endpoints that
// the behaviour tests do not, so the suite holds every one of them against the document.

func TestAPI_AdminEndpointsAuthAndErrors(t *testing.T) {
	e := testenv.Start(t)
	acct, _ := e.NewAccount(10)
	endpoints := []struct{ method, path string }{
		{"GET", "/v1/admin/accounts"},
		{"POST", "/v1/admin/accounts"},
		{"GET", "/v1/admin/accounts/" + acct},
		{"PATCH", "/v1/admin/accounts/" + acct},
		{"GET", "/v1/admin/accounts/" + acct + "/keys"},
		{"POST", "/v1/admin/accounts/" + acct + "/keys"},
		{"DELETE", "/v1/admin/keys/key_nope"},
		{"GET", "/v1/admin/backup"},
	}
	for _, ep := range endpoints {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			must(t, e.Do(ep.method, ep.path, "", nil), 401, "unauthorized")
			must(t, e.Do(ep.method, ep.path, e.Key, nil), 403, "unauthorized")
		})
	}
	big := `{"name":"` + strings.Repeat("a", 70000) + `"}`
	must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, big), 413, "request_too_large")
	must(t, e.Do("POST", "/v1/admin/accounts", e.AdminToken, big), 413, "request_too_large")
	must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, `{"name":"x"}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
	must(t, e.Do("POST", "/v1/admin/accounts", e.AdminToken, `{"name":"x","spend_cap_cents":1}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
	must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, `{"spend_cap_cents":-1}`), 400, "invalid_request")
	must(t, e.Do("PATCH", "/v1/admin/accounts/acct_nope", e.AdminToken, `{"name":"x"}`), 404, "not_found")
	must(t, e.Do("GET", "/v1/admin/accounts/acct_nope/keys", e.AdminToken, nil), 404, "not_found")

	// Wrong admin tokens spend the address's admin budget; then even the right one waits.
	throttleAdmin(t, e)
	for _, ep := range endpoints {
		must(t, e.Do(ep.method, ep.path, e.AdminToken, nil), 429, "rate_limited")
	}
}

func TestAPI_ObjectStorageStatuses(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the blob store's own answers (S3 answers in XML; docs/scaling.md lists them)")
	e := testenv.Start(t)
	png := testenv.Sample(t, "images/sample.png")
	job := e.Convert(e.Key, "png", "jpeg", png)
	url := job.Output.URL

	must(t, e.Do("HEAD", url, "", nil), 200, "")
	r := e.Do("GET", url, "", nil, "Range", "bytes=0-9")
	must(t, r, 206, "")
	must(t, e.Do("HEAD", url, "", nil, "Range", "bytes=0-9"), 206, "")
	etag := r.Header.Get("ETag")
	must(t, e.Do("GET", url, "", nil, "If-None-Match", etag), 304, "")
	must(t, e.Do("HEAD", url, "", nil, "If-None-Match", etag), 304, "")
	must(t, e.Do("GET", url, "", nil, "Range", "bytes=999999999-"), 416, "range_not_satisfiable")
	must(t, e.Do("HEAD", url, "", nil, "Range", "bytes=999999999-"), 416, "")
	bad := strings.Replace(url, "sig=", "sig=0", 1)
	must(t, e.Do("HEAD", bad, "", nil), 403, "")

	// The output's file gone (a restore without the blobs): 404 at a valid URL.
	if err := os.Remove(filepath.Join(e.Cfg.DataDir, "blobs", "outputs", job.ID)); err != nil {
		t.Fatal(err)
	}
	must(t, e.Do("GET", url, "", nil), 404, "not_found")
	must(t, e.Do("HEAD", url, "", nil), 404, "")

	res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	// Chunked, without Content-Length: 411.
	req, _ := http.NewRequest("PUT", res.UploadURL, struct{ *bytes.Reader }{bytes.NewReader(png)})
	req.ContentLength = -1
	resp, err := e.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 411 {
		t.Fatalf("chunked upload: %d", resp.StatusCode)
	}
	must(t, e.Upload(strings.Replace(res.UploadURL, res.Job.ID, "job_x!y", 1), png), 404, "")

	// Object storage's disk failing: 503.
	tmp := filepath.Join(e.Cfg.DataDir, "blobs", "tmp")
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() { os.Remove(tmp); os.Mkdir(tmp, 0o700) }()
	must(t, e.Upload(res.UploadURL, png), 503, "storage_unavailable")
}
