package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// clockedStore opens a bbolt store whose clock is now (set it with now.Store(t.UnixNano())),
// starting at start, with a retention long enough for days of the clock moving; clock reads it,
// for the dispatcher too.
func clockedStore(t *testing.T, start time.Time) (st *store.Store, now *atomic.Int64, clock func() time.Time) {
	t.Helper()
	now = new(atomic.Int64)
	now.Store(start.UnixNano())
	clock = func() time.Time { return time.Unix(0, now.Load()) }
	st, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{Now: clock, Retention: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, now, clock
}

// TestDispatcher_GivesUpAndDisables drives the dispatcher's rounds on a real bbolt store
// against a real receiver that always fails, with the dispatcher's clock moved forward: a
// delivery is retried until webhook.RetryFor has passed since its event, then fails for good;
// an endpoint failing every delivery for webhook.DisableAfter is disabled and gets no new
// deliveries.
func TestDispatcher_GivesUpAndDisables(t *testing.T) {
	start := time.Now()
	st, now, clock := clockedStore(t, start)
	var hits atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer recv.Close()
	acct, err := st.CreateAccount("hooks", 100)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := st.CreateWebhookEndpoint(acct.ID, recv.URL, "whsec_test")
	if err != nil {
		t.Fatal(err)
	}
	cancelJob := func() string {
		job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
			func(store.Job) (store.Response, error) { return store.Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CancelJob(acct.ID, job.ID); err != nil {
			t.Fatal(err)
		}
		return store.WebhookEventID(job.ID, store.StatusCancelled) + "." + ep.ID
	}
	render := func(j store.Job) ([]byte, error) { return []byte(`{"id":"` + j.ID + `"}`), nil }
	d := newDispatcher(st, Config{WebhookAllowPrivate: true, WebhookBackoff: func(int) time.Duration { return -time.Second },
		WebhookPause: func(int) time.Duration { return -time.Second }},
		render, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer d.sender.Close()
	d.now = clock
	state := func(id string) store.WebhookDelivery {
		t.Helper()
		ds, err := st.WebhookDeliveries(acct.ID, store.WebhookDeliveryQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ds {
			if x.ID == id {
				return x
			}
		}
		t.Fatalf("no delivery %s in %+v", id, ds)
		return store.WebhookDelivery{}
	}
	round := func() {
		t.Helper()
		batch, err := st.ClaimWebhookDeliveries(store.WebhookClaim{Limit: webhookBatch, Hold: webhookClaim})
		if err != nil {
			t.Fatal(err)
		}
		for _, del := range batch {
			d.deliver(context.Background(), del)
		}
	}

	first := cancelJob()
	round()
	got := state(first)
	if got.State != store.DeliveryPending || got.Attempts != 1 || got.LastStatusCode != 503 || !strings.Contains(got.LastError, "503") ||
		!strings.Contains(got.LastError, "down for maintenance") {
		t.Fatalf("after a failed attempt: %+v", got)
	}
	// Still within RetryFor: due again (the test's backoff makes it due at once).
	now.Store(start.Add(webhook.RetryFor - time.Minute).UnixNano())
	round()
	if got := state(first); got.State != store.DeliveryPending || got.Attempts != 2 {
		t.Fatalf("retried within RetryFor: %+v", got)
	}
	// Past RetryFor since the event: the next failure gives up.
	now.Store(start.Add(webhook.RetryFor + time.Minute).UnixNano())
	round()
	if got := state(first); got.State != store.DeliveryFailed || got.Attempts != 3 {
		t.Fatalf("after RetryFor: %+v", got)
	}
	round()
	if n := hits.Load(); n != 3 {
		t.Fatalf("receiver got %d requests, want 3", n)
	}
	// The endpoint has failed since the first attempt; a failure DisableAfter later disables it.
	eps, _ := st.WebhookEndpoints(acct.ID)
	if eps[0].FailingSince == nil || eps[0].DisabledAt != nil {
		t.Fatalf("endpoint after 3 days of failures: %+v", eps[0])
	}
	second := cancelJob()
	now.Store(start.Add(webhook.DisableAfter + time.Minute).UnixNano())
	round()
	eps, _ = st.WebhookEndpoints(acct.ID)
	if eps[0].DisabledAt == nil {
		t.Fatalf("endpoint failing for DisableAfter is not disabled: %+v", eps[0])
	}
	if got := state(second); got.State != store.DeliveryPending || got.Attempts != 1 {
		t.Fatalf("delivery that disabled its endpoint: %+v", got)
	}
	// Its pending delivery fails at the next claim; new events skip it.
	round()
	if got := state(second); got.State != store.DeliveryFailed || got.LastError != "the endpoint is disabled" {
		t.Fatalf("pending delivery of a disabled endpoint: %+v", got)
	}
	cancelJob()
	if c, err := st.WebhookCounts(); err != nil || c != (store.WebhookCounts{Failed: 2, DisabledEndpoints: 1}) {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	if n := hits.Load(); n != 4 {
		t.Fatalf("receiver got %d requests, want 4", n)
	}
}

// TestDispatcher_StopsCleanly: run returns when stop closes, also with an attempt hanging at
// the receiver, and that attempt is not recorded (it is sent again after a restart).
func TestDispatcher_StopsCleanly(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer recv.Close()
	defer close(release)
	acct, _ := st.CreateAccount("hooks", 100)
	if _, err := st.CreateWebhookEndpoint(acct.ID, recv.URL, "whsec_test"); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(st, Config{WebhookAllowPrivate: true, WebhookTimeout: time.Hour},
		func(j store.Job) ([]byte, error) { return []byte(`{}`), nil }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer d.sender.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		d.run(stop)
		close(done)
	}()
	job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
		func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	select { // woken by the record, not by its 5 s timer: the attempt arrives
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery after an event was recorded")
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after stop")
	}
	ds, _ := st.WebhookDeliveries(acct.ID, store.WebhookDeliveryQuery{})
	if len(ds) != 1 || ds[0].State != store.DeliveryPending || !ds[0].Claimed || ds[0].LastAttemptAt != nil {
		t.Fatalf("delivery cut short by stop: %+v", ds)
	}
	// A restart (a new dispatcher on the same store) sends it again at once.
	if n, err := st.ResetWebhookClaims(); err != nil || n != 1 {
		t.Fatalf("reset claims = %d, %v", n, err)
	}
	if claimed, err := st.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Minute}); err != nil || len(claimed) != 1 || claimed[0].Attempts != 2 {
		t.Fatalf("claim after the reset = %+v, %v", claimed, err)
	}
}
