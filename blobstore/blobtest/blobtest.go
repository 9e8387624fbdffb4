// Package blobtest is the conformance suite of convsvc's object storage: one set of tests that
// every backend (the local blobstore, S3-compatible storage) passes through its own small
// adapter, in the model of litestream's replica client tests.
//
// The suite drives the backends the way clients and workers do: uploads go through the upload
// URL over real HTTP, downloads through the download URL. Where the backends answer a fault
// differently, the suite asserts what both promise, not the exact status:
//
//	fault                           local blobstore              S3 (versitygw, MinIO, AWS)
//	body longer/shorter than signed 400 size_mismatch (JSON)     403 SignatureDoesNotMatch (XML)
//	expired URL                     403 url_expired (JSON)       403 AccessDenied (XML)
//	tampered signature              403 invalid_signature        403 SignatureDoesNotMatch
//
// In every row the suite asserts a 4xx and that nothing was stored.
package blobtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/blobstore"
)

// Backend adapts one object storage to the suite. Each method does what the job lifecycle
// does at that point; the adapter hides differences in signatures (Seal's callback, per-attempt
// outputs).
type Backend interface {
	// UploadURL is the URL a client PUTs the job's input to, valid until expires.
	UploadURL(jobID string, size int64, expires time.Time) (string, error)
	// Seal seals the job's upload as a start does and returns the size the backend reported
	// to the start callback; it returns an error wrapping blobstore.ErrNotFound, without
	// calling back, when nothing was uploaded.
	Seal(jobID string) (int64, error)
	// UploadSHA256 is the lowercase hex SHA-256 of the upload Seal sealed, as the backend
	// reports it to a start (taken while the upload was received: no second read of it).
	UploadSHA256(jobID string) (string, error)
	// ReadInput reads the input of a job Seal sealed, as a worker does.
	ReadInput(jobID string) ([]byte, error)
	// WriteOutput stores data as the output of the job's attempt and returns what Commit returned.
	WriteOutput(jobID string, attempt int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error)
	// WriteOutputThroughFile is WriteOutput with data written into the pending output's own
	// file (File), as a worker process writes it through the descriptor it was passed.
	WriteOutputThroughFile(jobID string, attempt int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error)
	// DownloadURL is the URL that serves the output of the job's attempt until expires.
	DownloadURL(jobID string, attempt int, out blobstore.Output, meta blobstore.OutputMeta, expires time.Time) (string, error)
	// Delete removes everything of the job.
	Delete(jobID string) error
	// JobIDs lists the ids of the jobs that have any object.
	JobIDs() ([]string, error)
	// JobIDsAfter is JobIDs from the first id after after, at most limit ids.
	JobIDsAfter(after string, limit int) ([]string, error)
	// InputIDsAfter lists, from the first id after after and at most limit, the ids of the
	// jobs that have an upload or a sealed input.
	InputIDsAfter(after string, limit int) ([]string, error)
	// Check is the readiness check.
	Check() error
}

// Run runs the suite; newBackend returns a fresh, empty backend for each subtest.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Run("UploadExactSize", func(t *testing.T) { testUploadExactSize(t, newBackend(t)) })
	t.Run("UploadReplacedBeforeSeal", func(t *testing.T) { testUploadReplaced(t, newBackend(t)) })
	t.Run("PutAfterSealChangesNothing", func(t *testing.T) { testPutAfterSeal(t, newBackend(t)) })
	t.Run("UploadSHA256", func(t *testing.T) { testUploadSHA256(t, newBackend(t)) })
	t.Run("UploadWrongLength", func(t *testing.T) { testUploadWrongLength(t, newBackend(t)) })
	t.Run("UploadExpired", func(t *testing.T) { testUploadExpired(t, newBackend(t)) })
	t.Run("UploadTampered", func(t *testing.T) { testUploadTampered(t, newBackend(t)) })
	t.Run("SealNothingUploaded", func(t *testing.T) { testSealNothing(t, newBackend(t)) })
	t.Run("OutputDownload", func(t *testing.T) { testOutputDownload(t, newBackend(t)) })
	t.Run("OutputWrittenThroughFile", func(t *testing.T) { testOutputThroughFile(t, newBackend(t)) })
	t.Run("DownloadExpired", func(t *testing.T) { testDownloadExpired(t, newBackend(t)) })
	t.Run("DeleteRemovesEverything", func(t *testing.T) { testDelete(t, newBackend(t)) })
	t.Run("JobIDs", func(t *testing.T) { testJobIDs(t, newBackend(t)) })
	t.Run("IDsAfter", func(t *testing.T) { testIDsAfter(t, newBackend(t)) })
	t.Run("Check", func(t *testing.T) {
		if err := newBackend(t).Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
	})
}

