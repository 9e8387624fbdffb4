package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds one delivery attempt: connect, send, and read the answer.
const DefaultTimeout = 10 * time.Second

// UserAgent is the User-Agent of every delivery.
const UserAgent = "convsvc-webhook/1"

// maxResponse is how much of a receiver's answer body is read (and then discarded), and the
// limit on its headers; a receiver answering more is not waited for.
const maxResponse = 64 << 10

// Errors of a delivery besides the transport's own and ErrForbiddenDestination.
var (
	// ErrRedirect: the receiver answered 3xx; redirects are never followed.
	ErrRedirect = errors.New("webhook: redirect not followed")
	// ErrStatus: the receiver answered with a status other than 2xx or 3xx.
	ErrStatus = errors.New("webhook: receiver did not answer 2xx")
)

// Result is the outcome of one delivery attempt.
type Result struct {
	// StatusCode is the receiver's HTTP status, 0 if none arrived.
	StatusCode int
	// Err is nil exactly when the receiver answered 2xx.
	Err error
	// Duration is how long the attempt took.
	Duration time.Duration
}

// OK reports whether the attempt succeeded (the receiver answered 2xx).
func (r Result) OK() bool { return r.Err == nil }

// DestinationDown reports whether the attempt found the destination itself unable to take
// deliveries, rather than refusing this one: no answer at all (a timeout, a refused or reset
// connection, a TLS failure, an address the guard refuses) or 429 Too Many Requests or 503
// Service Unavailable. A dispatcher pauses such a destination (DestinationPause) instead of
// sending it more attempts that would each wait for the timeout.
func (r Result) DestinationDown() bool {
	return r.Err != nil && (r.StatusCode == 0 || r.StatusCode == http.StatusTooManyRequests || r.StatusCode == http.StatusServiceUnavailable)
}

// Sender delivers signed events over HTTP: POST, a timeout per attempt, no redirects, no
// proxy, and every connection's address checked by its Guard.
type Sender struct {
	client  *http.Client
	timeout time.Duration
}

// NewSender returns a Sender whose connections g.Control checks and whose attempts last at
// most timeout (<= 0 means DefaultTimeout).
func NewSender(g Guard, timeout time.Duration) *Sender {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.Control, Resolver: g.Resolver}
	tr := &http.Transport{
		// No proxy: a proxy would connect on our behalf, out of the Guard's sight.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: maxResponse,
	}
	return &Sender{
		timeout: timeout,
		client: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

// Close closes the sender's idle connections.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// Send POSTs body to url once, signed with each of secrets at now (SignAll), with the event id and type headers,
// and reports the outcome: success is a 2xx answer only; a 3xx is a failure wrapping
// ErrRedirect, any other status wraps ErrStatus, and a destination the Guard refuses wraps
// ErrForbiddenDestination. The answer's body is read (at most 64 KiB) and discarded, except
// for a short excerpt in the error.
func (s *Sender) Send(ctx context.Context, url string, secrets []string, eventID, eventType string, body []byte, now time.Time) Result {
	start := time.Now()
	res := s.send(ctx, url, secrets, eventID, eventType, body, now)
	res.Duration = time.Since(start)
	return res
}

func (s *Sender) send(ctx context.Context, url string, secrets []string, eventID, eventType string, body []byte, now time.Time) Result {
	if _, err := parseURL(url); err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Err: fmt.Errorf("webhook: request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(SignatureHeader, SignAll(secrets, now, body))
	req.Header.Set(EventIDHeader, eventID)
	req.Header.Set(EventTypeHeader, eventType)
	resp, err := s.client.Do(req)
	if err != nil {
		// net/http names the whole URL in its errors; tokens in it must not reach logs or
		// last_error.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			ue.URL = RedactURL(ue.URL)
		}
		return Result{Err: fmt.Errorf("webhook: deliver %s: %w", eventID, err)}
	}
	defer resp.Body.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse-int64(n)))
	res := Result{StatusCode: resp.StatusCode}
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
	case c >= 300 && c < 400:
		loc := RedactURL(resp.Header.Get("Location"))
		if len(loc) > 200 {
			loc = loc[:200] + "..."
		}
		res.Err = fmt.Errorf("%w: receiver answered %d, Location %q", ErrRedirect, c, loc)
	default:
		res.Err = fmt.Errorf("%w: receiver answered %d%s", ErrStatus, c, excerpt(head[:n]))
	}
	return res
}

// excerpt returns ": " and the start of a receiver's answer as one printable line, or "".
func excerpt(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var sb strings.Builder
	for len(b) > 0 && sb.Len() < 200 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20, r == 0x7f:
			sb.WriteByte(' ')
		default:
			sb.WriteRune(r)
		}
	}
	return ": " + strconv.Quote(strings.TrimSpace(sb.String()))
}
