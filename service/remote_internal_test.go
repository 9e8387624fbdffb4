package service

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// guardedIO is a remoteIO with the real guard (private addresses refused) that trusts the
// test's origin servers alone: a fetch may start there, and every other address, a
// redirect's target included, goes through the guard.
func guardedIO(t *testing.T, progress time.Duration, trusted ...*httptest.Server) *remoteIO {
	t.Helper()
	r := newRemoteIO(webhook.Guard{}, progress, t.TempDir(), func(int) time.Duration { return 10 * time.Millisecond },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	hosts := map[string]bool{}
	for _, s := range trusted {
		hosts[strings.TrimPrefix(s.URL, "http://")] = true
	}
	guardCheck, guardControl := r.checkURL, r.control
	r.checkURL = func(ctx context.Context, raw string) error {
		for h := range hosts {
			if strings.HasPrefix(raw, "http://"+h+"/") {
				return nil
			}
		}
		return guardCheck(ctx, raw)
	}
	r.control = func(network, address string, c syscall.RawConn) error {
		if hosts[address] {
			return nil
		}
		return guardControl(network, address, c)
	}
	return r
}

// reasonOf is the failure reason of a remote transfer's error, "" if it has none.
func reasonOf(t *testing.T, err error) (reason, message string) {
	t.Helper()
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a job failure", err)
	}
	return ce.Reason, ce.Message
}

// hostileTargets are addresses inside the server's network, written every way a request
// forgery tries.
var hostileTargets = []string{
	"http://127.0.0.1/x.png",
	"http://169.254.169.254/latest/meta-data/",
	"http://[::ffff:127.0.0.1]/x.png",
	"http://2130706433/x.png",
	"http://0x7f.0.0.1/x.png",
	"http://localhost/x.png",
	"http://[::1]/x.png",
	"http://10.0.0.1/x.png",
}

