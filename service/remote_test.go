package service_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// allowPrivate lets the service fetch from and deliver to the tests' loopback servers.
func allowPrivate(c *service.Config) { c.FetchAllowPrivate = true }

// TestRemote_Backends runs the remote-file tests on bbolt with the local blob store and on
// PostgreSQL with S3 (internal/testpg, internal/tests3: skipped when not installed, except
// under CI=true).
func TestRemote_Backends(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres+s3"} {
		t.Run(backend, func(t *testing.T) {
			db, objects, _ := strings.Cut(backend, "+")
			t.Setenv(testenv.EnvDatabase, db)
			t.Setenv(testenv.EnvObjectStorage, objects)
			t.Run("SourceURLAndDeliverTo", testRemoteSourceAndDelivery)
			t.Run("Failures", testRemoteFailures)
			t.Run("GuardRefusesLoopback", testRemoteGuard)
			t.Run("CreateErrors", testRemoteCreateErrors)
		})
	}
}

// receiver is a deliver_to destination that keeps what it was sent.
type receiver struct {
	mu      sync.Mutex
	body    []byte
	headers http.Header
	puts    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.puts++
	if strings.HasSuffix(r.URL.Path, "/denied") {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	rc.body, rc.headers = b, r.Header.Clone()
}

// testRemoteSourceAndDelivery: a create with source_url and deliver_to answers the job
// queued, without an upload URL, with the URLs' secrets redacted; the worker fetches the
// source, converts it, PUTs the output with the headers, and the job succeeds with the same
// output downloadable; the cent is spent once.
func testRemoteSourceAndDelivery(t *testing.T) {
	png := testenv.NoisePNG(t, 32, 24)
	var fetches atomic.Int32
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if r.URL.Query().Get("token") != "s3cr3t" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	defer origin.Close()
	rc := &receiver{}
	dest := httptest.NewServer(rc)
	defer dest.Close()
	e := testenv.Start(t, allowPrivate)

	r := e.Do("POST", "/v1/jobs", e.Key, map[string]any{
		"input_format": "png", "target_format": "jpeg", "input_bytes": 2000000000,
		"source_url": origin.URL + "/photo.png?token=s3cr3t",
		"deliver_to": map[string]any{"url": dest.URL + "/bucket/out.jpg?X-Amz-Signature=sig123",
			"headers": map[string]string{"content-type": "image/jpeg", "x-amz-meta-origin": "convsvc"}},
	})
	testenv.MustStatus(t, r, 200, "")
	body := string(r.Body)
	for _, secret := range []string{"s3cr3t", "sig123", "convsvc\""} {
		if strings.Contains(body, secret) {
			t.Fatalf("create answer shows %q: %s", secret, body)
		}
	}
	var res testenv.Reservation
	r.JSON(t, &res)
	job := res.Job
	// SPEC.md's reservation, whole: the upload URL is issued, and takes nothing, since the
	// job has started.
	if res.UploadURL == "" || res.UploadExpiresIn != 900 {
		t.Fatalf("reservation without SPEC's upload fields: %s", body)
	}
	if up := e.Upload(res.UploadURL, png); up.Status == 200 {
		t.Fatalf("an upload to a source_url job's URL was taken: %d %s", up.Status, up.Body)
	}
	if job.Status != "queued" || job.InputBytes == nil || *job.InputBytes != 2000000000 || job.StartedAt == nil ||
		job.SourceURL != origin.URL+"/photo.png?REDACTED" || job.DeliverTo == nil ||
		job.DeliverTo.URL != dest.URL+"/bucket/out.jpg?REDACTED" || job.DeliverTo.Headers["Content-Type"] != "REDACTED" {
		t.Fatalf("created job: %+v deliver_to %+v", job, job.DeliverTo)
	}
	// Start is not needed, and safe: the job comes back as it is.
	testenv.MustStatus(t, e.Start(e.Key, job.ID), 200, "")

	done := e.WaitFinished(e.Key, job.ID)
	if done.Status != "succeeded" || done.Output == nil {
		t.Fatalf("job %s: %s", done.Status, done.Error())
	}
	if fetches.Load() != 1 {
		t.Fatalf("the source was fetched %d times", fetches.Load())
	}
	rc.mu.Lock()
	delivered, headers, puts := rc.body, rc.headers, rc.puts
	rc.mu.Unlock()
	sum := sha256.Sum256(delivered)
	if puts != 1 || hex.EncodeToString(sum[:]) != done.Output.SHA256 || int64(len(delivered)) != done.Output.Bytes ||
		headers.Get("Content-Type") != "image/jpeg" || headers.Get("X-Amz-Meta-Origin") != "convsvc" {
		t.Fatalf("delivered %d bytes in %d PUTs with %v; output %+v", len(delivered), puts, headers, done.Output)
	}
	// The output stays downloadable from convsvc.
	resp, err := http.Get(done.Output.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != string(delivered) {
		t.Fatalf("download: %d, %d bytes, want the %d delivered", resp.StatusCode, len(got), len(delivered))
	}
	acct := e.Account(e.AccountID)
	if acct["reserved_cents"] != float64(0) {
		t.Fatalf("account after success: %v", acct)
	}
}

// testRemoteFailures: a source answering 404, one larger than its declared input_bytes and a
// deliver_to answering 403 each fail the job conversion_failed with their error_reason, and
// release the cent.
func testRemoteFailures(t *testing.T) {
	png := testenv.NoisePNG(t, 16, 16)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.png" {
			http.NotFound(w, r)
			return
		}
		w.Write(png)
	}))
	defer origin.Close()
	rc := &receiver{}
	dest := httptest.NewServer(rc)
	defer dest.Close()
	e := testenv.Start(t, allowPrivate)
	for _, tc := range []struct {
		name    string
		body    map[string]any
		reason  string
		message string
	}{
		{"404", map[string]any{"source_url": origin.URL + "/missing.png", "input_bytes": 1000}, "source_unreachable", "answered 404"},
		{"larger than declared", map[string]any{"source_url": origin.URL + "/a.png", "input_bytes": len(png) - 1}, "source_too_large", "input_bytes"},
		{"delivery 403", map[string]any{"source_url": origin.URL + "/a.png", "input_bytes": len(png), "deliver_to": map[string]any{"url": dest.URL + "/denied?sig=x"}}, "delivery_failed", "answered 403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["input_format"], tc.body["target_format"] = "png", "jpeg"
			r := e.Do("POST", "/v1/jobs", e.Key, tc.body)
			testenv.MustStatus(t, r, 200, "")
			var res testenv.Reservation
			r.JSON(t, &res)
			done := e.WaitFinished(e.Key, res.Job.ID)
			if done.Status != "failed" || done.ErrorCode == nil || *done.ErrorCode != "conversion_failed" ||
				done.ErrorReason == nil || *done.ErrorReason != tc.reason || done.ErrorMessage == nil || !strings.Contains(*done.ErrorMessage, tc.message) {
				t.Fatalf("job: %s %v %v %v, want failed conversion_failed %s naming %q", done.Status, done.ErrorCode, done.ErrorReason, done.ErrorMessage, tc.reason, tc.message)
			}
			if strings.Contains(*done.ErrorMessage, "sig=x") {
				t.Fatalf("message shows the URL's query: %s", *done.ErrorMessage)
			}
			if acct := e.Account(e.AccountID); acct["reserved_cents"] != float64(0) {
				t.Fatalf("account after the failure: %v", acct)
			}
		})
	}
}

