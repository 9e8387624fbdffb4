package blobstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// newFuzzStore signs with testSecret and stands at testNow, the values the
// seed corpus in testdata/fuzz/FuzzVerifyURL was made with.
func newFuzzStore(tb testing.TB) *Store {
	st, err := Open(Config{Dir: tb.TempDir(), PublicURL: "http://blob.test", Secret: testSecret, Now: func() time.Time { return testNow }})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// FuzzVerifyURL checks that verifyURL never panics, refuses with a known
// error, and accepts only the exact URLs this Store signs.
func FuzzVerifyURL(f *testing.F) {
	st := newFuzzStore(f)
	exp := testNow.Add(15 * time.Minute)
	for _, u := range []string{
		st.UploadURL("job_abc", 5, exp),
		st.DownloadURL("job_abc", 5, exp),
	} {
		path, query, _ := strings.Cut(strings.TrimPrefix(u, "http://blob.test"), "?")
		f.Add("PUT", path, query)
		f.Add("GET", path, query)
		f.Add("HEAD", path, query)
		f.Add("PUT", path, query[:len(query)-1])
		f.Add("PUT", path, query+"&"+query)
	}
	f.Fuzz(func(t *testing.T, method, path, rawQuery string) {
		req, err := st.verifyURL(method, path, rawQuery)
		if err != nil {
			if status, _, _ := httpStatus(err); status >= 500 || status < 400 {
				t.Fatalf("verifyURL(%q, %q, %q) = %v, mapped to status %d", method, path, rawQuery, err, status)
			}
			return
		}
		var signed string
		switch {
		case req.upload && method == "PUT":
			signed = st.UploadURL(req.id, req.size, time.Unix(req.expires, 0))
		case !req.upload && (method == "GET" || method == "HEAD"):
			signed = st.DownloadURL(req.id, req.size, time.Unix(req.expires, 0))
		default:
			t.Fatalf("accepted %s on %q", method, path)
		}
		wantPath, wantQuery, _ := strings.Cut(strings.TrimPrefix(signed, st.publicURL), "?")
		got, want := strings.Split(rawQuery, "&"), strings.Split(wantQuery, "&")
		slices.Sort(got)
		slices.Sort(want)
		if path != wantPath || !slices.Equal(got, want) {
			t.Fatalf("accepted %s %s?%s, but this store signs %s", method, path, rawQuery, signed)
		}
		if testNow.After(time.Unix(req.expires, 0)) {
			t.Fatalf("accepted an expired URL: %s?%s", path, rawQuery)
		}
	})
}

// The seed corpus must keep meaning what its names say; if testSecret or
// testNow change, regenerate it from this test's failure output.
func TestVerifyURL_SeedCorpus(t *testing.T) {
	st := newFuzzStore(t)
	u := st.UploadURL("job_abc", 5, testNow.Add(15*time.Minute))
	path, query, _ := strings.Cut(strings.TrimPrefix(u, "http://blob.test"), "?")
	if _, err := st.verifyURL("PUT", path, query); err != nil {
		t.Fatalf("valid URL refused: %v", err)
	}
	const seed = "expires=1700000900&size=5&sig=" + seedSig
	if query != seed {
		t.Fatalf("the seed corpus holds %q, but the valid query is now %q", seed, query)
	}
}

// seedSig is the signature in testdata/fuzz/FuzzVerifyURL/valid_upload.
const seedSig = "63504d97edd4195e2e50ec510f86cc65d0b47566f7b38224e12f7823da66bea7"

func TestVerifyURL_Canonical(t *testing.T) {
	st := newFuzzStore(t)
	u := st.UploadURL("job_abc", 5, testNow.Add(time.Minute))
	path, query, _ := strings.Cut(strings.TrimPrefix(u, st.publicURL), "?")
	parts := strings.Split(query, "&")
	slices.Reverse(parts)
	if _, err := st.verifyURL("PUT", path, strings.Join(parts, "&")); err != nil {
		t.Errorf("reordered parameters refused: %v", err)
	}
	// Valid up to and including the instant of its expires second, refused a nanosecond later.
	st.now = func() time.Time { return testNow.Add(time.Minute) }
	if _, err := st.verifyURL("PUT", path, query); err != nil {
		t.Errorf("URL refused at its expiry second: %v", err)
	}
	st.now = func() time.Time { return testNow.Add(time.Minute + time.Nanosecond) }
	if _, err := st.verifyURL("PUT", path, query); !errors.Is(err, errURLExpired) {
		t.Errorf("URL after expiry = %v, want errURLExpired", err)
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"00", 0, false},
		{"05", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"5 ", 0, false},
		{"0x5", 0, false},
		{"1e3", 0, false},
		{"５", 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseDecimal(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseDecimal(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{ErrNotFound, 404, "not_found"},
		{fmt.Errorf("seal: %w", ErrNotFound), 404, "not_found"},
		{ErrInvalidID, 404, "not_found"},
		{errMethodNotAllowed, 405, "method_not_allowed"},
		{errInvalidRequest, 400, "invalid_request"},
		{errInvalidSignature, 403, "invalid_signature"},
		{errURLExpired, 403, "url_expired"},
		{errLengthRequired, 411, "length_required"},
		{clientErrorf(errSizeMismatch, "x"), 400, "size_mismatch"},
		{errSealed, 409, "upload_sealed"},
		{errUploadInProgress, 409, "upload_in_progress"},
		{errPreconditionFailed, 412, "precondition_failed"},
		{errRangeNotSatisfiable, 416, "range_not_satisfiable"},
		{fmt.Errorf("%w: disk full", ErrStorage), 503, "storage_unavailable"},
		{errors.New("surprise"), 500, "internal_error"},
	}
	for _, tt := range tests {
		status, code, msg := httpStatus(tt.err)
		if status != tt.status || code != tt.code || msg == "" {
			t.Errorf("httpStatus(%v) = %d %q %q; want %d %q", tt.err, status, code, msg, tt.status, tt.code)
		}
		if status >= 500 && strings.Contains(msg, "disk full") {
			t.Errorf("internal detail leaks to the client: %q", msg)
		}
	}
}

// TestSignedURL_IsHMACOfTheRequest: the sig parameter is HMAC-SHA256, keyed with the secret,
// of "METHOD\nPATH\nEXPIRES\nSIZE", whichever goroutine signs (the Store reuses its HMACs).
func TestSignedURL_IsHMACOfTheRequest(t *testing.T) {
	st := newFuzzStore(t)
	exp := time.Unix(1795334381, 0)
	want := func(method, path string, size int) string {
		m := hmac.New(sha256.New, testSecret)
		fmt.Fprintf(m, "%s\n%s\n%d\n%d", method, path, exp.Unix(), size)
		return fmt.Sprintf("http://blob.test%s?expires=%d&size=%d&sig=%x", path, exp.Unix(), size, m.Sum(nil))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("job_%d_%d", g, i)
				if got, w := st.UploadURL(id, int64(i), exp), want("PUT", "/uploads/"+id, i); got != w {
					t.Errorf("UploadURL = %s, want %s", got, w)
					return
				}
				if got, w := st.DownloadURL(id, int64(i), exp), want("GET", "/outputs/"+id, i); got != w {
					t.Errorf("DownloadURL = %s, want %s", got, w)
					return
				}
			}
		})
	}
	wg.Wait()
}
