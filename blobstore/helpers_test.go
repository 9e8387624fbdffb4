package blobstore

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// testSecret and testNow make signatures reproducible (the fuzz seed corpus depends on them).
var (
	testSecret = []byte("0123456789abcdef0123456789abcdef")
	testNow    = time.Unix(1_700_000_000, 0)
)

// testEnv is a Store on a temp dir served by a real HTTP server, with a clock
// the test moves. At cleanup it asserts that no temporary file was left behind.
type testEnv struct {
	t   testing.TB
	st  *Store
	srv *httptest.Server
	dir string
	now atomic.Int64 // unix nanoseconds
	// started stands in for the job store behind Config.JobState: seal records its starts.
	started *startedSet
	cfg     Config
}

// reopen opens the store again on the same directory and config (as a restart does) and
// serves the new one.
func (e *testEnv) reopen() {
	e.t.Helper()
	st, err := Open(e.cfg)
	if err != nil {
		e.t.Fatalf("reopen: %v", err)
	}
	e.st = st
	e.srv.Config.Handler = st.Handler()
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	return newTestEnvLogger(t, slog.New(slog.DiscardHandler))
}

func newTestEnvLogger(t testing.TB, log *slog.Logger) *testEnv {
	t.Helper()
	return newTestEnvConfig(t, func(c *Config) { c.Logger = log })
}

// newTestEnvConfig is newTestEnv with a config adjusted by opt (Logger, JobState).
func newTestEnvConfig(t testing.TB, opt func(*Config)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir(), started: &startedSet{}}
	e.now.Store(testNow.UnixNano())
	e.srv = httptest.NewUnstartedServer(nil)
	cfg := Config{
		Dir:       e.dir,
		PublicURL: "http://" + e.srv.Listener.Addr().String() + "/",
		Secret:    testSecret,
		Now:       func() time.Time { return time.Unix(0, e.now.Load()) },
		Logger:    slog.New(slog.DiscardHandler),
		JobState:  e.started.JobState,
	}
	opt(&cfg)
	e.cfg = cfg
	st, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	e.st = st
	e.srv.Config.Handler = st.Handler()
	e.srv.Start()
	t.Cleanup(func() { assertDirEmpty(t, filepath.Join(e.dir, "tmp")) })
	t.Cleanup(e.srv.Close) // runs first: waits for in-flight handlers
	return e
}

func (e *testEnv) advance(d time.Duration) { e.now.Add(int64(d)) }

// seal starts the job as handleStartJob does: Seal, recording the start in e.started, and
// returns the size Seal passed.
func (e *testEnv) seal(id string) (int64, error) {
	size := int64(-1)
	err := e.st.Seal(id, func(n int64) error {
		size = n
		e.started.start(id)
		return nil
	})
	return size, err
}

// expires is the usual 15-minute validity of an upload URL.
func (e *testEnv) expires() time.Time { return time.Unix(0, e.now.Load()).Add(15 * time.Minute) }

func (e *testEnv) uploadURL(id string, size int64) string {
	return e.st.UploadURL(id, size, e.expires())
}

func (e *testEnv) downloadURL(id string, size int64) string {
	return e.st.DownloadURL(id, size, e.expires())
}

// do sends one request; contentLength -1 makes the body chunked.
func (e *testEnv) do(method, url string, body io.Reader, contentLength int64, hdr http.Header) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		e.t.Fatalf("NewRequest(%s %s): %v", method, url, err)
	}
	if body != nil {
		req.ContentLength = contentLength
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

func (e *testEnv) put(url, body string) *http.Response {
	e.t.Helper()
	return e.do("PUT", url, strings.NewReader(body), int64(len(body)), nil)
}

// mustUpload PUTs body as the job's upload and fails the test unless it is stored.
func (e *testEnv) mustUpload(id, body string) {
	e.t.Helper()
	resp := e.put(e.uploadURL(id, int64(len(body))), body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("upload %s: status %d: %s", id, resp.StatusCode, b)
	}
}

func (e *testEnv) mustWriteOutput(id, body string, meta OutputMeta) Output {
	e.t.Helper()
	out, err := e.st.WriteOutput(id, meta, func(w io.Writer) error {
		_, err := io.WriteString(w, body)
		return err
	})
	if err != nil {
		e.t.Fatalf("WriteOutput(%s): %v", id, err)
	}
	return out
}

// rawRequest writes a hand-made HTTP/1.1 request on a fresh connection, half
// closes it, and returns the first response.
func (e *testEnv) rawRequest(raw string) *http.Response {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		e.t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		e.t.Fatalf("reading response: %v", err)
	}
	return resp
}

// wantError asserts an error response's status, code, JSON shape and headers.
func wantError(t testing.TB, resp *http.Response, status int, code string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	if body.Error.Code != code {
		t.Errorf("code = %q, want %q (message %q)", body.Error.Code, code, body.Error.Message)
	}
	if body.Error.Message == "" {
		t.Errorf("empty error message")
	}
}

func assertDirEmpty(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%s): %v", dir, err)
	}
	for _, e := range entries {
		t.Errorf("%s: leftover %s", dir, e.Name())
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(t testing.TB, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	return err == nil
}

// waitFor polls cond until it holds, failing the test after 30 seconds (scaled by testtime).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testtime.Scale(30 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lockHolders is how many callers hold or wait for the id's lock.
func (s *Store) lockHolders(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.locks[id]; l != nil {
		return l.refs
	}
	return 0
}

// tmpHasUpload reports whether a PUT for id is streaming into tmp/.
func (e *testEnv) tmpHasUpload(id string) bool {
	m, _ := filepath.Glob(filepath.Join(e.dir, "tmp", "put-"+id+"-*"))
	return len(m) > 0
}

// patternReader yields n deterministic bytes without holding them in memory.
type patternReader struct {
	n   int64
	off int64
}

var pattern = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}()

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	n := 0
	for n < len(b) {
		i := int((p.off + int64(n)) % int64(len(pattern)))
		n += copy(b[n:], pattern[i:])
	}
	p.off += int64(n)
	return n, nil
}
