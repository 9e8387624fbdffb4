package pgstore_test

import (
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestEvents_ReachEveryNode: two nodes on one database. A job's state change made on node A
// (a start by its transition function, a cancel by a Go transaction) wakes the job's
// WaitChange and the event waiters of its account on node B (NOTIFY, sent after the commit:
// migration 0020), and node B reads the event from
// the shared log; a progress report published on node A reaches node B's progress hub and
// wakes its streams there, without a row written.
func TestEvents_ReachEveryNode(t *testing.T) {
	url := testpg.NewDatabase(t)
	a := open(t, url, pgstore.Options{NodeID: "node-a"})
	b := open(t, url, pgstore.Options{NodeID: "node-b"})
	acct, err := a.CreateAccount("acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := a.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
		func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	// A start (a transition function, its notifications sent after its commit: 0020).
	started, _, err := a.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
		func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	startChanged, releaseStart := b.WaitChange(started.ID)
	defer releaseStart()
	startEvents, releaseStartEvents := b.WaitEvents(acct.ID)
	defer releaseStartEvents()
	if _, err := a.StartSealedJob(acct.ID, started.ID, store.Upload{Size: 10}); err != nil {
		t.Fatal(err)
	}
	for what, ch := range map[string]<-chan struct{}{"WaitChange": startChanged, "event waiter": startEvents} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("node B's %s was not woken by node A's start", what)
		}
	}
	if _, err := a.CancelJob(acct.ID, started.ID); err != nil {
		t.Fatal(err)
	}

	changed, release := b.WaitEvents(acct.ID)
	defer release()
	if _, err := a.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("node B's event waiter was not woken by node A's cancel")
	}
	evs, err := b.EventsAfter(acct.ID, 0, "", 10)
	if err != nil || len(evs) != 3 || evs[2].ID != store.WebhookEventID(job.ID, store.StatusCancelled) {
		t.Fatalf("node B reads %+v, %v; want the start, its cancel and the cancel", evs, err)
	}

	hubA, hubB := store.NewProgressHub(), store.NewProgressHub()
	hubA.Publish = func(p string) {
		if err := a.PublishProgress(p); err != nil {
			t.Error(err)
		}
	}
	b.OnProgress(hubB.Apply)
	woken, releaseProgress := hubB.WaitProgress(acct.ID)
	defer releaseProgress()
	hubA.Report(acct.ID, "job_running", 2, 0.42)
	select {
	case <-woken:
	case <-time.After(30 * time.Second):
		t.Fatal("node B's progress waiter was not woken by node A's report")
	}
	if v, ok := hubB.Progress("job_running", 2); !ok || v != 0.42 {
		t.Fatalf("node B's progress of the job: %v, %v; want 0.42", v, ok)
	}
	if _, ok := hubB.Progress("job_running", 1); ok {
		t.Fatal("node B reports attempt 2's progress for attempt 1")
	}
}