// testRemoteGuard: without --fetch-allow-private, a source_url on loopback (an IP literal or
// localhost) fails source_refused and the server there sees no request.
func testRemoteGuard(t *testing.T) {
	var hits atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer inside.Close()
	e := testenv.Start(t)
	port := inside.URL[strings.LastIndexByte(inside.URL, ':'):]
	for _, src := range []string{inside.URL + "/x.png", "http://localhost" + port + "/x.png", "http://[::ffff:127.0.0.1]" + port + "/x.png", "http://169.254.169.254/latest/meta-data/"} {
		r := e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 1000, "source_url": src})
		testenv.MustStatus(t, r, 200, "")
		var res testenv.Reservation
		r.JSON(t, &res)
		done := e.WaitFinished(e.Key, res.Job.ID)
		if done.Status != "failed" || done.ErrorReason == nil || *done.ErrorReason != "source_refused" ||
			!strings.Contains(*done.ErrorMessage, "--fetch-allow-private") {
			t.Fatalf("%s: %s %v %v, want failed source_refused", src, done.Status, done.ErrorReason, done.ErrorMessage)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server got %d requests", hits.Load())
	}
}

// testRemoteCreateErrors: malformed remote fields are 400 invalid_request and reserve nothing.
func testRemoteCreateErrors(t *testing.T) {
	e := testenv.Start(t)
	for name, body := range map[string]map[string]any{
		"source_url without input_bytes": {"source_url": "https://example.com/a.png"},
		"ftp source":                     {"input_bytes": 10, "source_url": "ftp://example.com/a.png"},
		"credentials in source":          {"input_bytes": 10, "source_url": "https://user:pw@example.com/a.png"},
		"relative source":                {"input_bytes": 10, "source_url": "/a.png"},
		"deliver_to without url":         {"input_bytes": 10, "source_url": "https://example.com/a.png", "deliver_to": map[string]any{}},
		"deliver_to sets Host":           {"input_bytes": 10, "deliver_to": map[string]any{"url": "https://example.com/o", "headers": map[string]string{"Host": "x"}}},
		"deliver_to header line break":   {"input_bytes": 10, "deliver_to": map[string]any{"url": "https://example.com/o", "headers": map[string]string{"X-A": "a\r\nX-B: b"}}},
		"deliver_to bad header name":     {"input_bytes": 10, "deliver_to": map[string]any{"url": "https://example.com/o", "headers": map[string]string{"X A": "a"}}},
	} {
		body["input_format"], body["target_format"] = "png", "jpeg"
		r := e.Do("POST", "/v1/jobs", e.Key, body)
		if r.Status != 400 || r.ErrorCode() != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", name, r.Status, r.Body)
		}
	}
	if acct := e.Account(e.AccountID); acct["reserved_cents"] != float64(0) {
		t.Fatalf("refused creates reserved: %v", acct)
	}
}
