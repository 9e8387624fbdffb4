package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// TestDispatcher_RotatedSecretOverlap drives the store's and the dispatcher's clock across a
// rotation of the account's signing secret: a delivery sent inside the overlap carries two v1=
// values and verifies with either secret; one sent after the overlap carries only the new
// secret's, and the old secret no longer verifies it.
func TestDispatcher_RotatedSecretOverlap(t *testing.T) {
	start := time.Now()
	st, now, clock := clockedStore(t, start)
	type got struct {
		sig  string
		body []byte
	}
	var mu sync.Mutex
	var received []got
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.Header.Get(webhook.SignatureHeader), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	acct, err := st.CreateAccount("hooks", 100)
	if err != nil {
		t.Fatal(err)
	}
	const oldSecret, newSecret = "whsec_old", "whsec_new"
	if _, err := st.SetWebhookSigningSecret(acct.ID, oldSecret, webhook.SecretOverlap); err != nil {
		t.Fatal(err)
	}
	rotated, err := st.SetWebhookSigningSecret(acct.ID, newSecret, webhook.SecretOverlap)
	if err != nil || rotated.PreviousSecret != oldSecret {
		t.Fatalf("rotate = %+v, %v", rotated, err)
	}
	d := newDispatcher(st, Config{WebhookAllowPrivate: true}, func(j store.Job) ([]byte, error) { return []byte(`{"id":"` + j.ID + `"}`), nil },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer d.sender.Close()
	d.now = clock
	// send cancels a new job naming the receiver as its webhook_url and delivers its event.
	send := func() got {
		t.Helper()
		job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1,
			WebhookURL: recv.URL + "/hook"}, func(store.Job) (store.Response, error) { return store.Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CancelJob(acct.ID, job.ID); err != nil {
			t.Fatal(err)
		}
		batch, err := st.ClaimWebhookDeliveries(webhookClaimRule(webhookBatch))
		if err != nil || len(batch) != 1 {
			t.Fatalf("claim = %+v, %v", batch, err)
		}
		d.deliver(context.Background(), batch[0])
		mu.Lock()
		defer mu.Unlock()
		if len(received) == 0 {
			t.Fatal("nothing delivered")
		}
		return received[len(received)-1]
	}

	// Inside the overlap: both values, each secret verifies at the receiver's clock.
	now.Store(start.Add(webhook.SecretOverlap - time.Minute).UnixNano())
	in := send()
	if n := strings.Count(in.sig, "v1="); n != 2 {
		t.Fatalf("signature during the overlap %q has %d v1 values, want 2", in.sig, n)
	}
	for _, secret := range []string{newSecret, oldSecret} {
		if err := webhook.Verify(secret, in.sig, in.body, clock(), 0); err != nil {
			t.Fatalf("during the overlap %s does not verify: %v", secret, err)
		}
	}
	if in.sig != webhook.SignAll([]string{newSecret, oldSecret}, clock(), in.body) {
		t.Fatalf("signature %q is not the new secret's then the old one's", in.sig)
	}

	// After the overlap: only the new secret signs; the old one is refused.
	now.Store(start.Add(webhook.SecretOverlap + time.Minute).UnixNano())
	after := send()
	if n := strings.Count(after.sig, "v1="); n != 1 {
		t.Fatalf("signature after the overlap %q has %d v1 values, want 1", after.sig, n)
	}
	if err := webhook.Verify(newSecret, after.sig, after.body, clock(), 0); err != nil {
		t.Fatalf("after the overlap the new secret does not verify: %v", err)
	}
	if err := webhook.Verify(oldSecret, after.sig, after.body, clock(), 0); !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("after the overlap the rotated secret verifies: %v, want ErrBadSignature", err)
	}
}
