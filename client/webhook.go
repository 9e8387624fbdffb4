package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a webhook delivery (docs/webhooks.md).
const (
	// WebhookSignatureHeader carries "t=UNIX,v1=HEX[,v1=HEX...]".
	WebhookSignatureHeader = "Convsvc-Signature"
	// WebhookEventIDHeader carries the event id, the same on every attempt: de-duplicate on it.
	WebhookEventIDHeader = "Convsvc-Event-Id"
	// WebhookEventTypeHeader carries the event type, such as "job.succeeded".
	WebhookEventTypeHeader = "Convsvc-Event-Type"
	// WebhookTolerance is the default distance allowed between a signature's time and now.
	WebhookTolerance = 5 * time.Minute
)

// Errors of VerifyWebhook; each is returned wrapped with detail, so test with errors.Is.
var (
	// ErrWebhookNoSignature: the header is missing, has no timestamp, or no v1 signature.
	ErrWebhookNoSignature = errors.New("client: webhook has no signature")
	// ErrWebhookBadSignature: no v1 signature matches the body (wrong secret, or the body
	// was changed: verify the raw bytes, before any JSON decoding).
	ErrWebhookBadSignature = errors.New("client: webhook signature does not match")
	// ErrWebhookTooOld: the signature matches but is older (or newer) than the tolerance: a
	// replay, or a clock far off.
	ErrWebhookTooOld = errors.New("client: webhook timestamp outside tolerance")
)

// WebhookEvent is the body of a webhook delivery.
type WebhookEvent struct {
	// ID is unique per event and the same on every delivery attempt.
	ID string `json:"id"`
	// Type is job.succeeded, job.failed, job.cancelled or batch.finished.
	Type string `json:"type"`
	// CreatedAt is when the job (or the batch's last job) changed state.
	CreatedAt time.Time `json:"created_at"`
	// Data holds the job as GET /v1/jobs/{id} returned it at that moment, or for
	// batch.finished the batch as GET /v1/batches/{id} returned it.
	Data struct {
		Job   Job    `json:"job"`
		Batch *Batch `json:"batch,omitempty"`
	} `json:"data"`
}

// VerifyWebhook checks a delivery's Convsvc-Signature header against the raw body it came
// with, using the endpoint's secret (the whole "whsec_..." string): one of the header's v1
// values must be hex(HMAC-SHA256(secret, t + "." + body)), compared in constant time, and
// t must be within tolerance of now (tolerance <= 0 means WebhookTolerance). An empty secret
// verifies nothing. It returns nil
// or an error wrapping ErrWebhookNoSignature, ErrWebhookBadSignature or ErrWebhookTooOld.
// It is the same check as package webhook's Verify, kept here so the client imports nothing
// of the server; a test holds the two to the same answers.
func VerifyWebhook(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		// An unset secret (a missing environment variable) must not make any signature
		// made with the empty key acceptable.
		return fmt.Errorf("%w: the secret is empty", ErrWebhookBadSignature)
	}
	if tolerance <= 0 {
		tolerance = WebhookTolerance
	}
	var (
		ts     int64
		haveTS bool
		sigs   [][]byte
	)
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || haveTS {
				return fmt.Errorf("%w: bad or repeated timestamp %q", ErrWebhookNoSignature, v)
			}
			ts, haveTS = n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				b = nil // can never match
			}
			sigs = append(sigs, b)
		}
	}
	if !haveTS {
		return fmt.Errorf("%w: header has no t= timestamp", ErrWebhookNoSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: header has no v1= signature", ErrWebhookNoSignature)
	}
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	want := h.Sum(nil)
	match := false
	for _, s := range sigs {
		if s != nil && hmac.Equal(s, want) {
			match = true
		}
	}
	if !match {
		return fmt.Errorf("%w (%d v1 value(s) checked)", ErrWebhookBadSignature, len(sigs))
	}
	tol := uint64(tolerance / time.Second) // distances in uint64 cannot overflow
	n := now.Unix()
	switch {
	case ts < n && uint64(n)-uint64(ts) > tol:
		return fmt.Errorf("%w: signed %d s ago, tolerance %s", ErrWebhookTooOld, uint64(n)-uint64(ts), tolerance)
	case ts > n && uint64(ts)-uint64(n) > tol:
		return fmt.Errorf("%w: signed %d s in the future, tolerance %s", ErrWebhookTooOld, uint64(ts)-uint64(n), tolerance)
	}
	return nil
}

// maxWebhookBody bounds what ReadWebhook reads: an event is a few kilobytes.
const maxWebhookBody = 1 << 20

// ReadWebhook reads a delivery's body (at most 1 MiB), verifies it with VerifyWebhook at
// time.Now() with the default tolerance, and decodes it. Use it in the receiving handler
// before anything else reads r.Body; answer 2xx quickly and de-duplicate on the event's ID
// (deliveries are at least once).
func ReadWebhook(r *http.Request, secret string) (WebhookEvent, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return WebhookEvent{}, fmt.Errorf("client: read webhook body: %w", err)
	}
	if len(body) > maxWebhookBody {
		return WebhookEvent{}, fmt.Errorf("client: webhook body over %d bytes", maxWebhookBody)
	}
	if err := VerifyWebhook(secret, r.Header.Get(WebhookSignatureHeader), body, time.Now(), 0); err != nil {
		return WebhookEvent{}, err
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return WebhookEvent{}, fmt.Errorf("client: decode webhook: %w", err)
	}
	return ev, nil
}
