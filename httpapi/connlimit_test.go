package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// other is the loopback address the test's connections come from, so the connections the
// set-up left in e.HTTP's pool (from 127.0.0.1) do not count against its cap.
var other = &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 30 * time.Second}

// holdConnection opens a keep-alive connection from other to the listener at base, makes a
// request on it and leaves it open and idle until the test ends.
func holdConnection(t *testing.T, base, path string) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		c, err := other.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		c.SetDeadline(time.Now().Add(60 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: convsvc\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("request on the held connection: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && !resp.Close {
			c.SetDeadline(time.Time{})
			t.Cleanup(func() { c.Close() })
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("%s %s answered %d on a fresh connection for 60 s", addr, path, resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAPI_TooManyConnections: with one connection per address and that one held, every
// operation of the API and of object storage is answered 503 too_many_connections with
// Retry-After, as openapi.json documents for each (every exchange goes through the validating
// client). service's connection tests hold the caps themselves; this one holds the document.
func TestAPI_TooManyConnections(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.MaxConnectionsPerAddress = 1 })
	acct, key := e.NewAccount(100)
	png := testenv.Sample(t, "images/sample.png")
	done := e.Convert(key, "png", "jpeg", png)
	res := e.Create(key, "png", "jpeg", int64(len(png)))
	e.HTTP = e.ValidatingClient(&http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{DialContext: other.DialContext}})

	holdConnection(t, e.URL, "/healthz")
	job := "/v1/jobs/" + res.Job.ID
	admin := "/v1/admin/accounts/" + acct
	for _, rq := range []struct {
		method, path, token string
		body                any
	}{
		{"GET", "/v1/formats", "", nil},
		{"GET", "/v1/formats/png", "", nil},
		{"POST", "/v1/jobs", key, `{"input_format":"png","target_format":"jpeg","input_bytes":10}`},
		{"GET", "/v1/jobs", key, nil},
		{"GET", job, key, nil},
		{"POST", job + "/start", key, nil},
		{"POST", job + "/cancel", key, nil},
		{"GET", job + "/events", key, nil},
		{"GET", "/v1/events", key, nil},
		{"GET", "/", "", nil},
		{"GET", "/web/app.js", "", nil},
		{"GET", "/healthz", "", nil},
		{"GET", "/readyz", "", nil},
		{"GET", "/metrics", "", nil},
		{"GET", "/v1/openapi.json", "", nil},
		{"POST", "/v1/admin/accounts", e.AdminToken, `{"name":"x","spend_cap_cents":1}`},
		{"GET", "/v1/admin/accounts", e.AdminToken, nil},
		{"GET", admin, e.AdminToken, nil},
		{"PATCH", admin, e.AdminToken, `{"name":"y"}`},
		{"POST", admin + "/keys", e.AdminToken, nil},
		{"GET", admin + "/keys", e.AdminToken, nil},
		{"DELETE", "/v1/admin/keys/key_x", e.AdminToken, nil},
		{"GET", "/v1/admin/backup", e.AdminToken, nil},
		{"POST", admin + "/webhooks", e.AdminToken, `{"url":"https://hooks.example.com/convsvc"}`},
		{"GET", admin + "/webhooks", e.AdminToken, nil},
		{"DELETE", admin + "/webhooks/whk_x", e.AdminToken, nil},
		{"POST", admin + "/webhooks/whk_x/enable", e.AdminToken, nil},
		{"POST", admin + "/webhook-secret", e.AdminToken, nil},
		{"GET", admin + "/webhook-deliveries", e.AdminToken, nil},
	} {
		r := e.Do(rq.method, rq.path, rq.token, rq.body)
		must(t, r, http.StatusServiceUnavailable, "too_many_connections")
		if r.Header.Get("Retry-After") != "1" || r.Header.Get("Request-Id") != "" {
			t.Errorf("%s %s: Retry-After %q, Request-Id %q; want 1 and none", rq.method, rq.path, r.Header.Get("Retry-After"), r.Header.Get("Request-Id"))
		}
	}

	if e.Cfg.ObjectStorage != "" {
		return // presigned URLs go to the S3 server, whose answers the document does not describe
	}
	holdConnection(t, e.Main.BlobURL(), "/outputs/"+done.ID+"?"+strings.SplitN(done.Output.URL, "?", 2)[1])
	preflight := []string{"Origin", e.URL, "Access-Control-Request-Method", "PUT"}
	for _, rq := range []struct {
		method, url string
		body        any
		headers     []string
	}{
		{"PUT", res.UploadURL, png, nil},
		{"OPTIONS", res.UploadURL, nil, preflight},
		{"GET", done.Output.URL, nil, nil},
		{"HEAD", done.Output.URL, nil, nil},
		{"OPTIONS", done.Output.URL, nil, []string{"Origin", e.URL, "Access-Control-Request-Method", "GET"}},
	} {
		r := e.Do(rq.method, rq.url, "", rq.body, rq.headers...)
		code := "too_many_connections"
		if rq.method == "HEAD" {
			code = ""
		}
		must(t, r, http.StatusServiceUnavailable, code)
		if r.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", rq.method, rq.url, r.Header.Get("Retry-After"))
		}
	}
}
