package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestWeb_PageAndFiles: GET / is the embedded page, with its script and style as files of
// their own under a strict CSP that lets the page reach object storage and nothing else.
func TestWeb_PageAndFiles(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the CSP names the local blob listener")
	e := testenv.Start(t)
	wantCSP := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' " +
		e.Main.BlobURL() + "; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
	for _, c := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="web/app.js" defer></script>`},
		{"/web/app.js", "text/javascript; charset=utf-8", "changed_from="},
		{"/web/app.css", "text/css; charset=utf-8", ".visually-hidden"},
	} {
		r := e.Do("GET", c.path, "", nil)
		must(t, r, 200, "")
		h := r.Header
		if h.Get("Content-Type") != c.ctype || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != wantCSP {
			t.Errorf("%s: Content-Type %q, nosniff %q, CSP %q", c.path, h.Get("Content-Type"), h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
		if h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: Referrer-Policy %q, X-Frame-Options %q", c.path, h.Get("Referrer-Policy"), h.Get("X-Frame-Options"))
		}
		if !strings.Contains(string(r.Body), c.contains) {
			t.Errorf("%s lacks %q", c.path, c.contains)
		}
		// Revalidation by ETag.
		etag := h.Get("ETag")
		if r2 := e.Do("GET", c.path, "", nil, "If-None-Match", etag); etag == "" || r2.Status != http.StatusNotModified {
			t.Errorf("%s: If-None-Match %q answered %d", c.path, etag, r2.Status)
		}
	}
	must(t, e.Do("GET", "/web/other.js", "", nil), 404, "not_found")

	// The CSP forbids inline code, so the page must have none: no <style>, no style=, no
	// inline <script>, no on* handler attributes, nothing from another origin.
	page := string(e.Do("GET", "/", "", nil).Body)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<style`), regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`<script(?:\s+[^>]*)?>[^<]`),
		regexp.MustCompile(`<script>`), regexp.MustCompile(`\son[a-z]+=`), regexp.MustCompile(`(?:src|href)="(?:https?:)?//`),
	} {
		if bad.MatchString(page) {
			t.Errorf("the page has %s", bad)
		}
	}
	// Every form control has a label, and state changes are announced.
	for _, want := range []string{`<label for="key">`, `<label for="files"`, `aria-live="polite"`, `role="alert"`, `name="viewport"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, `name="key"`) {
		t.Error("the key field has a name, so a form submission could put it in a URL")
	}
}

// TestWeb_StorageCORS: by default object storage lets the API's own page (its origin) upload,
// and no other; --cors-origins replaces that list.
func TestWeb_StorageCORS(t *testing.T) {
	testenv.LocalBlobsOnly(t, "--cors-origins is the local blob store's; S3 uses the bucket's CORS rule")
	preflight := func(e *testenv.Env, url, origin string) testenv.Response {
		return e.Do("OPTIONS", url, "", nil, "Origin", origin, "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "content-type")
	}
	e := testenv.Start(t)
	res := e.Create(e.Key, "png", "jpeg", 10)
	r := preflight(e, res.UploadURL, e.URL)
	must(t, r, 204, "")
	if r.Header.Get("Access-Control-Allow-Origin") != e.URL {
		t.Errorf("API origin: Allow-Origin %q", r.Header.Get("Access-Control-Allow-Origin"))
	}
	r = preflight(e, res.UploadURL, "https://elsewhere.example")
	must(t, r, 403, "cors_refused")
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("a refused origin got Allow-Origin")
	}

	e2 := testenv.Start(t, func(c *service.Config) { c.CORSOrigins = []string{"https://app.example"} })
	res = e2.Create(e2.Key, "png", "jpeg", 10)
	must(t, preflight(e2, res.UploadURL, "https://app.example"), 204, "")
	must(t, preflight(e2, res.UploadURL, e2.URL), 403, "cors_refused")
	// An allowed page's upload: the answer carries Allow-Origin.
	r = e2.Do("PUT", res.UploadURL, "", []byte("0123456789"), "Origin", "https://app.example")
	must(t, r, 200, "")
	if r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("PUT Allow-Origin %q", r.Header.Get("Access-Control-Allow-Origin"))
	}
}
