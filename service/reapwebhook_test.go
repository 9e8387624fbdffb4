package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// TestShared_ReapedJobSendsJobFailedWebhook: a node claims a job on its last attempt and dies
// (it never heartbeats again). When the lease lapses this node's reaper fails the job
// expired_or_exhausted, and the account's webhook receiver gets job.failed for it: signed
// with the endpoint's secret, the failed job as its data, exactly once.
func TestShared_ReapedJobSendsJobFailedWebhook(t *testing.T) {
	pg := testenv.Postgres(t)
	var dbCfg service.Config
	pg(&dbCfg)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(120*time.Second))
	defer cancel()

	// Before this node starts, a node that will die claims the job: attempt 1, the last with
	// --max-attempts 1. Its lease is long, so nothing reaps it until the test lapses it.
	crashed, err := pgstore.Open(ctx, dbCfg.Database, pgstore.Options{NodeID: "crashed-node", Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := crashed.CreateAccount("hooks", 100)
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := crashed.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
		func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.StartJob(acct.ID, job.ID, 10); err != nil {
		t.Fatal(err)
	}
	if claimed, ok, err := crashed.ClaimJob(); err != nil || !ok || claimed.ID != job.ID || claimed.Attempt != 1 {
		t.Fatalf("the doomed node claimed %+v, %v, %v", claimed, ok, err)
	}
	crashed.Close()

	e := testenv.Start(t, pg, func(c *service.Config) {
		c.Workers = 1
		c.Lease = 2 * time.Second // the reaper runs every second
		c.MaxAttempts = 1
		c.WebhookAllowPrivate = true
	})

	// The receiver verifies every request's signature and records the events.
	var mu sync.Mutex
	var secret string
	var events []client.WebhookEvent
	arrived := make(chan struct{}, 100)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := secret
		mu.Unlock()
		ev, err := client.ReadWebhook(r, s)
		if err != nil {
			t.Errorf("delivery does not verify: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if got := r.Header.Get(client.WebhookEventIDHeader); got != ev.ID {
			t.Errorf("event id header %q, body %q", got, ev.ID)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		arrived <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	admin := &client.Client{BaseURL: e.URL, Key: e.AdminToken, HTTP: e.HTTP}
	ep, err := admin.CreateWebhook(ctx, acct.ID, recv.URL+"/hook")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	secret = ep.Secret
	mu.Unlock()

	// The dead node's lease lapses; this node's reaper fails the job.
	other := openOtherNode(t, e.Cfg.Database)
	if _, err := other.Pool().Exec(ctx, `UPDATE jobs SET lease_expires_at = now() - interval '1 second'
		WHERE id = $1 AND status = 'running'`, job.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		j, err := other.Job(acct.ID, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == store.StatusFailed {
			if j.ErrorCode != store.CodeExpiredOrExhausted || j.Attempt != 1 {
				t.Fatalf("reaped job %+v", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reaper did not fail the job: %+v", j)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its delivery was recorded with the failure, in the same transaction.
	ds, err := admin.WebhookDeliveries(ctx, acct.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	evt := "evt_" + job.ID + "_failed"
	if len(ds) != 1 || ds[0].EventID != evt || ds[0].EventType != "job.failed" || ds[0].JobID != job.ID {
		t.Fatalf("deliveries once the reaper failed the job: %+v; want one job.failed %s", ds, evt)
	}

	select {
	case <-arrived:
	case <-time.After(testenv.Scale(60 * time.Second)):
		t.Fatal("the receiver got no job.failed for the reaped job")
	}
	deadline = time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		ds, err := admin.WebhookDeliveries(ctx, acct.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 {
			t.Fatalf("deliveries %+v, want one", ds)
		}
		if ds[0].State == "delivered" {
			if ds[0].Attempts != 1 || ds[0].LastStatusCode == nil || *ds[0].LastStatusCode != http.StatusNoContent {
				t.Fatalf("delivery %+v", ds[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery not recorded as delivered: %+v", ds[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("receiver got %d events, want 1: %+v", len(events), events)
	}
	ev := events[0]
	got := ev.Data.Job
	if ev.ID != evt || ev.Type != "job.failed" || got.ID != job.ID || got.Status != client.StatusFailed || got.Attempt != 1 ||
		got.ErrorCode == nil || *got.ErrorCode != client.ErrorCode(store.CodeExpiredOrExhausted) || got.ErrorMessage == nil || *got.ErrorMessage == "" {
		t.Fatalf("event %+v, job %+v", ev, got)
	}
	if a := e.Account(acct.ID); a["reserved_cents"] != 0.0 || a["spent_cents"] != 0.0 {
		t.Fatalf("ledger of the account %v", a)
	}
}
