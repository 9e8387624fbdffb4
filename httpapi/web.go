package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/julienschmidt/httprouter"
)

// webFiles is the web page served at GET /: plain HTML, CSS and JavaScript, embedded so the
// binary needs nothing at run time, and its icon (icon.svg; favicon.ico is the same icon made
// with convsvc itself: convsvc convert icon.svg --to ico --width 32 --height 32).
//
//go:embed web/index.html web/app.js web/app.css web/icon.svg web/favicon.ico
var webFiles embed.FS

// webAsset is one embedded file of the page with its headers.
type webAsset struct {
	body        []byte
	contentType string
	etag        string
}

func newWebAsset(body []byte, contentType string) webAsset {
	sum := sha256.Sum256(body)
	return webAsset{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// webAssets are the page's files by URL path.
var webAssets = func() map[string]webAsset {
	files := map[string][2]string{
		"/":             {"web/index.html", "text/html; charset=utf-8"},
		"/web/app.js":   {"web/app.js", "text/javascript; charset=utf-8"},
		"/web/app.css":  {"web/app.css", "text/css; charset=utf-8"},
		"/web/icon.svg": {"web/icon.svg", "image/svg+xml"},
		"/favicon.ico":  {"web/favicon.ico", "image/x-icon"},
	}
	m := make(map[string]webAsset, len(files))
	for path, f := range files {
		body, err := webFiles.ReadFile(f[0])
		if err != nil {
			panic("httpapi: embedded web file missing: " + f[0])
		}
		m[path] = newWebAsset(body, f[1])
	}
	return m
}()

// Object storage kinds (Config.ObjectStorage), which the page's hints depend on.
const (
	ObjectStorageLocal = "local" // convsvc's own blob listener: CORS from --cors-origins
	ObjectStorageS3    = "s3"    // an S3 bucket: CORS from the bucket's CORS rule
)

// pageStorageAttr is index.html's placeholder for the kind of object storage, which the page
// reads to say where CORS is configured when an upload fails.
const pageStorageAttr = `data-object-storage="local"`

// webAssetsFor are webAssets with index.html naming the server's kind of object storage.
func webAssetsFor(kind string) map[string]webAsset {
	if kind == "" || kind == ObjectStorageLocal {
		return webAssets
	}
	m := maps.Clone(webAssets)
	page := m["/"]
	m["/"] = newWebAsset(bytes.Replace(page.body, []byte(pageStorageAttr), []byte(`data-object-storage="`+kind+`"`), 1), page.contentType)
	return m
}

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

// handleWeb serves the page, its files and its icon with a strict CSP and revalidation by
// ETag; HEAD answers as GET without the body.
func (s *Server) handleWeb(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	a, ok := s.web[r.URL.Path]
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
