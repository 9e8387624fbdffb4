package blobstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Object kinds a signed URL can address, with the URL path prefix of each.
const (
	uploadPrefix   = "/uploads/"
	downloadPrefix = "/outputs/"
)

// maxObjectSize bounds the signed size so that size+1 never overflows.
const maxObjectSize = 1 << 62

// UploadURL returns the signed URL that accepts the job's input file with PUT up to
// and including the instant expires, cut down to a whole second (the URL carries Unix
// seconds); the upload must carry Content-Length equal to size. A caller that must keep
// the URL open until an instant rounds it up first: httpapi passes the job's created_at
// + 900 s rounded up to the second, so the URL takes uploads for the whole 900 s.
func (s *Store) UploadURL(jobID string, size int64, expires time.Time) string {
	return s.signedURL("PUT", uploadPrefix+jobID, size, expires)
}

// DownloadURL returns the signed URL that serves the job's output with GET or
// HEAD up to and including expires, cut down to a whole second; size must be the output's size (see OutputInfo).
func (s *Store) DownloadURL(jobID string, size int64, expires time.Time) string {
	return s.signedURL("GET", downloadPrefix+jobID, size, expires)
}

func (s *Store) signedURL(method, path string, size int64, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	sz := strconv.FormatInt(size, 10)
	sig := s.sign(method, path, exp, sz)
	u := make([]byte, 0, len(s.publicURL)+len(path)+len(exp)+len(sz)+len("?expires=&size=&sig=")+2*len(sig))
	u = append(append(u, s.publicURL...), path...)
	u = append(append(u, "?expires="...), exp...)
	u = append(append(u, "&size="...), sz...)
	u = hex.AppendEncode(append(u, "&sig="...), sig)
	return string(u)
}

// sign is HMAC-SHA256 over "METHOD\nPATH\nEXPIRES\nSIZE", the decimal strings as they appear in the URL.
func (s *Store) sign(method, path, expires, size string) []byte {
	m := s.macs.Get().(hash.Hash)
	defer s.macs.Put(m)
	m.Reset()
	msg := make([]byte, 0, len(method)+len(path)+len(expires)+len(size)+3)
	msg = append(append(msg, method...), '\n')
	msg = append(append(msg, path...), '\n')
	msg = append(append(msg, expires...), '\n')
	m.Write(append(msg, size...))
	return m.Sum(make([]byte, 0, sha256.Size))
}

// signedRequest is what a verified URL grants: one method on one object, for size bytes.
type signedRequest struct {
	upload  bool // PUT /uploads/{id}; otherwise GET or HEAD /outputs/{id}
	id      string
	size    int64
	expires int64
}

// verifyURL parses and checks a request's method, decoded path and raw query
// against this Store's signature, in this order:
//
//   - path not /uploads/{id} or /outputs/{id} with a valid id: ErrNotFound (404)
//   - method not the one the path takes: errMethodNotAllowed (405)
//   - query not exactly one each of expires, size, sig (in any order), with
//     canonical non-negative decimal expires and size: errInvalidRequest (400)
//   - sig not 64 lowercase hex digits, or not the HMAC: errInvalidSignature (403)
//   - now after expires: errURLExpired (403), only once the signature holds,
//     so a tampered expiry is reported as a bad signature.
//
// Values are never unescaped, so exactly one spelling of each URL is accepted:
// the one UploadURL or DownloadURL produced.
func (s *Store) verifyURL(method, path, rawQuery string) (signedRequest, error) {
	var req signedRequest
	var signMethod, allow string
	switch {
	case strings.HasPrefix(path, uploadPrefix):
		req.upload, req.id = true, path[len(uploadPrefix):]
		signMethod, allow = "PUT", "PUT"
	case strings.HasPrefix(path, downloadPrefix):
		req.id = path[len(downloadPrefix):]
		signMethod, allow = "GET", "GET, HEAD" // HEAD is verified as GET
	default:
		return req, ErrNotFound
	}
	if !validID(req.id) {
		return req, ErrNotFound
	}
	if method != signMethod && (req.upload || method != "HEAD") {
		return req, &clientError{kind: errMethodNotAllowed, allow: allow,
			msg: "This URL takes " + allow + " only: upload URLs take PUT, download URLs take GET or HEAD."}
	}
	if rawQuery == "" {
		return req, clientErrorf(errInvalidRequest,
			"The URL has no query; it must carry expires, size and sig. Use the signed URL exactly as the API returned it.")
	}

	var vals [3]string // expires, size, sig
	var seen [3]bool
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, val, _ := strings.Cut(part, "=")
		var i int
		switch key {
		case "expires":
			i = 0
		case "size":
			i = 1
		case "sig":
			i = 2
		default:
			return req, clientErrorf(errInvalidRequest,
				"The URL's query must hold exactly expires, size and sig; found %q. Use the signed URL exactly as the API returned it.", truncate(key, 32))
		}
		if seen[i] {
			return req, clientErrorf(errInvalidRequest,
				"The URL's query repeats %q. Use the signed URL exactly as the API returned it.", key)
		}
		seen[i], vals[i] = true, val
	}
	for i, name := range [3]string{"expires", "size", "sig"} {
		if !seen[i] {
			return req, clientErrorf(errInvalidRequest,
				"The URL's query lacks %q. Use the signed URL exactly as the API returned it.", name)
		}
	}
	var ok bool
	if req.expires, ok = parseDecimal(vals[0]); !ok {
		return req, clientErrorf(errInvalidRequest,
			"The URL's expires parameter is not a Unix time. Use the signed URL exactly as the API returned it.")
	}
	if req.size, ok = parseDecimal(vals[1]); !ok || req.size > maxObjectSize {
		return req, clientErrorf(errInvalidRequest,
			"The URL's size parameter is not a byte count. Use the signed URL exactly as the API returned it.")
	}
	got, ok := decodeSig(vals[2])
	if !ok {
		return req, clientErrorf(errInvalidSignature,
			"The URL's sig parameter must be 64 lowercase hex digits. Use the signed URL exactly as the API returned it.")
	}
	if !hmac.Equal(got, s.sign(signMethod, path, vals[0], vals[1])) {
		return req, errInvalidSignature
	}
	if s.now().After(time.Unix(req.expires, 0)) {
		return req, errURLExpired
	}
	return req, nil
}

// parseDecimal accepts only the canonical spelling strconv.FormatInt gives a
// non-negative int64: digits, no sign, no leading zero, no overflow.
func parseDecimal(v string) (int64, bool) {
	if v == "" || len(v) > 19 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// decodeSig accepts exactly the lowercase hex of a SHA-256 HMAC.
func decodeSig(v string) ([]byte, bool) {
	if len(v) != 2*sha256.Size {
		return nil, false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(v)
	return b, err == nil
}

// validID reports whether id matches ^job_[A-Za-z0-9]{1,64}$, which also
// guarantees it is a single, harmless path element.
func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "job_")
	if !ok || len(rest) < 1 || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
