package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries "t=UNIX,v1=HEX[,v1=HEX...]".
	SignatureHeader = "Convsvc-Signature"
	// EventIDHeader carries the event's id, the same for every attempt: receivers de-duplicate on it.
	EventIDHeader = "Convsvc-Event-Id"
	// EventTypeHeader carries the event's type, such as "job.succeeded".
	EventTypeHeader = "Convsvc-Event-Type"
)

// DefaultTolerance is how far a signature's timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// SecretPrefix starts every secret NewSecret returns, so a leaked one is recognisable.
const SecretPrefix = "whsec_"

// Errors of Verify; each is returned wrapped with detail, so test with errors.Is.
var (
	// ErrNoSignature: the header is missing, has no timestamp, or has no v1 signature.
	ErrNoSignature = errors.New("webhook: no signature")
	// ErrBadSignature: no v1 signature in the header matches the body and timestamp.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrTooOld: the signature matches but its timestamp is outside the tolerance (replay).
	ErrTooOld = errors.New("webhook: timestamp outside tolerance")
)

// NewSecret returns a new endpoint secret: "whsec_" and 32 random bytes in unpadded base64url.
// The whole string, prefix included, is the HMAC key.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook: new secret: %w", err)
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// mac returns HMAC-SHA256(secret, t + "." + body).
func mac(secret string, t int64, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(strconv.AppendInt(nil, t, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the Convsvc-Signature value for body sent at t:
// "t=UNIX,v1=hex(HMAC-SHA256(secret, UNIX + "." + body))". It signs the raw bytes, so the
// receiver must verify the bytes it read, before any JSON decoding.
func Sign(secret string, t time.Time, body []byte) string {
	return SignAll([]string{secret}, t, body)
}

// SignAll is Sign with one v1 value per secret, in order: "t=UNIX,v1=HEX,v1=HEX". While a
// secret rotates the sender signs with the new and the old one, and a receiver holding either
// verifies (Verify accepts any listed v1 value).
func SignAll(secrets []string, t time.Time, body []byte) string {
	ts := t.Unix()
	out := "t=" + strconv.FormatInt(ts, 10)
	for _, secret := range secrets {
		out += ",v1=" + hex.EncodeToString(mac(secret, ts, body))
	}
	return out
}

// SecretOverlap is how long an account's replaced signing secret keeps signing deliveries
// beside the new one after a rotation, so receivers can switch secrets without losing events.
const SecretOverlap = 24 * time.Hour

// Verify checks header (a Convsvc-Signature value) against body with secret: one of its v1
// values must equal the HMAC (compared in constant time; several are allowed so a sender can
// sign with an old and a new secret while a secret rotates), and its timestamp must be within
// tolerance of now, in either direction (tolerance <= 0 means DefaultTolerance). Schemes other
// than v1 are ignored. An empty secret verifies nothing. It returns nil, or an error wrapping
// ErrNoSignature, ErrBadSignature or ErrTooOld.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		// An unset secret (a missing environment variable) must not make any signature
		// made with the empty key acceptable.
		return fmt.Errorf("%w: the secret is empty", ErrBadSignature)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
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
				return fmt.Errorf("%w: bad or repeated timestamp %q", ErrNoSignature, v)
			}
			ts, haveTS = n, true
		case "v1":
			// A value that is not hex (or not 32 bytes) can never match; keep it out.
			if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			} else {
				sigs = append(sigs, nil)
			}
		}
	}
	if !haveTS {
		return fmt.Errorf("%w: header has no t= timestamp", ErrNoSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: header has no v1= signature", ErrNoSignature)
	}
	want := mac(secret, ts, body)
	match := false
	for _, s := range sigs {
		// Compare every value, so the time taken does not say which one matched.
		if s != nil && hmac.Equal(s, want) {
			match = true
		}
	}
	if !match {
		return fmt.Errorf("%w (%d v1 value(s) checked)", ErrBadSignature, len(sigs))
	}
	// The distance in uint64, which holds any difference of two int64s without overflow.
	tol := uint64(tolerance / time.Second)
	n := now.Unix()
	switch {
	case ts < n && uint64(n)-uint64(ts) > tol:
		return fmt.Errorf("%w: signed %d s ago, tolerance %s", ErrTooOld, uint64(n)-uint64(ts), tolerance)
	case ts > n && uint64(ts)-uint64(n) > tol:
		return fmt.Errorf("%w: signed %d s in the future, tolerance %s", ErrTooOld, uint64(ts)-uint64(n), tolerance)
	}
	return nil
}
