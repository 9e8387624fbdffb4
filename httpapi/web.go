package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/julienschmidt/httprouter"
)

// webFiles is the web page served at GET /: plain HTML, CSS and JavaScript, embedded so the
// binary needs nothing at run time.
//
//go:embed web/index.html web/app.js web/app.css
var webFiles embed.FS

// webAsset is one embedded file of the page with its headers.
type webAsset struct {
	body        []byte
	contentType string
	etag        string
}

// webAssets are the page's files by URL path.
var webAssets = func() map[string]webAsset {
	files := map[string][2]string{
		"/":            {"web/index.html", "text/html; charset=utf-8"},
		"/web/app.js":  {"web/app.js", "text/javascript; charset=utf-8"},
		"/web/app.css": {"web/app.css", "text/css; charset=utf-8"},
	}
	m := make(map[string]webAsset, len(files))
	for path, f := range files {
		body, err := webFiles.ReadFile(f[0])
		if err != nil {
			panic("httpapi: embedded web file missing: " + f[0])
		}
		sum := sha256.Sum256(body)
		m[path] = webAsset{body: body, contentType: f[1], etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	return m
}()

// pageCSP is the page's Content-Security-Policy: scripts, styles and requests only from this
// origin (plus object storage, for uploads and downloads), no inline code, no frames, no forms.
func pageCSP(storageOrigin string) string {
	connect := "'self'"
	if storageOrigin != "" {
		connect += " " + storageOrigin
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src " + connect +
		"; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
}

// originOf is the scheme://host[:port] of a URL, or "" when it has none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// handleWeb serves the page and its two files with a strict CSP and revalidation by ETag.
func (s *Server) handleWeb(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	a, ok := webAssets[r.URL.Path]
	if !ok {
		s.writeError(w, r, errorf(CodeNotFound, "no such file of the web page"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
