package webhook

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: Verify never panics, returns nil or one of its three errors, accepts only a
// header carrying the body's true HMAC, and accepts what Sign produced for any secret, time
// and body, while refusing the same signature over a changed body. Seeds: testdata/fuzz/FuzzVerify.
func FuzzVerify(f *testing.F) {
	f.Add("whsec_x", "t=1795000000,v1=00", []byte("{}"), int64(1795000000))
	f.Add(testSecret, Sign(testSecret, testTime, testBody), testBody, testTime.Unix())
	f.Fuzz(func(t *testing.T, secret, header string, body []byte, ts int64) {
		now := time.Unix(ts, 0)
		err := Verify(secret, header, body, now, DefaultTolerance)
		if err != nil && !errors.Is(err, ErrNoSignature) && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrTooOld) {
			t.Fatalf("Verify(%q) = %v: not one of its errors", header, err)
		}
		if err == nil || errors.Is(err, ErrTooOld) {
			// The header must hold the true MAC of its timestamp.
			var tsv string
			for part := range strings.SplitSeq(header, ",") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
					tsv = v
				}
			}
			sig := Sign(secret, time.Unix(mustInt(t, tsv), 0), body)
			mac := sig[strings.Index(sig, "v1=")+3:]
			if !strings.Contains(strings.ToLower(header), mac) {
				t.Fatalf("Verify accepted %q, which lacks the true MAC %s", header, mac)
			}
		}
		if secret == "" {
			if err == nil {
				t.Fatal("Verify accepted a delivery with an empty secret")
			}
			return
		}
		signed := Sign(secret, now, body)
		if err := Verify(secret, signed, body, now, DefaultTolerance); err != nil {
			t.Fatalf("Verify(Sign(...)) = %v", err)
		}
		changed := append([]byte("x"), body...)
		if err := Verify(secret, signed, changed, now, DefaultTolerance); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("Verify of a changed body = %v, want ErrBadSignature", err)
		}
		if _, err := hex.DecodeString(signed[strings.Index(signed, "v1=")+3:]); err != nil {
			t.Fatalf("Sign wrote non-hex: %q", signed)
		}
	})
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("accepted timestamp %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}