// Result is an HTTP answer as the suite saw it.
type Result struct {
	Status int
	Header http.Header
	Body   []byte
	// Cut is set, with Status 0, when the server closed the connection while the request
	// was still being sent: a server may refuse a body early (an S3 server answering 403
	// to a chunked PUT) and close before the client reads the answer. That is a refusal.
	Cut error
}

// Put PUTs body to u with Content-Length len(body), as a client does.
func Put(t testing.TB, u string, body []byte) Result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// PutChunked PUTs body to u with chunked transfer encoding, without Content-Length.
func PutChunked(t testing.TB, u string, body []byte) Result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, io.MultiReader(bytes.NewReader(body))) // length unknown: chunked
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != 0 || req.TransferEncoding != nil {
		t.Fatalf("request length %d, %v: want an unknown length", req.ContentLength, req.TransferEncoding)
	}
	return do(t, req)
}

// PutCut sends a PUT to u that announces length bytes, sends only part, and closes its side;
// it returns once the server has closed the connection (so it is done with the request).
func PutCut(t testing.TB, u string, length int64, part []byte) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", pu.Host, 30*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", pu.Host, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", pu.RequestURI(), pu.Host, length)
	if _, err := conn.Write(part); err != nil {
		t.Fatalf("write part: %v", err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("close write: %v", err)
	}
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("waiting for the server to close the cut PUT: %v", err)
	}
}

// Get GETs u with extra headers (name, value pairs).
func Get(t testing.TB, u string, header ...string) Result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) Result {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		if req.Method == http.MethodPut && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
			return Result{Cut: err}
		}
		t.Fatalf("%s %s: %v", req.Method, redact(req.URL), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, redact(req.URL), err)
	}
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// redact drops the query (the signature) from a URL for messages.
func redact(u *url.URL) string { c := *u; c.RawQuery = ""; return c.String() }

var idSeq = func() string { b := make([]byte, 6); _, _ = rand.Read(b); return hex.EncodeToString(b) }

// NewJobID returns a fresh valid job id.
func NewJobID() string { return "job_" + idSeq() }

// RandomBytes returns n random bytes.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Upload presigns and PUTs data for a new job and fails t unless it is stored (2xx).
func Upload(t testing.TB, b Backend, jobID string, data []byte) {
	t.Helper()
	u, err := b.UploadURL(jobID, int64(len(data)), time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatalf("UploadURL: %v", err)
	}
	if r := Put(t, u, data); r.Status/100 != 2 {
		t.Fatalf("PUT upload: %d %s", r.Status, r.Body)
	}
}

// wantNothingSealed asserts that Seal finds nothing uploaded for the job.
func wantNothingSealed(t *testing.T, b Backend, jobID string) {
	t.Helper()
	size, err := b.Seal(jobID)
	if !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("Seal = %d, %v; want nothing uploaded (blobstore.ErrNotFound)", size, err)
	}
}

func want4xx(t *testing.T, what string, r Result) {
	t.Helper()
	if r.Cut != nil {
		t.Logf("%s: refused, the server closed the connection mid-body (%v)", what, r.Cut)
		return
	}
	if r.Status < 400 || r.Status > 499 {
		t.Fatalf("%s: status %d, want 4xx; body %s", what, r.Status, r.Body)
	}
	t.Logf("%s: %d %s", what, r.Status, errorCode(r.Body))
}

