package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
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
