package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// scripted answers each request with the next status of script (then 200 with a job), and
// counts requests.
func scripted(t *testing.T, script ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(script) {
			script[i](w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"job_1","status":"queued"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func apiError(status int, code string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_test")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"m"}}`, code)
	}
}

func TestClient_429HonoursRetryAfter(t *testing.T) {
	srv, n := scripted(t, apiError(429, "rate_limited", "Retry-After", "1"))
	c := &Client{BaseURL: srv.URL, Key: "k"}
	start := time.Now()
	job, err := c.StartJob(context.Background(), "job_1")
	took := time.Since(start)
	if err != nil || job.Status != "queued" {
		t.Fatalf("%+v %v", job, err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d attempts, want 2", n.Load())
	}
	// Not before the Retry-After; the upper bound only catches a much longer wait, since the
	// machine may be busy (issue 24).
	if took < time.Second || took > testtime.Scale(10*time.Second) {
		t.Fatalf("retried after %v, want the 1 s Retry-After", took)
	}
}

func TestClient_502BacksOffThenSucceeds(t *testing.T) {
	srv, n := scripted(t, apiError(502, "storage_unavailable"), apiError(502, "storage_unavailable"))
	c := &Client{BaseURL: srv.URL, Key: "k", RetryBackoff: 20 * time.Millisecond}
	start := time.Now()
	if _, err := c.StartJob(context.Background(), "job_1"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if n.Load() != 3 {
		t.Fatalf("%d attempts, want 3", n.Load())
	}
	// Backoffs of [10,20] ms and [20,40] ms.
	if took < 30*time.Millisecond || took > testtime.Scale(10*time.Second) {
		t.Fatalf("took %v", took)
	}
}

// The connection cap's 503 is answered before the request is read: the call is sent again
// after its Retry-After. Any other 503 (a proxy in front of convsvc, say) is not retried.
func TestClient_TooManyConnectionsIsRetried(t *testing.T) {
	srv, n := scripted(t, apiError(503, "too_many_connections", "Retry-After", "1"))
	c := &Client{BaseURL: srv.URL, Key: "k"}
	start := time.Now()
	if _, err := c.StartJob(context.Background(), "job_1"); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d attempts, want 2", n.Load())
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("retried after %v, want the 1 s Retry-After", took)
	}

	srv, n = scripted(t, apiError(503, "upstream_unavailable", "Retry-After", "1"))
	c = &Client{BaseURL: srv.URL, Key: "k"}
	if _, err := c.StartJob(context.Background(), "job_1"); !IsCode(err, "upstream_unavailable") || n.Load() != 1 {
		t.Fatalf("err %v after %d attempts, want upstream_unavailable after 1", err, n.Load())
	}
}

func TestClient_400IsNotRetried(t *testing.T) {
	srv, n := scripted(t, apiError(400, "unsupported_format"))
	c := &Client{BaseURL: srv.URL, Key: "k"}
	_, err := c.CreateJob(context.Background(), CreateJobRequest{InputFormat: "png", TargetFormat: "rar", InputBytes: 1}, "")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.RequestID != "req_test" || !IsCode(err, "unsupported_format") {
		t.Fatalf("error %#v", err)
	}
	if IsCode(err, "rate_limited") || IsCode(errors.New("x"), "unsupported_format") {
		t.Fatal("IsCode matches what it should not")
	}
	if n.Load() != 1 {
		t.Fatalf("%d attempts, want 1", n.Load())
	}
}

func TestClient_RetriesRunOut(t *testing.T) {
	srv, n := scripted(t, apiError(502, "storage_unavailable"), apiError(502, "storage_unavailable"), apiError(502, "storage_unavailable"))
	c := &Client{BaseURL: srv.URL, Retries: 2, RetryBackoff: time.Millisecond}
	if _, err := c.StartJob(context.Background(), "job_1"); !IsCode(err, "storage_unavailable") {
		t.Fatalf("error %v", err)
	}
	if n.Load() != 3 {
		t.Fatalf("%d attempts, want 3", n.Load())
	}
	srv, n = scripted(t, apiError(429, "rate_limited"))
	c = &Client{BaseURL: srv.URL, Retries: -1}
	if _, err := c.StartJob(context.Background(), "job_1"); !IsCode(err, "rate_limited") || n.Load() != 1 {
		t.Fatalf("Retries -1: %v after %d attempts", err, n.Load())
	}
}

func TestClient_WaitsNoLongerThanTheContext(t *testing.T) {
	srv, n := scripted(t, apiError(429, "rate_limited", "Retry-After", "30"))
	c := &Client{BaseURL: srv.URL}
	// A deadline well short of the 30 s Retry-After but long enough for one request on a busy
	// machine (issue 24): giving up at once, not waiting for the deadline, returns well before it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.StartJob(ctx, "job_1")
	if !IsCode(err, "rate_limited") || time.Since(start) > 10*time.Second || n.Load() != 1 {
		t.Fatalf("a Retry-After past the deadline: %v after %v, %d attempts", err, time.Since(start), n.Load())
	}
	var apiErr *APIError
	if errors.As(err, &apiErr); apiErr.RetryAfter != 30*time.Second {
		t.Fatalf("RetryAfter %v", apiErr.RetryAfter)
	}

	// Cancelled while waiting: the context's error, saying what it waited for.
	srv, _ = scripted(t, apiError(502, "storage_unavailable"))
	c = &Client{BaseURL: srv.URL, RetryBackoff: 5 * time.Second}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.StartJob(ctx, "job_1")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "storage_unavailable") {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestClient_NonAPIErrorBody(t *testing.T) {
	srv, _ := scripted(t, func(w http.ResponseWriter) { w.WriteHeader(404); io.WriteString(w, "<html>nope</html>") })
	_, err := (&Client{BaseURL: srv.URL}).GetJob(context.Background(), "job_1", 0)
	if !IsCode(err, "http_404") {
		t.Fatalf("%v", err)
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{RetryBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		for i := 0; i < 50; i++ {
			if d := c.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := (&Client{}).backoff(100); d > 10*time.Second {
		t.Fatalf("uncapped %v", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "-1": 0, "x": 0,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// WaitOutRateLimit retries a 429 with Retry-After beyond Retries, telling OnRetry each wait;
// a 429 without Retry-After still counts against Retries.
func TestClient_WaitOutRateLimit(t *testing.T) {
	limited := apiError(429, "rate_limited", "Retry-After", "1")
	srv, n := scripted(t, limited, limited, limited)
	var waits []time.Duration
	c := &Client{BaseURL: srv.URL, Key: "k", Retries: 1, WaitOutRateLimit: true,
		OnRetry: func(wait time.Duration, err *APIError) {
			if err.Code != CodeRateLimited {
				t.Errorf("OnRetry got %v", err)
			}
			waits = append(waits, wait)
		}}
	job, err := c.StartJob(context.Background(), "job_1")
	if err != nil || job.Status != "queued" {
		t.Fatalf("%+v %v", job, err)
	}
	if n.Load() != 4 || len(waits) != 3 || waits[0] != time.Second || waits[2] != time.Second {
		t.Fatalf("%d attempts, waits %v; want 4 attempts after three 1 s waits", n.Load(), waits)
	}

	bare := apiError(429, "rate_limited")
	srv, n = scripted(t, bare, bare, bare)
	c = &Client{BaseURL: srv.URL, Key: "k", Retries: 1, RetryBackoff: time.Millisecond, WaitOutRateLimit: true}
	if _, err := c.StartJob(context.Background(), "job_1"); !IsCode(err, CodeRateLimited) || n.Load() != 2 {
		t.Fatalf("429 without Retry-After: %v after %d attempts, want rate_limited after 2", err, n.Load())
	}
}

// An upload refused by the storage listener's connection cap (503 too_many_connections,
// answered before the body is read) is sent again, from its first byte, after its
// Retry-After, and OnRetry hears of it; a stream that cannot be read again is not.
func TestClient_UploadRetriesTooManyConnections(t *testing.T) {
	srv, n := scripted(t, apiError(503, "too_many_connections", "Retry-After", "1"))
	var retries []ErrorCode
	c := &Client{BaseURL: srv.URL, Key: "k", OnRetry: func(_ time.Duration, err *APIError) { retries = append(retries, err.Code) }}
	body := []byte("0123456789")
	if err := c.Upload(context.Background(), srv.URL+"/uploads/job_1", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 || len(retries) != 1 || retries[0] != CodeTooManyConnections {
		t.Fatalf("%d attempts, OnRetry saw %v; want 2 attempts, one too_many_connections", n.Load(), retries)
	}

	srv, n = scripted(t, apiError(503, "too_many_connections", "Retry-After", "1"))
	c = &Client{BaseURL: srv.URL, Key: "k"}
	err := c.Upload(context.Background(), srv.URL+"/uploads/job_1", io.MultiReader(bytes.NewReader(body)), int64(len(body)))
	if !IsCode(err, "too_many_connections") || n.Load() != 1 {
		t.Fatalf("err %v after %d attempts, want too_many_connections after 1", err, n.Load())
	}
}

// TestClient_UploadRetriesAConnectionClosedWithoutAnswer: a connection that ends before any
// answer (the server closed it after reading the upload) is a failure to send the file again,
// whole, and OnRetry sees it as connection_failed; the caller's reader is never closed.
func TestClient_UploadRetriesAConnectionClosedWithoutAnswer(t *testing.T) {
	var n atomic.Int32
	var mu sync.Mutex
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	var retries []*APIError
	c := &Client{RetryBackoff: time.Millisecond, OnRetry: func(_ time.Duration, err *APIError) { retries = append(retries, err) }}
	in := &closeCounter{Reader: strings.NewReader("0123456789")}
	if err := c.Upload(context.Background(), srv.URL+"/uploads/job_1", in, 10); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n.Load() != 2 || len(got) != 2 || string(got[1]) != "0123456789" {
		t.Fatalf("%d attempts, bodies %q; want the whole file sent twice", n.Load(), got)
	}
	if len(retries) != 1 || retries[0].Code != CodeConnectionFailed || retries[0].Status != 0 {
		t.Fatalf("OnRetry saw %+v, want one connection_failed with status 0", retries)
	}
	if in.closed != 0 {
		t.Fatalf("the caller's reader was closed %d times", in.closed)
	}
}

// closeCounter is a ReaderAt and Seeker (a strings.Reader) that counts calls to Close.
type closeCounter struct {
	*strings.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }
