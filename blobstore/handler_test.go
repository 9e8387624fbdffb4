package blobstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// splitURL returns a signed URL's base+path and the values of its query.
func splitURL(t testing.TB, signed string) (path, expires, size, sig string) {
	t.Helper()
	u, err := url.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	return u.Scheme + "://" + u.Host + u.Path, q.Get("expires"), q.Get("size"), q.Get("sig")
}

func TestHandler_Errors(t *testing.T) {
	const id = "job_abc"
	type request = testRequest
	// put is a PUT whose Content-Length matches its 5-byte body.
	put := func(u string) request { return request{"PUT", u, "hello", 5, nil} }
	get := func(u string) request { return request{"GET", u, "", 0, nil} }

	tests := []struct {
		name   string
		setup  func(e *testEnv)
		req    func(e *testEnv) request
		status int
		code   string
		allow  string
	}{
		// 404: unknown paths and bad ids.
		{name: "root", req: func(e *testEnv) request { return get(e.srv.URL + "/") }, status: 404, code: "not_found"},
		{name: "uploads dir", req: func(e *testEnv) request {
			p, x, s, g := splitURL(e.t, e.uploadURL(id, 5))
			return put(strings.TrimSuffix(p, id) + "?expires=" + x + "&size=" + s + "&sig=" + g)
		}, status: 404, code: "not_found"},
		{name: "inputs path", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), "/uploads/", "/inputs/", 1))
		}, status: 404, code: "not_found"},
		{name: "id without prefix", req: func(e *testEnv) request { return put(e.uploadURL("abc", 5)) }, status: 404, code: "not_found"},
		{name: "empty id body", req: func(e *testEnv) request { return put(e.uploadURL("job_", 5)) }, status: 404, code: "not_found"},
		{name: "id with dash", req: func(e *testEnv) request { return put(e.uploadURL("job_a-b", 5)) }, status: 404, code: "not_found"},
		{name: "id too long", req: func(e *testEnv) request { return put(e.uploadURL("job_"+strings.Repeat("a", 65), 5)) }, status: 404, code: "not_found"},
		{name: "id as GET too long", req: func(e *testEnv) request { return get(e.uploadURL("job_"+strings.Repeat("a", 65), 5)) }, status: 404, code: "not_found"},
		{name: "extra path element", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), id, id+"/x", 1))
		}, status: 404, code: "not_found"},
		{name: "trailing slash", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), id, id+"/", 1))
		}, status: 404, code: "not_found"},
		{name: "dot-dot escape", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), id, "%2e%2e%2furl.secret", 1))
		}, status: 404, code: "not_found"},
		{name: "re-escaped id", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), id, "job_ab%63", 1))
		}, status: 404, code: "not_found"},
		{name: "no output yet", req: func(e *testEnv) request { return get(e.downloadURL(id, 5)) }, status: 404, code: "not_found"},
		{name: "output size differs from signed size",
			setup: func(e *testEnv) { e.mustWriteOutput(id, "hello", OutputMeta{}) },
			req:   func(e *testEnv) request { return get(e.downloadURL(id, 4)) }, status: 404, code: "not_found"},

		// 405: the method must be the one the path takes.
		{name: "GET upload URL", req: func(e *testEnv) request { return get(e.uploadURL(id, 5)) }, status: 405, code: "method_not_allowed", allow: "PUT"},
		{name: "POST upload URL", req: func(e *testEnv) request {
			r := put(e.uploadURL(id, 5))
			r.method = "POST"
			return r
		}, status: 405, code: "method_not_allowed", allow: "PUT"},
		{name: "PUT download URL", req: func(e *testEnv) request { return put(e.downloadURL(id, 5)) }, status: 405, code: "method_not_allowed", allow: "GET, HEAD"},
		{name: "DELETE download URL", req: func(e *testEnv) request {
			r := get(e.downloadURL(id, 5))
			r.method = "DELETE"
			return r
		}, status: 405, code: "method_not_allowed", allow: "GET, HEAD"},

		// 400 invalid_request: the query's shape.
		{name: "no query", req: func(e *testEnv) request {
			p, _, _, _ := splitURL(e.t, e.uploadURL(id, 5))
			return put(p)
		}, status: 400, code: "invalid_request"},
		{name: "missing expires", req: queryCase(id, "size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "missing size", req: queryCase(id, "expires=%[1]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "missing sig", req: queryCase(id, "expires=%[1]s&size=%[2]s"), status: 400, code: "invalid_request"},
		{name: "duplicated expires", req: queryCase(id, "expires=%[1]s&expires=%[1]s&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "duplicated size", req: queryCase(id, "expires=%[1]s&size=%[2]s&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "duplicated sig", req: queryCase(id, "expires=%[1]s&size=%[2]s&sig=%[3]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "extra parameter", req: queryCase(id, "expires=%[1]s&size=%[2]s&sig=%[3]s&x=1"), status: 400, code: "invalid_request"},
		{name: "empty parameter", req: queryCase(id, "expires=%[1]s&&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "escaped key", req: queryCase(id, "expires=%[1]s&size=%[2]s&%%73ig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "non-numeric expires", req: queryCase(id, "expires=soon&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "plus-signed expires", req: queryCase(id, "expires=+%[1]s&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "leading-zero expires", req: queryCase(id, "expires=0%[1]s&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "overflowing expires", req: queryCase(id, "expires=99999999999999999999&size=%[2]s&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "negative size", req: queryCase(id, "expires=%[1]s&size=-5&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "decimal size", req: queryCase(id, "expires=%[1]s&size=5.0&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "escaped size", req: queryCase(id, "expires=%[1]s&size=%%35&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "overflowing size", req: queryCase(id, "expires=%[1]s&size=9223372036854775808&sig=%[3]s"), status: 400, code: "invalid_request"},
		{name: "size over maximum", req: queryCase(id, "expires=%[1]s&size=9223372036854775807&sig=%[3]s"), status: 400, code: "invalid_request"},

		// 403 invalid_signature: the signature's value, and tampering with anything it covers.
		{name: "non-hex sig", req: queryCase(id, "expires=%[1]s&size=%[2]s&sig="+strings.Repeat("zz", 32)), status: 403, code: "invalid_signature"},
		{name: "truncated sig", req: func(e *testEnv) request {
			u := e.uploadURL(id, 5)
			return put(u[:len(u)-1])
		}, status: 403, code: "invalid_signature"},
		{name: "extended sig", req: func(e *testEnv) request { return put(e.uploadURL(id, 5) + "00") }, status: 403, code: "invalid_signature"},
		{name: "empty sig", req: queryCase(id, "expires=%[1]s&size=%[2]s&sig="), status: 403, code: "invalid_signature"},
		{name: "uppercase sig", req: func(e *testEnv) request {
			p, x, s, g := splitURL(e.t, e.uploadURL(id, 5))
			return put(p + "?expires=" + x + "&size=" + s + "&sig=" + strings.ToUpper(g))
		}, status: 403, code: "invalid_signature"},
		{name: "tampered sig", req: func(e *testEnv) request {
			u := e.uploadURL(id, 5)
			last := "0"
			if strings.HasSuffix(u, "0") {
				last = "1"
			}
			return put(u[:len(u)-1] + last)
		}, status: 403, code: "invalid_signature"},
		{name: "tampered path", req: func(e *testEnv) request {
			return put(strings.Replace(e.uploadURL(id, 5), id, "job_abd", 1))
		}, status: 403, code: "invalid_signature"},
		{name: "tampered size", req: func(e *testEnv) request {
			r := put(strings.Replace(e.uploadURL(id, 5), "size=5", "size=6", 1))
			r.body, r.length = "hello!", 6
			return r
		}, status: 403, code: "invalid_signature"},
		{name: "tampered expires", req: func(e *testEnv) request {
			p, x, s, g := splitURL(e.t, e.uploadURL(id, 5))
			n, _ := strconv.ParseInt(x, 10, 64)
			return put(fmt.Sprintf("%s?expires=%d&size=%s&sig=%s", p, n+3600, s, g))
		}, status: 403, code: "invalid_signature"},
		{name: "download signature used to upload", req: func(e *testEnv) request {
			return put(strings.Replace(e.downloadURL(id, 5), "/outputs/", "/uploads/", 1))
		}, status: 403, code: "invalid_signature"},
		{name: "upload signature used to download",
			setup: func(e *testEnv) { e.mustWriteOutput(id, "hello", OutputMeta{}) },
			req: func(e *testEnv) request {
				return get(strings.Replace(e.uploadURL(id, 5), "/uploads/", "/outputs/", 1))
			}, status: 403, code: "invalid_signature"},
		{name: "signed by another secret", req: func(e *testEnv) request {
			other, err := Open(Config{Dir: e.t.TempDir(), PublicURL: e.srv.URL})
			if err != nil {
				e.t.Fatal(err)
			}
			return put(other.UploadURL(id, 5, e.expires()))
		}, status: 403, code: "invalid_signature"},

		// 403 url_expired, only once the signature holds.
		{name: "expired upload URL", req: func(e *testEnv) request {
			u := e.uploadURL(id, 5)
			e.advance(15*time.Minute + time.Second)
			return put(u)
		}, status: 403, code: "url_expired"},
		{name: "expired download URL",
			setup: func(e *testEnv) { e.mustWriteOutput(id, "hello", OutputMeta{}) },
			req: func(e *testEnv) request {
				u := e.downloadURL(id, 5)
				e.advance(time.Hour)
				return get(u)
			}, status: 403, code: "url_expired"},

		// PUT body framing.
		{name: "chunked body", req: func(e *testEnv) request {
			r := put(e.uploadURL(id, 5))
			r.length = -1
			return r
		}, status: 411, code: "length_required"},
		{name: "Content-Length short of size", req: func(e *testEnv) request {
			r := put(e.uploadURL(id, 6))
			return r
		}, status: 400, code: "size_mismatch"},
		{name: "Content-Length over size", req: func(e *testEnv) request {
			return put(e.uploadURL(id, 4))
		}, status: 400, code: "size_mismatch"},
		{name: "upload after seal",
			setup: func(e *testEnv) {
				e.mustUpload(id, "first")
				if _, err := e.seal(id); err != nil {
					e.t.Fatal(err)
				}
			},
			req: func(e *testEnv) request { return put(e.uploadURL(id, 5)) }, status: 409, code: "upload_sealed"},

		// Download conditions that http.ServeContent refuses.
		{name: "range outside file",
			setup: func(e *testEnv) { e.mustWriteOutput(id, "hello", OutputMeta{}) },
			req: func(e *testEnv) request {
				r := get(e.downloadURL(id, 5))
				r.header = http.Header{"Range": {"bytes=100-200"}}
				return r
			}, status: 416, code: "range_not_satisfiable"},
		{name: "If-Match fails",
			setup: func(e *testEnv) { e.mustWriteOutput(id, "hello", OutputMeta{}) },
			req: func(e *testEnv) request {
				r := get(e.downloadURL(id, 5))
				r.header = http.Header{"If-Match": {`"0000"`}}
				return r
			}, status: 412, code: "precondition_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEnv(t)
			if tt.setup != nil {
				tt.setup(e)
			}
			r := tt.req(e)
			var body io.Reader
			if r.method == "PUT" || r.method == "POST" {
				body = strings.NewReader(r.body)
			}
			resp := e.do(r.method, r.url, body, r.length, r.header)
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if tt.status != 404 && tt.status != 409 && fileExists(t, filepath.Join(e.dir, "uploads", id)) {
				t.Errorf("a refused upload was stored")
			}
			wantError(t, resp, tt.status, tt.code)
		})
	}
}

// testRequest is one row's request; length is the Content-Length, -1 for chunked.
type testRequest struct {
	method string
	url    string
	body   string
	length int64
	header http.Header
}

// queryCase builds a PUT of "hello" to job id's upload path with a query made
// from format, whose %[1]s, %[2]s and %[3]s are the valid expires, size and sig.
func queryCase(id, format string) func(e *testEnv) testRequest {
	return func(e *testEnv) testRequest {
		p, x, s, g := splitURL(e.t, e.uploadURL(id, 5))
		return testRequest{"PUT", p + "?" + fmt.Sprintf(format, x, s, g), "hello", 5, nil}
	}
}

func TestHandler_Put_Success(t *testing.T) {
	e := newTestEnv(t)
	resp := e.put(e.uploadURL("job_abc", 5), "hello")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	sum := sha256.Sum256([]byte("hello"))
	want := hex.EncodeToString(sum[:])
	var got struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Bytes != 5 || got.SHA256 != want {
		t.Errorf("body = %+v, want bytes 5, sha256 %s", got, want)
	}
	if etag := resp.Header.Get("ETag"); etag != `"`+want+`"` {
		t.Errorf("ETag = %s, want %q", etag, want)
	}
	if v := resp.Header.Get("X-Content-Type-Options"); v != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", v)
	}
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != "hello" {
		t.Errorf("stored %q, want hello", got)
	}
}

func TestHandler_Put_EmptyFile(t *testing.T) {
	e := newTestEnv(t)
	resp := e.do("PUT", e.uploadURL("job_empty", 0), http.NoBody, 0, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if n, err := e.seal("job_empty"); err != nil || n != 0 {
		t.Fatalf("Seal = %d, %v; want 0, nil", n, err)
	}
}

// A re-upload before the job starts replaces the previous file whole.
func TestHandler_Put_ReplacesUpload(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_abc", "first")
	e.mustUpload("job_abc", "again")
	if n, err := e.seal("job_abc"); err != nil || n != 5 {
		t.Fatalf("Seal = %d, %v; want 5, nil", n, err)
	}
	f, err := e.st.OpenInput("job_abc")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "again" {
		t.Errorf("input = %q, want again", b)
	}
}

// The client announces 10 bytes, sends 5 and stops: nothing may be stored.
func TestHandler_Put_ShortBody(t *testing.T) {
	e := newTestEnv(t)
	u, _ := url.Parse(e.uploadURL("job_abc", 10))
	resp := e.rawRequest("PUT " + u.RequestURI() + " HTTP/1.1\r\nHost: blob\r\nContent-Length: 10\r\n\r\nhello")
	wantError(t, resp, 400, "size_mismatch")
	if fileExists(t, filepath.Join(e.dir, "uploads", "job_abc")) {
		t.Error("a short upload was stored")
	}
}

// Bytes after Content-Length belong to the next request, never to the file.
func TestHandler_Put_LongBody(t *testing.T) {
	e := newTestEnv(t)
	u, _ := url.Parse(e.uploadURL("job_abc", 5))
	resp := e.rawRequest("PUT " + u.RequestURI() + " HTTP/1.1\r\nHost: blob\r\nContent-Length: 5\r\n\r\nhello, and more")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != "hello" {
		t.Errorf("stored %q, want hello", got)
	}
}

// The Go client refuses to send a body longer than Content-Length, and aborts
// one that is shorter; the server must store nothing in the short case.
func TestHandler_Put_ClientBodyLengthLies(t *testing.T) {
	e := newTestEnv(t)
	req, _ := http.NewRequest("PUT", e.uploadURL("job_abc", 10), strings.NewReader("hello"))
	req.ContentLength = 10
	if resp, err := e.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("short body accepted")
		}
	}
	waitFor(t, "the aborted upload to be cleaned up", func() bool { return !e.tmpHasUpload("job_abc") })
	if fileExists(t, filepath.Join(e.dir, "uploads", "job_abc")) {
		t.Error("a short upload was stored")
	}
}

// startPut begins a PUT of size bytes, sends head and waits until the body
// streams into tmp/; the test feeds the rest through the returned pipe, and the
// response arrives on the channel.
func (e *testEnv) startPut(id string, size int64, head string) (*io.PipeWriter, <-chan *http.Response) {
	pr, pw := io.Pipe()
	ch := make(chan *http.Response, 1)
	req, _ := http.NewRequest("PUT", e.uploadURL(id, size), pr)
	req.ContentLength = size
	go func() {
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			e.t.Errorf("PUT: %v", err)
			close(ch)
			return
		}
		ch <- resp
	}()
	if _, err := io.WriteString(pw, head); err != nil {
		e.t.Fatal(err)
	}
	waitFor(e.t, "the PUT to stream", func() bool { return e.tmpHasUpload(id) })
	return pw, ch
}

func TestHandler_Put_InProgress(t *testing.T) {
	e := newTestEnv(t)
	pw, first := e.startPut("job_abc", 10, "hello")

	wantError(t, e.put(e.uploadURL("job_abc", 10), "0123456789"), 409, "upload_in_progress")
	if _, err := e.seal("job_abc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Seal during the first upload = %v, want ErrNotFound", err)
	}

	io.WriteString(pw, "world")
	pw.Close()
	resp := <-first
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first PUT status = %d, want 200", resp.StatusCode)
	}
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != "helloworld" {
		t.Errorf("stored %q, want helloworld", got)
	}
}

// Seal wins against a PUT still streaming: the PUT is refused at commit, so
// an upload can never land after the job started.
func TestHandler_Put_SealedWhileStreaming(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_abc", "first")
	pw, second := e.startPut("job_abc", 6, "sec")

	if n, err := e.seal("job_abc"); err != nil || n != 5 {
		t.Fatalf("Seal = %d, %v; want 5, nil", n, err)
	}
	io.WriteString(pw, "ond")
	pw.Close()
	wantError(t, <-second, 409, "upload_sealed")

	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != "first" {
		t.Errorf("sealed input = %q, want first", got)
	}
}

func TestHandler_Put_Concurrent(t *testing.T) {
	e := newTestEnv(t)
	const n, size = 8, 1 << 20
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = strings.Repeat(string(rune('a'+i)), size)
	}
	u := e.uploadURL("job_abc", size)
	status := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp := e.put(u, bodies[i])
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status[i] = resp.StatusCode
		})
	}
	wg.Wait()

	stored := readFile(t, filepath.Join(e.dir, "uploads", "job_abc"))
	ok, matched := 0, false
	for i, s := range status {
		switch s {
		case http.StatusOK:
			ok++
			matched = matched || stored == bodies[i]
		case http.StatusConflict:
		default:
			t.Errorf("PUT %d: status %d, want 200 or 409", i, s)
		}
	}
	if ok == 0 || !matched {
		t.Errorf("statuses %v: the stored file is not the body of a successful PUT", status)
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "uploads"))
	if len(entries) != 1 {
		t.Errorf("uploads/ holds %d files, want 1", len(entries))
	}
}