// TestRemote_FetchRefusesInternalAddresses: a source_url to loopback, the metadata address,
// an IPv4-mapped loopback, a decimal or hex IP or a name for loopback fails source_refused,
// directly and as a redirect's target from an allowed origin, and nothing is sent there.
func TestRemote_FetchRefusesInternalAddresses(t *testing.T) {
	var hits atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("secret"))
	}))
	defer inside.Close()
	targets := append(slices.Clone(hostileTargets), inside.URL+"/x.png")
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	defer origin.Close()
	r := guardedIO(t, time.Minute, origin)
	for _, target := range targets {
		for _, via := range []string{"direct", "redirect"} {
			src := target
			if via == "redirect" {
				src = origin.URL + "/r?to=" + target
			}
			f, _, err := r.fetch(context.Background(), store.Job{ID: "job_x", SourceURL: src})
			if f != nil {
				f.Close()
			}
			reason, msg := reasonOf(t, err)
			if reason != ReasonSourceRefused {
				t.Errorf("%s %s: reason %q (%s), want %s", via, target, reason, msg, ReasonSourceRefused)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("%s %s: message %q shows the inside's answer", via, target, msg)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the inside server was reached %d times", n)
	}
}

// TestRemote_FetchLimits: a source larger than input_bytes, or than the server's maximum,
// fails source_too_large whether it declares its length or not; too many redirects and a
// non-2xx answer are source_unreachable, a stalled one too, within the progress timeout.
func TestRemote_FetchLimits(t *testing.T) {
	body := bytes.Repeat([]byte("a"), 1000)
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/declared":
			w.Write(body) // Content-Length: 1000
		case "/chunked":
			w.Write(body[:500])
			w.(http.Flusher).Flush()
			w.Write(body[500:])
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/missing":
			http.NotFound(w, r)
		case "/stall":
			w.Header().Set("Content-Length", "1000")
			w.Write(body[:10])
			w.(http.Flusher).Flush()
			<-stall
		}
	}))
	defer srv.Close()
	defer close(stall) // before Close, which waits for the handlers
	r := guardedIO(t, time.Second, srv)
	for _, tc := range []struct {
		path       string
		inputBytes int64
		maxInput   int64
		reason     string
		message    string
	}{
		{"/declared", 999, 0, ReasonSourceTooLarge, "input_bytes"},
		{"/chunked", 999, 0, ReasonSourceTooLarge, "input_bytes"},
		{"/declared", 0, 999, ReasonSourceTooLarge, "maximum input size"},
		{"/chunked", 0, 999, ReasonSourceTooLarge, "maximum input size"},
		{"/loop", 0, 0, ReasonSourceUnreachable, "redirects"},
		{"/missing", 0, 0, ReasonSourceUnreachable, "answered 404"},
		{"/stall", 0, 0, ReasonSourceUnreachable, "--storage-progress-timeout"},
	} {
		r.maxInput = store.MaxInputBytes
		if tc.maxInput > 0 {
			r.maxInput = tc.maxInput
		}
		f, _, err := r.fetch(context.Background(), store.Job{ID: "job_x", SourceURL: srv.URL + tc.path, InputBytes: tc.inputBytes})
		if f != nil {
			f.Close()
		}
		reason, msg := reasonOf(t, err)
		if reason != tc.reason || !strings.Contains(msg, tc.message) {
			t.Errorf("%s (input_bytes %d, max %d): %s %q, want %s naming %q", tc.path, tc.inputBytes, tc.maxInput, reason, msg, tc.reason, tc.message)
		}
	}
	// Exactly the limit is fine, and the bytes are the source's.
	r.maxInput = store.MaxInputBytes
	f, n, err := r.fetch(context.Background(), store.Job{ID: "job_x", SourceURL: srv.URL + "/chunked", InputBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _ := io.ReadAll(f)
	if n != 1000 || !bytes.Equal(got, body) {
		t.Fatalf("fetched %d bytes (%d read), want the 1000 of the source", n, len(got))
	}
}

// TestRemote_Deliver: a 2xx succeeds with the headers and the exact bytes; a 403 fails
// delivery_failed at once naming it; 503s are retried up to maxDeliveryAttempts; a receiver
// that never answers is cut by the progress timeout on each attempt; a redirect is not
// followed; an internal address is refused without a request.
func TestRemote_Deliver(t *testing.T) {
	out := bytes.Repeat([]byte("o"), 300)
	var puts atomic.Int32
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		puts.Add(1)
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			if r.Method != http.MethodPut || !bytes.Equal(b, out) || r.Header.Get("X-Amz-Meta-A") != "b" || r.ContentLength != int64(len(out)) {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
		case "/forbidden":
			http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		case "/busy":
			http.Error(w, "slow down", http.StatusServiceUnavailable)
		case "/hang":
			<-hang
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	defer close(hang) // before Close, which waits for the handlers
	r := guardedIO(t, time.Second, srv)
	open := func(context.Context) (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(out)), int64(len(out)), nil
	}
	deliver := func(url string) (error, int32) {
		puts.Store(0)
		err := r.deliver(context.Background(), store.Job{ID: "job_x", DeliverTo: &store.Delivery{URL: url, Headers: map[string]string{"X-Amz-Meta-A": "b"}}}, open)
		return err, puts.Load()
	}
	if err, n := deliver(srv.URL + "/ok?X-Amz-Signature=abc"); err != nil || n != 1 {
		t.Fatalf("2xx: %v after %d PUTs", err, n)
	}
	for _, tc := range []struct {
		path    string
		puts    int32
		message string
	}{
		{"/forbidden", 1, "answered 403"},
		{"/busy", maxDeliveryAttempts, "answered 503"},
		{"/hang", maxDeliveryAttempts, "--storage-progress-timeout"},
		{"/moved", 1, "answered 307"},
	} {
		err, n := deliver(srv.URL + tc.path + "?X-Amz-Signature=topsecret")
		reason, msg := reasonOf(t, err)
		if reason != ReasonDeliveryFailed || n != tc.puts || !strings.Contains(msg, tc.message) || strings.Contains(msg, "topsecret") {
			t.Errorf("%s: %s %q after %d PUTs, want %s naming %q after %d, without the query", tc.path, reason, msg, n, ReasonDeliveryFailed, tc.message, tc.puts)
		}
	}
	for _, target := range hostileTargets {
		err, n := deliver(target)
		reason, msg := reasonOf(t, err)
		if reason != ReasonDeliveryFailed || n != 0 || !strings.Contains(msg, "refused") {
			t.Errorf("%s: %s %q, want %s refused", target, reason, msg, ReasonDeliveryFailed)
		}
	}
}
