package blobstore

import (
	"net/http"
	"slices"
	"strings"
)

// CORS wraps the object-storage handler h so that web pages from origins may PUT to upload URLs
// and GET or HEAD download URLs straight from the browser (the service's own page among them).
// A preflight (OPTIONS with Access-Control-Request-Method) from a listed origin for PUT, GET or
// HEAD is answered 204 with the CORS headers; from any other origin, or for another method, 403
// cors_refused without them, so the browser refuses the request. Other requests are served by h as always;
// those from a listed origin get Access-Control-Allow-Origin, so the page can read the answer.
// "*" in origins allows every origin. The signature is what authorises a request; CORS only
// decides which pages may read the answers.
func (s *Store) CORS(h http.Handler, origins []string) http.Handler {
	allowed := make([]string, 0, len(origins))
	for _, o := range origins {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			allowed = append(allowed, o)
		}
	}
	all := slices.Contains(allowed, "*")
	allow := func(origin string) bool {
		return origin != "" && (all || slices.Contains(allowed, origin))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		hd := w.Header()
		hd.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Add("Vary", "Access-Control-Request-Method")
			hd.Add("Vary", "Access-Control-Request-Headers")
			hd.Set("X-Content-Type-Options", "nosniff")
			switch method := r.Header.Get("Access-Control-Request-Method"); {
			case method != http.MethodPut && method != http.MethodGet && method != http.MethodHead:
				s.writeError(w, r, clientErrorf(errCORSRefused, "Object storage takes PUT to upload URLs and GET or HEAD from download URLs, not %s.", method))
				return
			case !allow(origin):
				s.writeError(w, r, clientErrorf(errCORSRefused, "Pages from %s may not use object storage; the operator lists allowed origins with --cors-origins.", origin))
				return
			}
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Set("Access-Control-Allow-Methods", "PUT, GET, HEAD")
			// Content-Type: a browser sends the file's type with a PUT; the rest are what a
			// download may use to resume or revalidate.
			hd.Set("Access-Control-Allow-Headers", "Content-Type, Range, If-None-Match, If-Match, If-Modified-Since, If-Range")
			hd.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if allow(origin) {
			hd.Set("Access-Control-Allow-Origin", origin)
			hd.Set("Access-Control-Expose-Headers", "ETag, Content-Disposition, Content-Length, Content-Range")
		}
		h.ServeHTTP(w, r)
	})
}