func TestHandler_Get(t *testing.T) {
	e := newTestEnv(t)
	body := "hello, world"
	out := e.mustWriteOutput("job_abc", body, OutputMeta{ContentType: "image/png", Filename: `résumé "final".png`})
	u := e.downloadURL("job_abc", out.Bytes)
	etag := `"` + out.SHA256 + `"`

	resp := e.do("GET", u, nil, 0, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != body {
		t.Fatalf("GET = %d %q, want 200 %q", resp.StatusCode, b, body)
	}
	for k, want := range map[string]string{
		"ETag":                   etag,
		"Content-Type":           "image/png",
		"Content-Length":         strconv.Itoa(len(body)),
		"Accept-Ranges":          "bytes",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "private, no-cache",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	disp, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if err != nil || disp != "attachment" || params["filename"] != `résumé "final".png` {
		t.Errorf("Content-Disposition = %q (%v), want attachment with the filename", resp.Header.Get("Content-Disposition"), err)
	}

	t.Run("Range", func(t *testing.T) {
		resp := e.do("GET", u, nil, 0, http.Header{"Range": {"bytes=7-11"}})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || string(b) != "world" {
			t.Errorf("GET Range = %d %q, want 206 world", resp.StatusCode, b)
		}
		if got := resp.Header.Get("Content-Range"); got != "bytes 7-11/12" {
			t.Errorf("Content-Range = %q", got)
		}
	})
	t.Run("If-None-Match", func(t *testing.T) {
		resp := e.do("GET", u, nil, 0, http.Header{"If-None-Match": {etag}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("status = %d, want 304", resp.StatusCode)
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		resp := e.do("HEAD", u, nil, 0, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != 0 {
			t.Errorf("HEAD = %d with %d body bytes, want 200 and none", resp.StatusCode, len(b))
		}
		if resp.ContentLength != int64(len(body)) || resp.Header.Get("ETag") != etag {
			t.Errorf("HEAD Content-Length %d ETag %q", resp.ContentLength, resp.Header.Get("ETag"))
		}
	})
	t.Run("HEAD error has no body", func(t *testing.T) {
		resp := e.do("HEAD", e.downloadURL("job_other", 1), nil, 0, nil)
		resp.Body.Close()
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("HEAD missing = %d %q, want 404 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("defaults", func(t *testing.T) {
		out := e.mustWriteOutput("job_plain", "x", OutputMeta{})
		resp := e.do("GET", e.downloadURL("job_plain", out.Bytes), nil, 0, nil)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); got != "application/octet-stream" {
			t.Errorf("Content-Type = %q, want application/octet-stream", got)
		}
		if got := resp.Header.Get("Content-Disposition"); got != "attachment" {
			t.Errorf("Content-Disposition = %q, want attachment", got)
		}
	})
}

// The URL signature is a credential: no log line may carry it.
func TestHandler_NeverLogsSignature(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newTestEnvLogger(t, log)
	u := e.uploadURL("job_abc", 5)
	_, _, _, sig := splitURL(t, u)
	wantError(t, e.put(u+"0", "hello"), 403, "invalid_signature")
	wantError(t, e.do("GET", u, nil, 0, nil), 405, "method_not_allowed")
	e.mustUpload("job_abc", "hello")
	e.srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() == 0 {
		t.Fatal("nothing was logged; the test proves nothing")
	}
	if strings.Contains(buf.String(), sig[:16]) || strings.Contains(buf.String(), "sig=") {
		t.Errorf("log carries the signature:\n%s", buf.String())
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