// errorCode picks the error code out of a JSON ("code":"...") or S3 XML (<Code>...</Code>)
// error body, for the log that documents each backend's answers.
func errorCode(body []byte) string {
	s := string(body)
	for _, m := range [][2]string{{`"code":"`, `"`}, {"<Code>", "</Code>"}} {
		if _, rest, ok := strings.Cut(s, m[0]); ok {
			if code, _, ok := strings.Cut(rest, m[1]); ok {
				return code
			}
		}
	}
	return ""
}

func testUploadExactSize(t *testing.T, b Backend) {
	id := NewJobID()
	data := RandomBytes(1000)
	Upload(t, b, id, data)
	size, err := b.Seal(id)
	if err != nil || size != 1000 {
		t.Fatalf("Seal = %d, %v; want 1000, nil", size, err)
	}
	// An empty file is a valid upload of 0 bytes.
	id0 := NewJobID()
	Upload(t, b, id0, nil)
	if size, err := b.Seal(id0); err != nil || size != 0 {
		t.Fatalf("Seal of an empty upload = %d, %v; want 0, nil", size, err)
	}
}

// testUploadSHA256: the hash a sealed upload reports is its bytes' SHA-256, also of an empty
// upload and of an upload that replaced another before the start.
func testUploadSHA256(t *testing.T, b Backend) {
	hexSum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	id := NewJobID()
	data := RandomBytes(3<<20 + 17) // several of the local store's chunks
	Upload(t, b, id, data)
	if _, err := b.Seal(id); err != nil {
		t.Fatal(err)
	}
	if got, err := b.UploadSHA256(id); err != nil || got != hexSum(data) {
		t.Fatalf("UploadSHA256 = %q, %v; want %s", got, err, hexSum(data))
	}
	id0 := NewJobID()
	Upload(t, b, id0, nil)
	if _, err := b.Seal(id0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.UploadSHA256(id0); err != nil || got != hexSum(nil) {
		t.Fatalf("UploadSHA256 of an empty upload = %q, %v; want %s", got, err, hexSum(nil))
	}
	idr := NewJobID()
	first, second := RandomBytes(1000), RandomBytes(1000)
	Upload(t, b, idr, first)
	Upload(t, b, idr, second)
	if _, err := b.Seal(idr); err != nil {
		t.Fatal(err)
	}
	if got, err := b.UploadSHA256(idr); err != nil || got != hexSum(second) {
		t.Fatalf("UploadSHA256 after a replacing PUT = %q, %v; want the second upload's %s", got, err, hexSum(second))
	}
}

// testUploadReplaced: until the start, a second PUT through the same URL replaces the first.
func testUploadReplaced(t *testing.T, b Backend) {
	id := NewJobID()
	u, err := b.UploadURL(id, 64, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if u2, _ := b.UploadURL(id, 64, time.Now().Add(10*time.Minute).Add(time.Second)); u2 == u {
		t.Errorf("UploadURL ignores expires: the same URL for two expiry times")
	}
	for i := range 2 {
		if r := Put(t, u, RandomBytes(64)); r.Status/100 != 2 {
			t.Fatalf("PUT %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if size, err := b.Seal(id); err != nil || size != 64 {
		t.Fatalf("Seal = %d, %v; want 64, nil", size, err)
	}
}

// testPutAfterSeal: a PUT through the upload URL after the start (a client retrying a PUT
// whose answer it lost), with other bytes of the same size, is refused or lands where it
// changes nothing: the sealed input reads back as the bytes uploaded before the start, also
// after a second Seal (a repeated start).
func testPutAfterSeal(t *testing.T, b Backend) {
	id := NewJobID()
	orig, later := RandomBytes(100_000), RandomBytes(100_000)
	u, err := b.UploadURL(id, int64(len(orig)), time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r := Put(t, u, orig); r.Status/100 != 2 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if size, err := b.Seal(id); err != nil || size != int64(len(orig)) {
		t.Fatalf("Seal = %d, %v; want %d, nil", size, err, len(orig))
	}
	Put(t, u, later)  // refused (the local store) or stored under the upload key (S3)
	_, _ = b.Seal(id) // a repeated start: may fail or copy; the sealed input must stay
	got, err := b.ReadInput(id)
	if err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("ReadInput after a PUT after the start = %d bytes, %v; want the %d bytes sealed", len(got), err, len(orig))
	}
}

func testUploadWrongLength(t *testing.T, b Backend) {
	id := NewJobID()
	u, err := b.UploadURL(id, 1000, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want4xx(t, "PUT 1001 bytes to a URL for 1000", Put(t, u, RandomBytes(1001)))
	want4xx(t, "PUT 999 bytes to a URL for 1000", Put(t, u, RandomBytes(999)))
	want4xx(t, "PUT 0 bytes to a URL for 1000", Put(t, u, nil))
	want4xx(t, "PUT 1000 bytes chunked (no Content-Length)", PutChunked(t, u, RandomBytes(1000)))
	PutCut(t, u, 1000, RandomBytes(10))
	wantNothingSealed(t, b, id)
	// A wrong-length PUT after a good one leaves the good one in place.
	good := RandomBytes(1000)
	if r := Put(t, u, good); r.Status/100 != 2 {
		t.Fatalf("PUT 1000 bytes: %d %s", r.Status, r.Body)
	}
	want4xx(t, "PUT 1001 bytes after a good upload", Put(t, u, RandomBytes(1001)))
	PutCut(t, u, 1000, RandomBytes(500))
	if size, err := b.Seal(id); err != nil || size != 1000 {
		t.Fatalf("Seal = %d, %v; want 1000, nil", size, err)
	}
}

func testUploadExpired(t *testing.T, b Backend) {
	id := NewJobID()
	u, err := b.UploadURL(id, 10, time.Now().Add(-2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want4xx(t, "PUT to an expired URL", Put(t, u, RandomBytes(10)))
	wantNothingSealed(t, b, id)
}

func testUploadTampered(t *testing.T, b Backend) {
	id := NewJobID()
	u, err := b.UploadURL(id, 10, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	sigName := ""
	for _, name := range []string{"sig", "X-Amz-Signature"} {
		if q.Has(name) {
			sigName = name
		}
	}
	if sigName == "" {
		t.Fatalf("no signature parameter in the upload URL's query (%v)", slices.Collect(mapsKeys(q)))
	}
	sig := []byte(q.Get(sigName))
	sig[0] = map[bool]byte{true: '1', false: '0'}[sig[0] == '0']
	q.Set(sigName, string(sig))
	tampered := *pu
	tampered.RawQuery = q.Encode()
	want4xx(t, "PUT with a changed signature", Put(t, tampered.String(), RandomBytes(10)))

	// Another job's URL does not upload to this job.
	other, err := b.UploadURL(NewJobID(), 10, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	po, _ := url.Parse(other)
	moved := *pu
	moved.RawQuery = po.RawQuery
	want4xx(t, "PUT with another job's signature", Put(t, moved.String(), RandomBytes(10)))
	wantNothingSealed(t, b, id)
}

func mapsKeys(v url.Values) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range v {
			if !yield(k) {
				return
			}
		}
	}
}

func testSealNothing(t *testing.T, b Backend) {
	wantNothingSealed(t, b, NewJobID())
}

// testOutputThroughFile: an output another writer put into the pending output's file is
// stored with its size and SHA-256 and downloads whole.
func testOutputThroughFile(t *testing.T, b Backend) {
	id := NewJobID()
	data := RandomBytes(3<<20 + 5)
	meta := blobstore.OutputMeta{ContentType: "image/jpeg", Filename: id + ".jpg"}
	out, err := b.WriteOutputThroughFile(id, 1, data, meta)
	if err != nil {
		t.Fatalf("WriteOutputThroughFile: %v", err)
	}
	sum := sha256.Sum256(data)
	if out.Bytes != int64(len(data)) || out.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("Commit = %+v; want %d bytes, sha256 %x", out, len(data), sum)
	}
	u, err := b.DownloadURL(id, 1, out, meta, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r := Get(t, u)
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, data) {
		t.Fatalf("download: status %d, %d bytes; want 200 and the %d bytes written", r.Status, len(r.Body), len(data))
	}
}

// FileOutput is a pending output whose own file another writer fills (both stores'
// PendingOutput.File).
type FileOutput interface {
	File() (*os.File, error)
	Commit(blobstore.OutputMeta) (blobstore.Output, error)
	Discard()
}

// CommitThroughFile writes data into out's file in uneven writes, as an encoder in a worker
// process writes the descriptor it was passed, and commits it; out is discarded on any error.
func CommitThroughFile(out FileOutput, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error) {
	defer out.Discard()
	f, err := out.File()
	if err != nil {
		return blobstore.Output{}, err
	}
	for len(data) > 0 {
		n := min(len(data), 100_003)
		if _, err := f.Write(data[:n]); err != nil {
			return blobstore.Output{}, err
		}
		data = data[n:]
	}
	return out.Commit(meta)
}

func testOutputDownload(t *testing.T, b Backend) {
	id := NewJobID()
	data := RandomBytes(3000)
	meta := blobstore.OutputMeta{ContentType: "image/webp", Filename: id + ".webp"}
	out, err := b.WriteOutput(id, 1, data, meta)
	if err != nil {
		t.Fatalf("WriteOutput: %v", err)
	}
	sum := sha256.Sum256(data)
	if out.Bytes != 3000 || out.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("Commit = %+v; want 3000 bytes, sha256 %x", out, sum)
	}
	u, err := b.DownloadURL(id, 1, out, meta, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatalf("DownloadURL: %v", err)
	}
	r := Get(t, u)
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, data) {
		t.Fatalf("GET output: %d, %d bytes; want 200 and the 3000 bytes written", r.Status, len(r.Body))
	}
	if ct := r.Header.Get("Content-Type"); ct != "image/webp" {
		t.Errorf("Content-Type = %q, want image/webp", ct)
	}
	disp, params, err := mime.ParseMediaType(r.Header.Get("Content-Disposition"))
	if err != nil || disp != "attachment" || params["filename"] != id+".webp" {
		t.Errorf("Content-Disposition = %q; want attachment with filename %s.webp", r.Header.Get("Content-Disposition"), id)
	}
	if r.Header.Get("ETag") == "" {
		t.Errorf("no ETag on the download")
	}
	r = Get(t, u, "Range", "bytes=100-199")
	if r.Status != http.StatusPartialContent || !bytes.Equal(r.Body, data[100:200]) {
		t.Fatalf("GET Range bytes=100-199: %d, %d bytes; want 206 and bytes 100..199", r.Status, len(r.Body))
	}
	if cr := r.Header.Get("Content-Range"); cr != "bytes 100-199/3000" {
		t.Errorf("Content-Range = %q, want bytes 100-199/3000", cr)
	}
	// A tampered download URL is refused.
	pu, _ := url.Parse(u)
	pu.Path = strings.Replace(pu.Path, id, id+"x", 1)
	want4xx(t, "GET with a changed path", Get(t, pu.String()))
}

func testDownloadExpired(t *testing.T, b Backend) {
	id := NewJobID()
	meta := blobstore.OutputMeta{ContentType: "text/plain", Filename: id + ".txt"}
	out, err := b.WriteOutput(id, 1, []byte("hello"), meta)
	if err != nil {
		t.Fatal(err)
	}
	u, err := b.DownloadURL(id, 1, out, meta, time.Now().Add(-2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := Get(t, u)
	want4xx(t, "GET an expired download URL", r)
	if bytes.Contains(r.Body, []byte("hello")) {
		t.Fatalf("an expired URL served the output")
	}
}

func testDelete(t *testing.T, b Backend) {
	id := NewJobID()
	other := id + "0" // its id starts with id's: Delete must not touch it
	for _, j := range []string{id, other} {
		Upload(t, b, j, RandomBytes(100))
	}
	meta := blobstore.OutputMeta{ContentType: "text/plain"}
	var urls []string
	for attempt := 1; attempt <= 2; attempt++ {
		out, err := b.WriteOutput(id, attempt, []byte(fmt.Sprintf("attempt %d", attempt)), meta)
		if err != nil {
			t.Fatal(err)
		}
		u, err := b.DownloadURL(id, attempt, out, meta, time.Now().Add(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	if err := b.Delete(id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantNothingSealed(t, b, id)
	for i, u := range urls {
		want4xx(t, fmt.Sprintf("GET attempt %d's output after Delete", i+1), Get(t, u))
	}
	ids, err := b.JobIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{other}) {
		t.Fatalf("JobIDs after Delete(%s) = %v; want only %s", id, ids, other)
	}
	if size, err := b.Seal(other); err != nil || size != 100 {
		t.Fatalf("Seal(%s) after Delete(%s) = %d, %v; want 100, nil", other, id, size, err)
	}
	if err := b.Delete(id); err != nil {
		t.Fatalf("Delete of a deleted job: %v", err)
	}
	if err := b.Delete(NewJobID()); err != nil {
		t.Fatalf("Delete of an unknown job: %v", err)
	}
}

func testJobIDs(t *testing.T, b Backend) {
	ids, err := b.JobIDs()
	if err != nil || len(ids) != 0 {
		t.Fatalf("JobIDs of an empty store = %v, %v; want none", ids, err)
	}
	up, outOnly := NewJobID(), NewJobID()
	Upload(t, b, up, RandomBytes(5))
	if _, err := b.WriteOutput(outOnly, 1, []byte("x"), blobstore.OutputMeta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteOutput(outOnly, 2, []byte("y"), blobstore.OutputMeta{}); err != nil {
		t.Fatal(err)
	}
	want := []string{up, outOnly}
	slices.Sort(want)
	ids, err = b.JobIDs()
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("JobIDs = %v, %v; want %v", ids, err, want)
	}
}

// testIDsAfter walks JobIDsAfter and InputIDsAfter in turns of every size from 1 to past the
// listing's end: the turns together are the listing, each full but the last, none repeats an
// id (an id with several objects, an output of two attempts, is listed once), and a turn
// after an id that has no object starts at the next one.
func testIDsAfter(t *testing.T, b Backend) {
	if ids, err := b.JobIDsAfter("", 3); err != nil || len(ids) != 0 {
		t.Fatalf("JobIDsAfter of an empty store = %v, %v; want none", ids, err)
	}
	var all, inputs []string
	for i := range 7 {
		id := NewJobID()
		all = append(all, id)
		switch i % 3 {
		case 0: // an upload
			Upload(t, b, id, RandomBytes(5))
			inputs = append(inputs, id)
		case 1: // an upload, sealed, and an output
			Upload(t, b, id, RandomBytes(5))
			if _, err := b.Seal(id); err != nil {
				t.Fatal(err)
			}
			if _, err := b.WriteOutput(id, 1, []byte("x"), blobstore.OutputMeta{}); err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, id)
		case 2: // the outputs of two attempts only
			for attempt := 1; attempt <= 2; attempt++ {
				if _, err := b.WriteOutput(id, attempt, []byte("y"), blobstore.OutputMeta{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	slices.Sort(all)
	slices.Sort(inputs)
	for _, l := range []struct {
		name string
		list func(after string, limit int) ([]string, error)
		want []string
	}{{"JobIDsAfter", b.JobIDsAfter, all}, {"InputIDsAfter", b.InputIDsAfter, inputs}} {
		for limit := 1; limit <= len(l.want)+1; limit++ {
			var got []string
			after := ""
			for {
				page, err := l.list(after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("%s(%q, %d) = %d ids", l.name, after, limit, len(page))
				}
				got = append(got, page...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1]
			}
			if !slices.Equal(got, l.want) {
				t.Fatalf("%s in turns of %d = %v; want %v", l.name, limit, got, l.want)
			}
		}
		// After an id with no object, between the first and the second (the ids are all
		// as long): from the second on.
		gap := l.want[0] + "0"
		if page, err := l.list(gap, 2); err != nil || !slices.Equal(page, l.want[1:3]) {
			t.Fatalf("%s(%q, 2) = %v, %v; want %v", l.name, gap, page, err, l.want[1:3])
		}
	}
}
