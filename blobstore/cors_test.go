package blobstore

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// newCORSEnv serves the store behind CORS with the given origins.
func newCORSEnv(t *testing.T, origins ...string) *testEnv {
	t.Helper()
	e := newTestEnv(t)
	e.srv.Config.Handler = e.st.CORS(e.st.Handler(), origins)
	return e
}

// preflight sends the OPTIONS request a browser sends before a cross-origin method.
func (e *testEnv) preflight(url, origin, method, headers string) *http.Response {
	e.t.Helper()
	hdr := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {method}}
	if headers != "" {
		hdr.Set("Access-Control-Request-Headers", headers)
	}
	return e.do("OPTIONS", url, nil, 0, hdr)
}

func TestCORS_PreflightAllowedOrigin(t *testing.T) {
	e := newCORSEnv(t, "https://app.example", "http://127.0.0.1:8080/")
	for _, origin := range []string{"https://app.example", "http://127.0.0.1:8080"} {
		resp := e.preflight(e.uploadURL("job_a", 5), origin, "PUT", "content-type")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: status %d, want 204", origin, resp.StatusCode)
		}
		h := resp.Header
		if got := h.Get("Access-Control-Allow-Origin"); got != origin {
			t.Errorf("Allow-Origin = %q, want %q", got, origin)
		}
		if got := h.Get("Access-Control-Allow-Methods"); got != "PUT, GET, HEAD" {
			t.Errorf("Allow-Methods = %q", got)
		}
		if got := h.Get("Access-Control-Allow-Headers"); !strings.HasPrefix(got, "Content-Type,") {
			t.Errorf("Allow-Headers = %q, want Content-Type first", got)
		}
		if got := h.Values("Vary"); !strings.Contains(strings.Join(got, ","), "Origin") {
			t.Errorf("Vary = %q, want Origin", got)
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("credentials allowed: the signed URL is the only authority")
		}
	}
	// GET and HEAD of download URLs too.
	for _, m := range []string{"GET", "HEAD"} {
		resp := e.preflight(e.downloadURL("job_a", 5), "https://app.example", m, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
			t.Errorf("preflight %s: %d %q", m, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

func TestCORS_PreflightRefused(t *testing.T) {
	e := newCORSEnv(t, "https://app.example")
	cases := []struct{ name, origin, method string }{
		{"other origin", "https://evil.example", "PUT"},
		{"same host other scheme", "http://app.example", "PUT"},
		{"origin with a path is no origin", "https://app.example/x", "PUT"},
		{"null origin", "null", "PUT"},
		{"method not served", "https://app.example", "DELETE"},
		{"POST", "https://app.example", "POST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.preflight(e.uploadURL("job_a", 5), c.origin, c.method, "content-type")
			if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("refused preflight carries CORS headers: %v", resp.Header)
			}
			wantError(t, resp, http.StatusForbidden, "cors_refused")
		})
	}
}

func TestCORS_ActualRequests(t *testing.T) {
	e := newCORSEnv(t, "https://app.example")
	// A PUT from the allowed origin is stored and its answer readable by the page.
	resp := e.do("PUT", e.uploadURL("job_a", 5), strings.NewReader("hello"), 5, http.Header{"Origin": {"https://app.example"}, "Content-Type": {"image/png"}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
		t.Errorf("PUT Allow-Origin = %q", got)
	}
	if n, err := e.seal("job_a"); err != nil || n != 5 {
		t.Fatalf("seal after a cross-origin PUT: %d %v", n, err)
	}

	// A download from the allowed origin exposes the filename; from another origin the file
	// is served (the URL is the capability) but without the header a browser needs to read it.
	e.mustWriteOutput("job_b", "result", OutputMeta{ContentType: "text/plain", Filename: "report.txt"})
	for _, c := range []struct{ origin, want string }{{"https://app.example", "https://app.example"}, {"https://evil.example", ""}, {"", ""}} {
		hdr := http.Header{}
		if c.origin != "" {
			hdr.Set("Origin", c.origin)
		}
		resp := e.do("GET", e.downloadURL("job_b", 6), nil, 0, hdr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "result" {
			t.Fatalf("GET from %q: %d %q", c.origin, resp.StatusCode, b)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != c.want {
			t.Errorf("GET from %q: Allow-Origin = %q, want %q", c.origin, got, c.want)
		}
		if exp := resp.Header.Get("Access-Control-Expose-Headers"); c.want != "" && !strings.Contains(exp, "Content-Disposition") {
			t.Errorf("Expose-Headers = %q, want Content-Disposition", exp)
		}
	}

	// OPTIONS without Access-Control-Request-Method is no preflight: the store refuses it.
	resp = e.do("OPTIONS", e.uploadURL("job_c", 5), nil, 0, http.Header{"Origin": {"https://app.example"}})
	wantError(t, resp, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestCORS_Wildcard(t *testing.T) {
	e := newCORSEnv(t, "*")
	resp := e.preflight(e.uploadURL("job_a", 5), "https://anyone.example", "PUT", "content-type")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://anyone.example" {
		t.Fatalf("wildcard preflight: %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	wantError(t, e.preflight(e.uploadURL("job_a", 5), "", "PUT", ""), http.StatusForbidden, "cors_refused")
}
