package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
	method string
}

// receiver is a real HTTP server on loopback that records what it gets and answers with
// handle (200 if nil).
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

func newReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body, method: req.Method})
		r.mu.Unlock()
		if handle != nil {
			handle(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func TestSender_Send_SignedDelivery(t *testing.T) {
	for _, status := range []int{200, 201, 202, 204} {
		rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
		s := NewSender(Guard{AllowPrivate: true}, 0)
		defer s.Close()
		now := time.Now()
		res := s.Send(context.Background(), rcv.URL+"/hook", []string{testSecret}, "evt_1", EventJobSucceeded, testBody, now)
		if res.Err != nil || res.StatusCode != status || !res.OK() {
			t.Fatalf("Send to a %d receiver = %+v, want success", status, res)
		}
		if res.Duration <= 0 {
			t.Errorf("Duration = %s", res.Duration)
		}
		got := rcv.requests()
		if len(got) != 1 {
			t.Fatalf("receiver got %d requests, want 1", len(got))
		}
		r := got[0]
		if r.method != http.MethodPost || string(r.body) != string(testBody) {
			t.Fatalf("receiver got %s %q, want POST of the exact body", r.method, r.body)
		}
		for k, want := range map[string]string{
			EventIDHeader:   "evt_1",
			EventTypeHeader: "job.succeeded",
			"User-Agent":    "convsvc-webhook/1",
			"Content-Type":  "application/json",
		} {
			if got := r.header.Get(k); got != want {
				t.Errorf("header %s = %q, want %q", k, got, want)
			}
		}
		if got, want := r.header.Get(SignatureHeader), Sign(testSecret, now, testBody); got != want {
			t.Errorf("signature header = %q, want %q", got, want)
		}
		if err := Verify(testSecret, r.header.Get(SignatureHeader), r.body, time.Now(), DefaultTolerance); err != nil {
			t.Errorf("the receiver cannot verify the delivery: %v", err)
		}
		if err := Verify("whsec_wrong", r.header.Get(SignatureHeader), r.body, time.Now(), DefaultTolerance); !errors.Is(err, ErrBadSignature) {
			t.Errorf("verified with the wrong secret: %v", err)
		}
	}
}

func TestSender_Send_Failures(t *testing.T) {
	for _, tt := range []struct {
		status  int
		body    string
		want    error
		message string
	}{
		{500, "database is down\n", ErrStatus, `receiver answered 500: "database is down"`},
		{404, "", ErrStatus, "receiver answered 404"},
		{410, "gone", ErrStatus, `410: "gone"`},
		{429, "slow down", ErrStatus, "429"},
		{599, "", ErrStatus, "599"},
		{299 + 1, "", ErrRedirect, "redirect not followed"},
		{301, "", ErrRedirect, "redirect not followed"},
		{302, "", ErrRedirect, "redirect not followed"},
		{307, "", ErrRedirect, "redirect not followed"},
		{308, "", ErrRedirect, "redirect not followed"},
	} {
		target := newReceiver(t, nil)
		rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			if tt.status >= 300 && tt.status < 400 {
				http.Redirect(w, r, target.URL+"/elsewhere", tt.status)
				return
			}
			w.WriteHeader(tt.status)
			_, _ = io.WriteString(w, tt.body)
		})
		s := NewSender(Guard{AllowPrivate: true}, 5*time.Second)
		res := s.Send(context.Background(), rcv.URL+"/hook", []string{testSecret}, "evt_2", EventJobFailed, testBody, time.Now())
		s.Close()
		if res.StatusCode != tt.status {
			t.Errorf("status %d: Result.StatusCode = %d", tt.status, res.StatusCode)
		}
		if res.OK() || !errors.Is(res.Err, tt.want) || !strings.Contains(res.Err.Error(), tt.message) {
			t.Errorf("status %d: Send error = %v, want %v containing %q", tt.status, res.Err, tt.want, tt.message)
		}
		if n := len(target.requests()); n != 0 {
			t.Errorf("status %d: the redirect target got %d requests: a redirect was followed", tt.status, n)
		}
		if n := len(rcv.requests()); n != 1 {
			t.Errorf("status %d: receiver got %d requests, want 1 (no retries inside Send)", tt.status, n)
		}
	}
}

