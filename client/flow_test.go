package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// faults passes requests to the real server, except that it answers the first request matching
// each rule with the rule's status and error body.
type faults struct {
	mu    sync.Mutex
	rules []*fault
}

type fault struct {
	method, pathPrefix string
	status             int
	code, retryAfter   string
	times              int // how many more requests to answer with the fault
	hits               int
}

func (f *faults) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	for _, rule := range f.rules {
		if rule.times > 0 && r.Method == rule.method && strings.HasPrefix(r.URL.Path, rule.pathPrefix) {
			rule.times--
			rule.hits++
			f.mu.Unlock()
			if r.Body != nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
			h := http.Header{"Content-Type": {"application/json"}}
			if rule.retryAfter != "" {
				h.Set("Retry-After", rule.retryAfter)
			}
			body := `{"error":{"code":"` + rule.code + `","message":"injected"}}`
			return &http.Response{StatusCode: rule.status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}
	}
	f.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestConvert_RetriesThrough429And502(t *testing.T) {
	c, _, stop, err := startServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	create := &fault{method: "POST", pathPrefix: "/v1/jobs", status: 429, code: "rate_limited", retryAfter: "1", times: 1}
	upload := &fault{method: "PUT", pathPrefix: "/", status: 502, code: "storage_unavailable", times: 1}
	download := &fault{method: "GET", pathPrefix: "/outputs/", status: 502, code: "storage_unavailable", times: 1}
	inj := &faults{rules: []*fault{create, upload, download}}
	c.HTTP = &http.Client{Transport: inj}
	c.RetryBackoff = 10 * time.Millisecond

	png, err := os.ReadFile("../testdata/images/sample.png")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	var out bytes.Buffer
	job, err := c.Convert(ctx, bytes.NewReader(png), int64(len(png)), "png", "jpeg", &out)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != client.StatusSucceeded || int64(out.Len()) != job.Output.Bytes || !bytes.HasPrefix(out.Bytes(), []byte{0xFF, 0xD8}) {
		t.Fatalf("job %+v, %d bytes out", job, out.Len())
	}
	if create.hits != 1 || upload.hits != 1 || download.hits != 1 {
		t.Fatalf("faults injected: create %d, upload %d, download %d; want 1 each", create.hits, upload.hits, download.hits)
	}
	if time.Since(began) < time.Second {
		t.Fatalf("Convert took %v: the 429's Retry-After of 1s was not honoured", time.Since(began))
	}
}

// A failure that is not retried (a 502 on an upload that cannot be rewound) cancels the job,
// so that its reservation is released at once.
func TestConvert_FailureCancelsTheJob(t *testing.T) {
	c, _, stop, err := startServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c.HTTP = &http.Client{Transport: &faults{rules: []*fault{{method: "PUT", pathPrefix: "/", status: 502, code: "storage_unavailable", times: 1}}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	job, err := c.Convert(ctx, io.MultiReader(strings.NewReader("not seekable")), 12, "png", "jpeg", &out)
	if !client.IsCode(err, client.CodeStorageUnavailable) {
		t.Fatalf("err %v, want storage_unavailable", err)
	}
	if job.Status != client.StatusCancelled || job.Error() != "cancelled" {
		t.Fatalf("job %s %q, want cancelled", job.Status, job.Error())
	}
	got, err := c.GetJob(ctx, job.ID, 0)
	if err != nil || got.Status != client.StatusCancelled {
		t.Fatalf("server has the job %s (%v), want cancelled", got.Status, err)
	}
}

// TestClient_FileStaysOpenAfterConvertAndUpload: the README's lines with a real file on a real
// server. Convert, then the step-by-step flow with the same *os.File, then reading it: the
// client never closes the caller's file nor moves its offset (net/http closes a request body,
// and an *os.File handed to it as one was closed after the first upload, so the next use
// failed with "file already closed").
func TestClient_FileStaysOpenAfterConvertAndUpload(t *testing.T) {
	e := testenv.Start(t)
	c := &client.Client{BaseURL: e.URL, Key: e.Key}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want, in := openSample(t)
	size := int64(len(want))

	var out bytes.Buffer
	if job, err := c.Convert(ctx, in, size, "png", "jpeg", &out); err != nil || job.Status != client.StatusSucceeded {
		t.Fatalf("Convert: %v (job %s)", err, job.Status)
	}
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "webp", InputBytes: size}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upload(ctx, res.UploadURL, in, size); err != nil {
		t.Fatalf("Upload of the file Convert used: %v", err)
	}
	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
		t.Fatal(err)
	}
	if job, err := c.WaitJob(ctx, res.Job.ID, nil); err != nil || job.Status != client.StatusSucceeded {
		t.Fatalf("the uploaded file's job: %v %s", err, job.Error())
	}
	// Still open, still at offset 0: reading it gives the whole file.
	got, err := io.ReadAll(in)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("reading the file after the uploads: %d bytes, %v; want the %d bytes of the file", len(got), err, len(want))
	}
	if err := in.Close(); err != nil {
		t.Fatalf("closing the file: %v (the client closed it)", err)
	}
}

// TestClient_UploadOfAFileIsRetried: the storage listener's connection cap answers the upload
// 503 too_many_connections (its real answer, before the request is read): Convert tells
// OnRetry, sends the file again after the Retry-After, and the job succeeds with the file's
// bytes; the file stays open. Before, net/http closed the file with the first attempt and the
// retry failed with "file already closed", without OnRetry hearing of it.
func TestClient_UploadOfAFileIsRetried(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the local storage listener's connection cap")
	const perAddr = 2
	e := testenv.Start(t, func(c *service.Config) { c.MaxConnectionsPerAddress = perAddr })
	// Hold every connection 127.0.0.1 may have open on the storage listener.
	held := testenv.HoldConnections(t, strings.TrimPrefix(e.Main.BlobURL(), "http://"), "/uploads/job_x", perAddr)
	var mu sync.Mutex
	var retries []*client.APIError
	c := &client.Client{BaseURL: e.URL, Key: e.Key, OnRetry: func(_ time.Duration, err *client.APIError) {
		mu.Lock()
		defer mu.Unlock()
		retries = append(retries, err)
		for _, conn := range held { // give the places back: the retry gets in
			conn.Close()
		}
	}}
	want, in := openSample(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	job, err := c.Convert(ctx, in, int64(len(want)), "png", "jpeg", &out)
	if err != nil || job.Status != client.StatusSucceeded || !bytes.HasPrefix(out.Bytes(), []byte{0xFF, 0xD8}) {
		t.Fatalf("Convert: %v (job %s, %d bytes out)", err, job.Status, out.Len())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) == 0 || retries[0].Status != http.StatusServiceUnavailable || retries[0].Code != client.CodeTooManyConnections {
		t.Fatalf("OnRetry saw %+v, want the upload's 503 too_many_connections first", retries)
	}
	if _, err := in.Stat(); err != nil {
		t.Fatalf("the file after a retried upload: %v", err)
	}
}

// openSample writes images/sample.png to a file of the test and opens it (closed at cleanup,
// which tolerates a file the test closed itself); it returns the bytes and the file.
func openSample(t *testing.T) ([]byte, *os.File) {
	t.Helper()
	want := testenv.Sample(t, "images/sample.png")
	path := filepath.Join(t.TempDir(), "photo.png")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return want, in
}
