package service_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/service"
)

// s3Proxy forwards to an S3 server on an address of its own, so a test can take "the S3
// server" away and bring it back. The Host header is kept, so presigned URLs stay valid.
type s3Proxy struct {
	t    *testing.T
	addr string
	srv  *http.Server
}

func newS3Proxy(t *testing.T, endpoint string) *s3Proxy {
	t.Helper()
	p := &s3Proxy{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln, endpoint)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

func (p *s3Proxy) serve(ln net.Listener, endpoint string) {
	target, err := url.Parse(endpoint)
	if err != nil {
		p.t.Fatal(err)
	}
	p.srv = &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go p.srv.Serve(ln)
}

// stop closes the proxy: every request to it is refused.
func (p *s3Proxy) stop() { p.srv.Close() }

// restart listens on the same address again.
func (p *s3Proxy) restart(endpoint string) {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ln, err = net.Listen("tcp", p.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("listen on %s again: %v", p.addr, err)
	}
	p.serve(ln, endpoint)
}

// TestS3_StorageUnavailable: when the S3 server does not answer, start answers 502
// storage_unavailable and leaves the job created, /readyz answers 503 naming object storage;
// once S3 is back, the same job starts and converts.
func TestS3_StorageUnavailable(t *testing.T) {
	var proxy *s3Proxy
	var endpoint string
	e := testenv.Start(t, testenv.S3(t), func(c *service.Config) {
		endpoint = c.S3.Endpoint
		proxy = newS3Proxy(t, endpoint)
		c.S3.Endpoint = "http://" + proxy.addr
	})
	data := testenv.Sample(t, "images/sample.png")
	res := e.Create(e.Key, "png", "jpeg", int64(len(data)))
	if !strings.HasPrefix(res.UploadURL, "http://"+proxy.addr+"/") {
		t.Fatalf("upload URL %s is not on the configured endpoint", res.UploadURL)
	}
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	if r := e.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz with S3 up: %d %s", r.Status, r.Body)
	}

	proxy.stop()
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 502, "storage_unavailable")
	if j := e.Get(e.Key, res.Job.ID, 0); j.Status != "created" {
		t.Fatalf("job %s after a failed start, want created", j.Status)
	}
	r := e.Do("GET", "/readyz", "", nil)
	if r.Status != 503 || !strings.Contains(string(r.Body), "object storage") {
		t.Fatalf("readyz with S3 down: %d %s, want 503 naming object storage", r.Status, r.Body)
	}

	proxy.restart(endpoint)
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	if j := e.Get(e.Key, res.Job.ID, 60); j.Status != "succeeded" {
		t.Fatalf("job %s %s %s once S3 is back", j.Status, deref((*string)(j.ErrorCode)), deref(j.ErrorMessage))
	}
	if r := e.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz with S3 back: %d %s", r.Status, r.Body)
	}
}

// TestS3_PutAfterStartChangesNothing: in an unversioned and in a versioned bucket, other bytes
// of the same size PUT through the upload URL after start (a client retrying a PUT whose answer
// it lost; the URL cannot be revoked) are not what the job converts, also after a repeated
// start: the output is the one the uploaded file gives, and the download presigns the key of
// the attempt that wrote it.
func TestS3_PutAfterStartChangesNothing(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		t.Run(map[bool]string{false: "Unversioned", true: "Versioned"}[versioned], func(t *testing.T) {
			testPutAfterStart(t, versioned)
		})
	}
}

func testPutAfterStart(t *testing.T, versioned bool) {
	e := testenv.Start(t, testenv.S3With(t, tests3.Options{Versioned: versioned}))
	data := testenv.Sample(t, "images/sample.png")
	want := e.Convert(e.Key, "png", "jpeg", data)
	if want.Status != "succeeded" {
		t.Fatalf("reference job %+v", want)
	}

	res := e.Create(e.Key, "png", "jpeg", int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	testenv.MustStatus(t, e.Upload(res.UploadURL, bytes.Repeat([]byte{'x'}, len(data))), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	got := e.Get(e.Key, res.Job.ID, 60)
	if got.Status != "succeeded" || got.Output == nil {
		t.Fatalf("job %s %s %s, want succeeded", got.Status, deref((*string)(got.ErrorCode)), deref(got.ErrorMessage))
	}
	if got.Output.SHA256 != want.Output.SHA256 {
		t.Fatalf("output %s, want %s (the conversion of the file uploaded before start)", got.Output.SHA256, want.Output.SHA256)
	}
	if !strings.Contains(got.Output.URL, "/convsvc/outputs/"+got.ID+"/1?") {
		t.Fatalf("download URL %s does not name attempt 1's output", got.Output.URL)
	}
	resp, err := http.Get(got.Output.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := sha256.Sum256(body)
	if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != want.Output.SHA256 {
		t.Fatalf("download: %d, %d bytes with SHA-256 %x", resp.StatusCode, len(body), sum)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, got.ID+".jpg") {
		t.Fatalf("Content-Disposition %q, want the job's filename", cd)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