// TestSender_Send_ForbiddenAtConnect: without AllowPrivate the connection to a loopback
// receiver is refused by the dialer's Control, so the receiver never sees a byte.
func TestSender_Send_ForbiddenAtConnect(t *testing.T) {
	rcv := newReceiver(t, nil)
	s := NewSender(Guard{}, 5*time.Second)
	defer s.Close()
	for _, url := range []string{rcv.URL + "/hook", strings.Replace(rcv.URL, "127.0.0.1", "localhost", 1) + "/hook"} {
		res := s.Send(context.Background(), url, []string{testSecret}, "evt_3", EventJobSucceeded, testBody, time.Now())
		if !errors.Is(res.Err, ErrForbiddenDestination) || res.StatusCode != 0 {
			t.Errorf("Send(%s) = %+v, want ErrForbiddenDestination", url, res)
		}
	}
	for _, url := range []string{"ftp://example.com/", "https://u:p@example.com/"} {
		if res := s.Send(context.Background(), url, []string{testSecret}, "evt_3", EventJobSucceeded, testBody, time.Now()); !errors.Is(res.Err, ErrForbiddenDestination) {
			t.Errorf("Send(%s) = %+v, want ErrForbiddenDestination", url, res)
		}
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// TestSender_Send_DNSRebinding: a name that resolves to a public address when it is
// registered (CheckURL) and to 127.0.0.1 when the sender connects is refused at connect time.
// With AllowPrivate the same delivery arrives, so the test can tell the two apart.
func TestSender_Send_DNSRebinding(t *testing.T) {
	rcv := newReceiver(t, nil)
	_, port, _ := net.SplitHostPort(rcv.Listener.Addr().String())
	url := "http://rebind.test:" + port + "/hook"
	for _, allow := range []bool{false, true} {
		dns := startDNS(t, func(name string, n int) []netip.Addr {
			if n == 0 {
				return []netip.Addr{netip.MustParseAddr("93.184.215.14")}
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		})
		g := Guard{Resolver: dns.resolver()}
		if err := g.CheckURL(context.Background(), url); err != nil {
			t.Fatalf("CheckURL while the name is public = %v", err)
		}
		g.AllowPrivate = allow
		s := NewSender(g, 5*time.Second)
		res := s.Send(context.Background(), url, []string{testSecret}, "evt_4", EventJobSucceeded, testBody, time.Now())
		s.Close()
		if dns.queries("rebind.test") < 2 {
			t.Fatalf("the sender did not resolve the name again (%d queries)", dns.queries("rebind.test"))
		}
		if allow {
			if !res.OK() || len(rcv.requests()) != 1 {
				t.Fatalf("with AllowPrivate: Send = %+v, receiver got %d requests; want a delivery", res, len(rcv.requests()))
			}
			continue
		}
		if !errors.Is(res.Err, ErrForbiddenDestination) || !strings.Contains(res.Err.Error(), "127.0.0.1") {
			t.Fatalf("Send after rebinding to 127.0.0.1 = %+v, want ErrForbiddenDestination", res)
		}
		if n := len(rcv.requests()); n != 0 {
			t.Fatalf("receiver got %d requests after the rebinding", n)
		}
	}
}

// TestSender_Send_Timeout: a receiver that never answers costs one timeout, not more; the
// receiver sees its request cancelled.
func TestSender_Send_Timeout(t *testing.T) {
	arrived := make(chan struct{}, 1)
	gone := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-release:
		}
	})
	const timeout = 2 * time.Second
	s := NewSender(Guard{AllowPrivate: true}, timeout)
	defer s.Close()
	res := s.Send(context.Background(), rcv.URL, []string{testSecret}, "evt_5", EventJobSucceeded, testBody, time.Now())
	if res.Err == nil || res.StatusCode != 0 {
		t.Fatalf("Send to a hanging receiver = %+v, want a timeout error", res)
	}
	var ne net.Error
	if !errors.Is(res.Err, context.DeadlineExceeded) && !(errors.As(res.Err, &ne) && ne.Timeout()) {
		t.Errorf("error %v is not a timeout", res.Err)
	}
	if res.Duration < timeout {
		t.Errorf("Send gave up after %s, before its %s timeout", res.Duration, timeout)
	}
	// Generous bound for a busy machine: the point is that it does not wait for the receiver.
	if res.Duration > timeout+30*time.Second {
		t.Errorf("Send took %s with a %s timeout", res.Duration, timeout)
	}
	// On a very busy machine the timeout may fire before the request arrives; when it did
	// arrive, the receiver must see it abandoned.
	select {
	case <-arrived:
		select {
		case <-gone:
		case <-time.After(time.Minute):
			t.Fatal("the receiver's request was not cancelled after the timeout")
		}
	default:
		t.Log("the timeout fired before the request reached the receiver")
	}
}

// TestSender_Send_ContextCancel: the caller's context ends an attempt early.
func TestSender_Send_ContextCancel(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	s := NewSender(Guard{AllowPrivate: true}, time.Hour)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	res := s.Send(ctx, rcv.URL, []string{testSecret}, "evt_6", EventJobSucceeded, testBody, time.Now())
	if !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("Send with a cancelled context = %+v, want context.Canceled", res)
	}
}

// TestSender_Send_LargeAnswer: a receiver streaming an endless 200 answer does not hold the
// sender: it reads at most 64 KiB and reports success.
func TestSender_Send_LargeAnswer(t *testing.T) {
	wrote := make(chan int64, 1)
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := make([]byte, 32<<10)
		var n int64
		for {
			if _, err := w.Write(chunk); err != nil {
				break
			}
			n += int64(len(chunk))
			if n > 1<<30 {
				break
			}
		}
		wrote <- n
	})
	s := NewSender(Guard{AllowPrivate: true}, time.Minute)
	defer s.Close()
	res := s.Send(context.Background(), rcv.URL, []string{testSecret}, "evt_7", EventJobSucceeded, testBody, time.Now())
	if !res.OK() || res.StatusCode != 200 {
		t.Fatalf("Send = %+v, want success", res)
	}
	select {
	case n := <-wrote:
		// The receiver stops when the sender closes the connection; socket buffers hold a few MB.
		if n >= 1<<30 {
			t.Fatalf("the sender read the whole %d-byte answer", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the receiver kept writing: the sender did not close the connection")
	}
}
