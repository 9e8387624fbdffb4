package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/webhook"
)

// class names the outcome of either verifier, so the two can be compared.
func class(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, client.ErrWebhookNoSignature), errors.Is(err, webhook.ErrNoSignature):
		return "no signature"
	case errors.Is(err, client.ErrWebhookBadSignature), errors.Is(err, webhook.ErrBadSignature):
		return "bad signature"
	case errors.Is(err, client.ErrWebhookTooOld), errors.Is(err, webhook.ErrTooOld):
		return "too old"
	}
	return "other: " + err.Error()
}

// agree fails the test when client.VerifyWebhook and webhook.Verify answer differently.
func agree(t *testing.T, secret, header string, body []byte, now time.Time, tol time.Duration) string {
	t.Helper()
	c := class(client.VerifyWebhook(secret, header, body, now, tol))
	w := class(webhook.Verify(secret, header, body, now, tol))
	if c != w {
		t.Fatalf("client.VerifyWebhook says %s, webhook.Verify says %s (header %q, body %q, now %d, tolerance %s)", c, w, header, body, now.Unix(), tol)
	}
	return c
}

// TestVerifyWebhook_AgreesWithWebhook: the client's copy of the verifier gives the same
// answer as the server package's on signed, tampered, rotated, stale and malformed input,
// and every outcome occurs.
func TestVerifyWebhook_AgreesWithWebhook(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"job.succeeded","created_at":"2026-11-25T20:00:00Z","data":{"job":{"id":"j1","status":"succeeded"}}}`)
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1795000000, 0)
	sig := webhook.Sign(secret, now, body)
	v1 := sig[strings.Index(sig, "v1="):]
	seen := map[string]bool{}
	for _, tt := range []struct {
		header string
		body   []byte
		now    time.Time
		tol    time.Duration
		want   string
	}{
		{sig, body, now, 0, "ok"},
		{sig + ",v1=" + strings.Repeat("ab", 32), body, now, 0, "ok"},
		{"t=1795000000,v0=1," + v1, body, now, 0, "ok"},
		{sig, append([]byte(" "), body...), now, 0, "bad signature"},
		{"t=1795000001," + v1, body, now, 0, "bad signature"},
		{sig, body, now.Add(6 * time.Minute), 0, "too old"},
		{sig, body, now.Add(-6 * time.Minute), 0, "too old"},
		{sig, body, now.Add(6 * time.Minute), 10 * time.Minute, "ok"},
		{"", body, now, 0, "no signature"},
		{v1, body, now, 0, "no signature"},
		{"t=1795000000", body, now, 0, "no signature"},
		{"t=x," + v1, body, now, 0, "no signature"},
	} {
		if got := agree(t, secret, tt.header, tt.body, tt.now, tt.tol); got != tt.want {
			t.Errorf("header %q: both say %s, want %s", tt.header, got, tt.want)
		}
		seen[tt.want] = true
	}
	// An empty secret (an unset environment variable) verifies nothing, not even a signature
	// made with the empty key.
	if got := agree(t, "", webhook.Sign("", now, body), body, now, 0); got != "bad signature" {
		t.Errorf("empty secret: both say %s, want bad signature", got)
	}
	// Random mutations of a valid header and body.
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		h, b := []byte(sig), append([]byte(nil), body...)
		switch rnd.IntN(4) {
		case 0:
			h[rnd.IntN(len(h))] = byte(rnd.IntN(128))
		case 1:
			b[rnd.IntN(len(b))] ^= 1 << rnd.IntN(8)
		case 2:
			h = h[:rnd.IntN(len(h))]
		}
		agree(t, secret, string(h), b, now.Add(time.Duration(rnd.IntN(1200)-600)*time.Second), 0)
	}
	if len(seen) != 4 {
		t.Fatalf("outcomes seen: %v", seen)
	}
}

// FuzzVerifyWebhook_Agrees: the client's verifier and the server package's never disagree.
func FuzzVerifyWebhook_Agrees(f *testing.F) {
	now := time.Unix(1795000000, 0)
	f.Add("whsec_x", webhook.Sign("whsec_x", now, []byte("{}")), []byte("{}"), now.Unix(), int64(0))
	f.Add("k", "t=1795000000,v1=00,v1=zz", []byte("x"), now.Unix(), int64(time.Hour))
	f.Add("k", "t=-9223372036854775808,v1=00", []byte(""), int64(9223372036854775807), int64(-1))
	f.Fuzz(func(t *testing.T, secret, header string, body []byte, ts, tol int64) {
		agree(t, secret, header, body, time.Unix(ts, 0), time.Duration(tol))
		agree(t, secret, webhook.Sign(secret, time.Unix(ts, 0), body), body, time.Unix(ts, 0), time.Duration(tol))
	})
}

// TestReadWebhook: a real receiver using ReadWebhook gets the event the webhook package's
// sender delivered, and refuses a delivery signed with another secret.
func TestReadWebhook(t *testing.T) {
	secret, _ := webhook.NewSecret()
	type outcome struct {
		ev  client.WebhookEvent
		err error
	}
	got := make(chan outcome, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := client.ReadWebhook(r, secret)
		got <- outcome{ev, err}
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	data, err := webhook.JobData(map[string]any{"id": "job_7", "status": "succeeded", "input_format": "png", "target_format": "jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	body, err := webhook.Event{ID: "evt_7", Type: webhook.EventJobSucceeded, CreatedAt: created, Data: data}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := webhook.NewSender(webhook.Guard{AllowPrivate: true}, 30*time.Second)
	defer s.Close()

	res := s.Send(context.Background(), srv.URL, []string{secret}, "evt_7", webhook.EventJobSucceeded, body, time.Now())
	o := <-got
	if !res.OK() || res.StatusCode != http.StatusNoContent || o.err != nil {
		t.Fatalf("delivery: %+v, receiver: %v", res, o.err)
	}
	if o.ev.ID != "evt_7" || o.ev.Type != "job.succeeded" || !o.ev.CreatedAt.Equal(created) ||
		o.ev.Data.Job.ID != "job_7" || o.ev.Data.Job.Status != client.StatusSucceeded || o.ev.Data.Job.TargetFormat != "jpeg" {
		t.Fatalf("receiver decoded %+v", o.ev)
	}

	res = s.Send(context.Background(), srv.URL, []string{"whsec_other"}, "evt_8", webhook.EventJobSucceeded, body, time.Now())
	o = <-got
	if res.StatusCode != http.StatusBadRequest || !errors.Is(o.err, client.ErrWebhookBadSignature) {
		t.Fatalf("wrong secret: delivery %+v, receiver %v", res, o.err)
	}
}
