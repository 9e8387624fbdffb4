package httpapi_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
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

// TestWeb_HeadAndIcon: HEAD / answers as GET without a body (it was 405), and the page has an
// icon: it links web/icon.svg, and /favicon.ico, which browsers and tools ask for on their
// own, is an ICO (it was a 404 on every load).
func TestWeb_HeadAndIcon(t *testing.T) {
	e := testenv.Start(t)
	for _, path := range []string{"/", "/web/app.js", "/web/icon.svg", "/favicon.ico"} {
		get := e.Do("GET", path, "", nil)
		must(t, get, 200, "")
		head := e.Do("HEAD", path, "", nil)
		must(t, head, 200, "")
		if len(head.Body) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || head.Header.Get("ETag") != get.Header.Get("ETag") ||
			head.Header.Get("Content-Length") != strconv.Itoa(len(get.Body)) {
			t.Errorf("HEAD %s: %d body bytes, Content-Type %q, ETag %q, Content-Length %q; GET: %q, %q, %d bytes", path, len(head.Body),
				head.Header.Get("Content-Type"), head.Header.Get("ETag"), head.Header.Get("Content-Length"), get.Header.Get("Content-Type"), get.Header.Get("ETag"), len(get.Body))
		}
	}
	icon := e.Do("GET", "/favicon.ico", "", nil)
	if icon.Header.Get("Content-Type") != "image/x-icon" || !bytes.HasPrefix(icon.Body, []byte{0, 0, 1, 0}) {
		t.Errorf("/favicon.ico: Content-Type %q, starts % x", icon.Header.Get("Content-Type"), icon.Body[:min(4, len(icon.Body))])
	}
	if svg := e.Do("GET", "/web/icon.svg", "", nil); svg.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(svg.Body, []byte("<svg")) {
		t.Errorf("/web/icon.svg: Content-Type %q", svg.Header.Get("Content-Type"))
	}
	if page := string(e.Do("GET", "/", "", nil).Body); !strings.Contains(page, `<link rel="icon" href="web/icon.svg" type="image/svg+xml">`) {
		t.Error("the page links no icon")
	}
}

// TestWeb_PageNamesItsObjectStorage: the page says which object storage the server uses, so
// that a failed upload's hint names the right fix: --cors-origins for convsvc's own blob
// listener, the bucket's CORS rule on S3 (where --cors-origins does nothing).
func TestWeb_PageNamesItsObjectStorage(t *testing.T) {
	local := testenv.Start(t, func(c *service.Config) { c.ObjectStorage, c.S3 = "", service.S3Config{} })
	s3 := testenv.Start(t, testenv.S3(t))
	pages := map[string]testenv.Response{"local": local.Do("GET", "/", "", nil), "s3": s3.Do("GET", "/", "", nil)}
	for kind, r := range pages {
		must(t, r, 200, "")
		if want := `<body data-object-storage="` + kind + `">`; !strings.Contains(string(r.Body), want) {
			t.Errorf("the %s server's page lacks %s", kind, want)
		}
	}
	if pages["local"].Header.Get("ETag") == pages["s3"].Header.Get("ETag") {
		t.Error("the two pages share an ETag")
	}
	if r := s3.Do("GET", "/", "", nil, "If-None-Match", pages["s3"].Header.Get("ETag")); r.Status != http.StatusNotModified {
		t.Errorf("the S3 server's page revalidated with its ETag: %d", r.Status)
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

	// --listen on every address without --public-url: http://0.0.0.0:PORT, which no browser
	// sends as its Origin, is not the page's allowed origin (it was); the loopback names on the
	// API's port are.
	e3 := testenv.Start(t, func(c *service.Config) { c.Listen = "0.0.0.0:0" })
	port := e3.URL[strings.LastIndex(e3.URL, ":")+1:]
	res = e3.Create(e3.Key, "png", "jpeg", 10)
	for _, origin := range []string{"http://127.0.0.1:" + port, "http://localhost:" + port, "http://[::1]:" + port} {
		must(t, preflight(e3, res.UploadURL, origin), 204, "")
	}
	must(t, preflight(e3, res.UploadURL, "http://0.0.0.0:"+port), 403, "cors_refused")
}
