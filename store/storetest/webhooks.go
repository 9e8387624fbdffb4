package storetest

import (
	"encoding/json"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// WebhookBackend is what the webhook cases need besides Backend: endpoints, the account's
// signing secret, the delivery records written with a job's state change, and the
// dispatcher's claim and report.
type WebhookBackend interface {
	CreateWebhookEndpoint(accountID, url, secret string) (store.WebhookEndpoint, error)
	WebhookEndpoints(accountID string) ([]store.WebhookEndpoint, error)
	DeleteWebhookEndpoint(accountID, endpointID string) error
	EnableWebhookEndpoint(accountID, endpointID string) (store.WebhookEndpoint, error)
	RotateWebhookEndpointSecret(accountID, endpointID, secret string, overlap time.Duration) (store.WebhookEndpoint, error)
	SetWebhookSigningSecret(accountID, secret string, overlap time.Duration) (store.WebhookSigningSecret, error)
	WebhookSigningSecret(accountID string) (store.WebhookSigningSecret, error)
	JobWebhookURL(jobID string) (string, error)
	ClaimWebhookDeliveries(c store.WebhookClaim) ([]store.WebhookDelivery, error)
	RecordWebhookAttempt(deliveryID string, a store.WebhookAttempt) (store.WebhookDelivery, error)
	WebhookDeliveries(accountID string, q store.WebhookDeliveryQuery) ([]store.WebhookDelivery, error)
	WebhookCounts() (store.WebhookCounts, error)
	PurgeWebhookDeliveries(cutoff time.Time) (int, error)
	WebhookWake() <-chan struct{}
}

// webhookCases run on every backend like the rest of the suite.
var webhookCases = []testCase{
	{"WebhookEndpoints", testWebhookEndpoints},
	{"WebhookOneDeliveryPerEvent", testWebhookOneDeliveryPerEvent},
	{"WebhookEveryFinalTransition", testWebhookEveryTransition},
	{"WebhookClaimRetryDeliver", testWebhookClaimRetryDeliver},
	{"WebhookDisableEndpoint", testWebhookDisable},
	{"WebhookClaimsNeverDuplicate", testWebhookClaimsConcurrent},
	{"WebhookTakenBackOnLastAttempt", testWebhookTakenBack},
	{"WebhookExpiryPaths", testWebhookExpiryPaths},
	{"WebhookSigningSecretRotation", testWebhookSecretRotation},
	{"WebhookEndpointCap", testWebhookEndpointCap},
}

func init() { cases = append(cases, webhookCases...) }

func (f *fixture) wh() WebhookBackend {
	f.t.Helper()
	wb, ok := f.s.(WebhookBackend)
	if !ok {
		f.t.Fatalf("%T does not implement storetest.WebhookBackend", f.s)
	}
	return wb
}

func (f *fixture) endpoint(url string) store.WebhookEndpoint {
	f.t.Helper()
	ep, err := f.wh().CreateWebhookEndpoint(f.acct.ID, url, "whsec_"+url)
	if err != nil {
		f.t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

// deliveries returns the account's deliveries sorted by id.
func (f *fixture) deliveries() []store.WebhookDelivery {
	f.t.Helper()
	ds, err := f.wh().WebhookDeliveries(f.acct.ID, store.WebhookDeliveryQuery{Limit: 1000})
	if err != nil {
		f.t.Fatalf("deliveries: %v", err)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].ID < ds[j].ID })
	return ds
}

func (f *fixture) finishOK(job store.Job) store.Job {
	f.t.Helper()
	f.start(job)
	got := f.claim()
	done, err := f.s.FinishJob(got.ID, got.Attempt, success(7))
	if err != nil {
		f.t.Fatalf("finish: %v", err)
	}
	return done
}

func testWebhookEndpoints(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	other := newFixtureOn(t, f.s, "other")
	wb := f.wh()
	if eps, err := wb.WebhookEndpoints(f.acct.ID); err != nil || len(eps) != 0 {
		t.Fatalf("endpoints of a new account = %v, %v", eps, err)
	}
	a := f.endpoint("https://a.example/hook")
	b := f.endpoint("https://b.example/hook")
	if a.ID == b.ID || a.AccountID != f.acct.ID || a.Secret != "whsec_https://a.example/hook" || a.CreatedAt.IsZero() || a.DisabledAt != nil {
		t.Fatalf("endpoints %+v %+v", a, b)
	}
	eps, err := wb.WebhookEndpoints(f.acct.ID)
	if err != nil || len(eps) != 2 || eps[0].ID != a.ID || eps[1].ID != b.ID || eps[0].URL != a.URL || eps[0].Secret != a.Secret {
		t.Fatalf("endpoints = %+v, %v", eps, err)
	}
	if eps, err := wb.WebhookEndpoints(other.ID); err != nil || len(eps) != 0 {
		t.Fatalf("other account sees %v, %v", eps, err)
	}
	_, err = wb.WebhookEndpoints("acct_nonexistent")
	wantErr(t, err, store.ErrNotFound, "endpoints of an unknown account")
	_, err = wb.CreateWebhookEndpoint("acct_nonexistent", "https://x.example/", "whsec_x")
	wantErr(t, err, store.ErrNotFound, "endpoint for an unknown account")
	wantErr(t, wb.DeleteWebhookEndpoint(other.ID, a.ID), store.ErrNotFound, "delete another account's endpoint")
	if err := wb.DeleteWebhookEndpoint(f.acct.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, wb.DeleteWebhookEndpoint(f.acct.ID, a.ID), store.ErrNotFound, "delete twice")
	if eps, err := wb.WebhookEndpoints(f.acct.ID); err != nil || len(eps) != 1 || eps[0].ID != b.ID {
		t.Fatalf("after delete = %+v, %v", eps, err)
	}
	// The signing secret for jobs' own webhook_url: none, then set, then replaced.
	_, err = wb.WebhookSigningSecret(f.acct.ID)
	wantErr(t, err, store.ErrNotFound, "signing secret before any")
	for _, secret := range []string{"whsec_one", "whsec_two"} {
		if _, err := wb.SetWebhookSigningSecret(f.acct.ID, secret, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := wb.WebhookSigningSecret(f.acct.ID); err != nil || got.Secret != secret || got.AccountID != f.acct.ID ||
			got.PreviousSecret != "" || got.PreviousExpiresAt != nil {
			t.Fatalf("signing secret = %+v, %v; want %s", got, err, secret)
		}
	}
	_, err = wb.SetWebhookSigningSecret("acct_nonexistent", "whsec_x", time.Hour)
	wantErr(t, err, store.ErrNotFound, "signing secret of an unknown account")
}

// newFixtureOn makes another account on the fixture's store.
func newFixtureOn(t *testing.T, s Backend, name string) store.Account {
	t.Helper()
	acct, err := s.CreateAccount(name, 100)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

func testWebhookOneDeliveryPerEvent(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	wb := f.wh()
	// No endpoint and no webhook_url: no deliveries.
	f.finishOK(f.create(1))
	if ds := f.deliveries(); len(ds) != 0 {
		t.Fatalf("deliveries without destinations: %+v", ds)
	}
	// A webhook_url needs the account's signing secret; refused, the create reserves nothing.
	_, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1,
		WebhookURL: "https://job.example/hook"}, plainRender)
	wantErr(t, err, store.ErrInvalidArgument, "webhook_url without a signing secret")
	f.checkLedger(0, 1)
	if _, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_acct", 0); err != nil {
		t.Fatal(err)
	}
	a := f.endpoint("https://a.example/hook")
	b := f.endpoint("https://b.example/hook")
	job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1,
		WebhookURL: "https://job.example/hook"}, plainRender)
	if err != nil {
		t.Fatal(err)
	}
	if url, err := wb.JobWebhookURL(job.ID); err != nil || url != "https://job.example/hook" {
		t.Fatalf("job webhook url = %q, %v", url, err)
	}
	done := f.finishOK(job)
	ds := f.deliveries()
	evt := "evt_" + job.ID + "_succeeded"
	want := []struct{ id, endpoint, url string }{
		{evt + "." + a.ID, a.ID, a.URL},
		{evt + "." + b.ID, b.ID, b.URL},
		{evt + ".job", "", "https://job.example/hook"},
	}
	slices.SortFunc(want, func(x, y struct{ id, endpoint, url string }) int {
		if x.id < y.id {
			return -1
		}
		return 1
	})
	if len(ds) != len(want) {
		t.Fatalf("%d deliveries, want %d: %+v", len(ds), len(want), ds)
	}
	for i, d := range ds {
		w := want[i]
		if d.ID != w.id || d.EndpointID != w.endpoint || d.URL != w.url || d.EventID != evt || d.EventType != "job.succeeded" ||
			d.AccountID != f.acct.ID || d.JobID != job.ID || d.State != store.DeliveryPending || d.Attempts != 0 || d.CreatedAt.IsZero() {
			t.Fatalf("delivery %d = %+v, want %+v", i, d, w)
		}
		var snap store.Job
		if err := json.Unmarshal(d.Job, &snap); err != nil {
			t.Fatalf("job snapshot %s: %v", d.Job, err)
		}
		if snap.ID != job.ID || snap.Status != store.StatusSucceeded || snap.Output == nil || snap.Output.Bytes != 7 ||
			snap.FinishedAt == nil || !snap.FinishedAt.Equal(*done.FinishedAt) {
			t.Fatalf("job snapshot %+v, finished job %+v", snap, done)
		}
	}
	c, err := wb.WebhookCounts()
	if err != nil || c.Pending != 3 || c.Delivered != 0 || c.Failed != 0 || c.DisabledEndpoints != 0 {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	// A transition refused (finishing it again, cancelling the succeeded job) records nothing.
	_, err = f.s.FinishJob(job.ID, 1, success(7))
	wantErr(t, err, store.ErrInvalidState, "finish twice")
	_, err = f.s.CancelJob(f.acct.ID, job.ID)
	wantErr(t, err, store.ErrInvalidState, "cancel succeeded")
	// Cancelling twice records one job.cancelled per destination.
	c2 := f.create(1)
	for range 2 {
		if _, err := f.s.CancelJob(f.acct.ID, c2.ID); err != nil {
			t.Fatal(err)
		}
	}
	if ds := f.deliveries(); len(ds) != 5 {
		t.Fatalf("%d deliveries after a double cancel, want 5: %+v", len(ds), ds)
	}
	// Another account's endpoints get nothing of this account's jobs.
	other := newFixtureOn(t, f.s, "other")
	if _, err := wb.CreateWebhookEndpoint(other.ID, "https://other.example/", "whsec_o"); err != nil {
		t.Fatal(err)
	}
	f.finishOK(f.create(1))
	if ds, err := wb.WebhookDeliveries(other.ID, store.WebhookDeliveryQuery{}); err != nil || len(ds) != 0 {
		t.Fatalf("other account's deliveries = %+v, %v", ds, err)
	}
	if ds := f.deliveries(); len(ds) != 7 {
		t.Fatalf("%d deliveries, want 7", len(ds))
	}
}

func testWebhookEveryTransition(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	ep := f.endpoint("https://a.example/hook")
	want := map[string]string{} // event id -> type
	// failed by the worker
	j := f.create(1)
	f.start(j)
	got := f.claim()
	if _, err := f.s.FinishJob(got.ID, got.Attempt, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad"}); err != nil {
		t.Fatal(err)
	}
	want["evt_"+j.ID+"_failed"] = "job.failed"
	// failed by exhaustion on requeue
	j = f.create(1)
	f.start(j)
	got = f.claim()
	if _, requeued, err := f.s.RequeueJob(got.ID, got.Attempt, 1, "disk full"); err != nil || requeued {
		t.Fatalf("requeue = %v, %v", requeued, err)
	}
	want["evt_"+j.ID+"_failed"] = "job.failed"
	// cancelled in created, queued and running
	for _, state := range []string{"created", "queued", "running"} {
		j = f.create(1)
		if state != "created" {
			f.start(j)
		}
		if state == "running" {
			f.claim()
		}
		if _, err := f.s.CancelJob(f.acct.ID, j.ID); err != nil {
			t.Fatal(err)
		}
		want["evt_"+j.ID+"_cancelled"] = "job.cancelled"
	}
	// cancelled by a size mismatch at start
	j = f.create(5)
	_, err := f.s.StartJob(f.acct.ID, j.ID, 4)
	wantErr(t, err, store.ErrSizeMismatch, "start with the wrong size")
	want["evt_"+j.ID+"_cancelled"] = "job.cancelled"
	// succeeded
	j = f.finishOK(f.create(1))
	want["evt_"+j.ID+"_succeeded"] = "job.succeeded"

	ds := f.deliveries()
	gotEvents := map[string]string{}
	for _, d := range ds {
		if d.EndpointID != ep.ID || d.ID != d.EventID+"."+ep.ID {
			t.Fatalf("delivery %+v", d)
		}
		if _, dup := gotEvents[d.EventID]; dup {
			t.Fatalf("event %s recorded twice", d.EventID)
		}
		gotEvents[d.EventID] = d.EventType
		var snap store.Job
		if err := json.Unmarshal(d.Job, &snap); err != nil || "job."+snap.Status != d.EventType {
			t.Fatalf("snapshot of %s: %s (%v)", d.EventType, d.Job, err)
		}
	}
	if len(gotEvents) != len(want) {
		t.Fatalf("events %v, want %v", gotEvents, want)
	}
	for id, typ := range want {
		if gotEvents[id] != typ {
			t.Fatalf("event %s = %q, want %q (all: %v)", id, gotEvents[id], typ, gotEvents)
		}
	}
}

func testWebhookClaimRetryDeliver(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	wb := f.wh()
	ep := f.endpoint("https://a.example/hook")
	wake := wb.WebhookWake()
	job := f.finishOK(f.create(1))
	select { // the commit that recorded the delivery woke the dispatcher
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("no wake-up after a delivery was recorded")
	}
	claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	d := claimed[0]
	if d.JobID != job.ID || d.Attempts != 1 || d.Secret != ep.Secret || d.URL != ep.URL || !d.Claimed {
		t.Fatalf("claimed %+v", d)
	}
	// Held: a second claim gets nothing.
	if again, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour}); err != nil || len(again) != 0 {
		t.Fatalf("claimed again while held: %+v, %v", again, err)
	}
	// The attempt failed; due again at once.
	now := time.Now()
	got, err := wb.RecordWebhookAttempt(d.ID, store.WebhookAttempt{Attempts: 1, At: now, StatusCode: 503, Err: "HTTP 503",
		RetryAt: now.Add(-time.Second), DisableAfter: time.Hour})
	if err != nil || got.State != store.DeliveryPending || got.LastStatusCode != 503 || got.LastError != "HTTP 503" || got.LastAttemptAt == nil || got.Claimed {
		t.Fatalf("after a failed attempt: %+v, %v", got, err)
	}
	eps, _ := wb.WebhookEndpoints(f.acct.ID)
	if eps[0].FailingSince == nil || eps[0].DisabledAt != nil {
		t.Fatalf("endpoint after a failure: %+v", eps[0])
	}
	// A stale report of attempt 1 is refused once attempt 2 is claimed.
	claimed, err = wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour})
	if err != nil || len(claimed) != 1 || claimed[0].Attempts != 2 {
		t.Fatalf("second claim = %+v, %v", claimed, err)
	}
	_, err = wb.RecordWebhookAttempt(d.ID, store.WebhookAttempt{Attempts: 1, At: now, Err: "late"})
	wantErr(t, err, store.ErrInvalidState, "stale attempt report")
	got, err = wb.RecordWebhookAttempt(d.ID, store.WebhookAttempt{Attempts: 2, At: time.Now(), StatusCode: 204})
	if err != nil || got.State != store.DeliveryDelivered || got.DeliveredAt == nil || got.Attempts != 2 || got.LastError != "" || got.LastStatusCode != 204 {
		t.Fatalf("after delivery: %+v, %v", got, err)
	}
	eps, _ = wb.WebhookEndpoints(f.acct.ID)
	if eps[0].FailingSince != nil {
		t.Fatalf("a delivery did not end the failing period: %+v", eps[0])
	}
	_, err = wb.RecordWebhookAttempt(d.ID, store.WebhookAttempt{Attempts: 2, At: now})
	wantErr(t, err, store.ErrInvalidState, "report after delivered")
	// Given up: failed for good.
	f.finishOK(f.create(1))
	claimed, err = wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	if got, err := wb.RecordWebhookAttempt(claimed[0].ID, store.WebhookAttempt{Attempts: 1, At: time.Now(), Err: "connection refused"}); err != nil || got.State != store.DeliveryFailed {
		t.Fatalf("give up = %+v, %v", got, err)
	}
	c, err := wb.WebhookCounts()
	if err != nil || c != (store.WebhookCounts{Delivered: 1, Failed: 1}) {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	if ds, err := wb.WebhookDeliveries(f.acct.ID, store.WebhookDeliveryQuery{State: store.DeliveryFailed}); err != nil || len(ds) != 1 || ds[0].ID != claimed[0].ID || ds[0].LastError != "connection refused" {
		t.Fatalf("failed deliveries = %+v, %v", ds, err)
	}
	// Purge keeps nothing finished before the cutoff.
	if n, err := wb.PurgeWebhookDeliveries(time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if ds := f.deliveries(); len(ds) != 0 {
		t.Fatalf("after purge: %+v", ds)
	}
}

func testWebhookDisable(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	wb := f.wh()
	ep := f.endpoint("https://a.example/hook")
	f.finishOK(f.create(1))
	f.finishOK(f.create(1))
	claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 1, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	start := time.Now()
	// The first failure starts the failing period; a failure DisableAfter later disables it.
	if _, err := wb.RecordWebhookAttempt(claimed[0].ID, store.WebhookAttempt{Attempts: 1, At: start, Err: "HTTP 500", RetryAt: start.Add(-time.Second), DisableAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	claimed, err = wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 1, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	if _, err := wb.RecordWebhookAttempt(claimed[0].ID, store.WebhookAttempt{Attempts: claimed[0].Attempts, At: start.Add(time.Hour), Err: "HTTP 500", RetryAt: start.Add(-time.Second), DisableAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	eps, err := wb.WebhookEndpoints(f.acct.ID)
	if err != nil || eps[0].DisabledAt == nil || eps[0].FailingSince == nil || eps[0].FailingSince.Sub(start).Abs() > time.Millisecond {
		t.Fatalf("endpoint after failing an hour: %+v, %v", eps, err)
	}
	c, err := wb.WebhookCounts()
	if err != nil || c.DisabledEndpoints != 1 || c.Pending != 2 {
		t.Fatalf("counts = %+v, %v", c, err)
	}
	// A disabled endpoint's pending deliveries fail at their claim; new events skip it.
	if claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour}); err != nil || len(claimed) != 0 {
		t.Fatalf("claimed for a disabled endpoint: %+v, %v", claimed, err)
	}
	f.finishOK(f.create(1))
	ds := f.deliveries()
	if len(ds) != 2 {
		t.Fatalf("deliveries = %+v", ds)
	}
	for _, d := range ds {
		if d.State != store.DeliveryFailed || d.LastError != "the endpoint is disabled" {
			t.Fatalf("delivery of a disabled endpoint: %+v", d)
		}
	}
	// Enabled again, it gets the next event.
	if got, err := wb.EnableWebhookEndpoint(f.acct.ID, ep.ID); err != nil || got.DisabledAt != nil || got.FailingSince != nil {
		t.Fatalf("enable = %+v, %v", got, err)
	}
	f.finishOK(f.create(1))
	if claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour}); err != nil || len(claimed) != 1 {
		t.Fatalf("claim after enabling = %+v, %v", claimed, err)
	}
	_, err = wb.EnableWebhookEndpoint("acct_other", ep.ID)
	wantErr(t, err, store.ErrNotFound, "enable another account's endpoint")
}

func testWebhookClaimsConcurrent(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	wb := f.wh()
	f.endpoint("https://a.example/hook")
	f.endpoint("https://b.example/hook")
	const jobs = 20
	for range jobs {
		if _, err := f.s.CancelJob(f.acct.ID, f.create(1).ID); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 3, Hold: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(claimed) == 0 {
					return
				}
				mu.Lock()
				for _, d := range claimed {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != 2*jobs {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), 2*jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("delivery %s claimed %d times", id, n)
		}
	}
}

// LeaseReaper is a backend whose claims are leases that lapse when the worker stops renewing
// them (PostgreSQL): any node's reaper requeues the running jobs whose lease lapsed, or fails
// them expired_or_exhausted at maxAttempts.
type LeaseReaper interface {
	ReapExpiredLeases(maxAttempts int) (requeued, failed []string, err error)
}

// RunningRecoverer is a backend without leases (bbolt): at start-up, before any worker runs,
// RecoverRunning requeues the jobs a crash left running, or fails them at maxAttempts.
type RunningRecoverer interface {
	RecoverRunning(maxAttempts int) (requeued, failed []string, err error)
}

// takeBack takes back the running jobs want names from a worker that stopped, the backend's
// way: a LeaseReaper is reaped until every one of them was requeued or failed (their leases,
// Options.Lease, lapse on the database's clock, so it polls within waitBound); a
// RunningRecoverer recovers once. It returns what was requeued and failed, sorted.
func (f *fixture) takeBack(maxAttempts int, want ...string) (requeued, failed []string) {
	f.t.Helper()
	switch b := f.s.(type) {
	case LeaseReaper:
		deadline := time.Now().Add(waitBound)
		for {
			r, fl, err := b.ReapExpiredLeases(maxAttempts)
			if err != nil {
				f.t.Fatalf("reap expired leases: %v", err)
			}
			requeued, failed = append(requeued, r...), append(failed, fl...)
			done := true
			for _, id := range want {
				done = done && (slices.Contains(requeued, id) || slices.Contains(failed, id))
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("leases of %v not reaped within %v: requeued %v, failed %v", want, waitBound, requeued, failed)
			}
			time.Sleep(50 * time.Millisecond)
		}
	case RunningRecoverer:
		var err error
		if requeued, failed, err = b.RecoverRunning(maxAttempts); err != nil {
			f.t.Fatalf("recover running: %v", err)
		}
	default:
		f.t.Fatalf("%T can neither reap leases nor recover running jobs", f.s)
	}
	slices.Sort(requeued)
	slices.Sort(failed)
	return requeued, failed
}

// testWebhookTakenBack: a job whose worker stopped on its last attempt, failed
// expired_or_exhausted by the lease reaper (PostgreSQL) or start-up recovery (bbolt), records
// exactly one job.failed delivery per destination, with the failed job as its snapshot, like
// any other failure; a job taken back with attempts left (requeued) records none, and taking
// back again records nothing more.
func testWebhookTakenBack(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{Lease: time.Second}, 100)
	wb := f.wh()
	if _, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_acct", 0); err != nil {
		t.Fatal(err)
	}
	ep := f.endpoint("https://a.example/hook")
	const jobURL = "https://job.example/hook"
	create := func() store.Job {
		t.Helper()
		job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1,
			WebhookURL: jobURL}, plainRender)
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	const maxAttempts = 2
	// last: on its second (last) attempt; its first could not store its output.
	last := f.start(create())
	if got := f.claim(); got.ID != last.ID || got.Attempt != 1 {
		t.Fatalf("claimed %s attempt %d", got.ID, got.Attempt)
	}
	if _, requeued, err := f.s.RequeueJob(last.ID, 1, maxAttempts, "disk full"); err != nil || !requeued {
		t.Fatalf("requeue = %v, %v", requeued, err)
	}
	if got := f.claim(); got.ID != last.ID || got.Attempt != maxAttempts {
		t.Fatalf("claimed %s attempt %d", got.ID, got.Attempt)
	}
	// early: on its first attempt.
	early := f.start(create())
	if got := f.claim(); got.ID != early.ID || got.Attempt != 1 {
		t.Fatalf("claimed %s attempt %d", got.ID, got.Attempt)
	}
	if ds := f.deliveries(); len(ds) != 0 {
		t.Fatalf("deliveries before any job finished: %+v", ds)
	}

	// Their worker stops: no heartbeat, no finish.
	requeued, failed := f.takeBack(maxAttempts, last.ID, early.ID)
	if !slices.Equal(failed, []string{last.ID}) || !slices.Equal(requeued, []string{early.ID}) {
		t.Fatalf("taken back: requeued %v failed %v; want requeued [%s] failed [%s]", requeued, failed, early.ID, last.ID)
	}
	done := f.get(last.ID)
	if done.Status != store.StatusFailed || done.ErrorCode != store.CodeExpiredOrExhausted || done.ErrorMessage == "" ||
		done.FinishedAt == nil || done.Attempt != maxAttempts {
		t.Fatalf("job failed on its last attempt: %+v", done)
	}
	if got := f.get(early.ID); got.Status != store.StatusQueued {
		t.Fatalf("job with attempts left: %+v", got)
	}
	evt := "evt_" + last.ID + "_failed"
	check := func(what string) {
		t.Helper()
		ds := f.deliveries()
		want := []struct{ id, endpoint, url string }{
			{evt + "." + ep.ID, ep.ID, ep.URL},
			{evt + ".job", "", jobURL},
		}
		slices.SortFunc(want, func(x, y struct{ id, endpoint, url string }) int {
			if x.id < y.id {
				return -1
			}
			return 1
		})
		if len(ds) != len(want) {
			t.Fatalf("%s: %d deliveries, want one job.failed per destination (%d): %+v", what, len(ds), len(want), ds)
		}
		for i, d := range ds {
			w := want[i]
			if d.ID != w.id || d.EndpointID != w.endpoint || d.URL != w.url || d.EventID != evt || d.EventType != "job.failed" ||
				d.AccountID != f.acct.ID || d.JobID != last.ID || d.State != store.DeliveryPending || d.Attempts != 0 {
				t.Fatalf("%s: delivery %d = %+v, want %+v", what, i, d, w)
			}
			var snap store.Job
			if err := json.Unmarshal(d.Job, &snap); err != nil {
				t.Fatalf("job snapshot %s: %v", d.Job, err)
			}
			if snap.ID != last.ID || snap.Status != store.StatusFailed || snap.ErrorCode != store.CodeExpiredOrExhausted ||
				snap.ErrorMessage != done.ErrorMessage || snap.Attempt != maxAttempts || snap.Output != nil ||
				snap.FinishedAt == nil || !snap.FinishedAt.Equal(*done.FinishedAt) {
				t.Fatalf("%s: job snapshot %+v, failed job %+v", what, snap, done)
			}
		}
		if c, err := wb.WebhookCounts(); err != nil || c != (store.WebhookCounts{Pending: 2}) {
			t.Fatalf("%s: counts = %+v, %v", what, c, err)
		}
	}
	check("taken back")
	f.checkLedger(1, 0)

	// Taking back again finds nothing and records nothing.
	requeued, failed = f.takeBack(maxAttempts)
	if len(requeued)+len(failed) != 0 {
		t.Fatalf("taken back again: requeued %v failed %v", requeued, failed)
	}
	check("taken back again")
	// The requeued job runs again and succeeds: its own event, nothing more for the failed one.
	if got := f.claim(); got.ID != early.ID || got.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d", got.ID, got.Attempt)
	}
	if _, err := f.s.FinishJob(early.ID, 2, success(3)); err != nil {
		t.Fatal(err)
	}
	f.checkLedger(0, 1)
	n := 0
	for _, d := range f.deliveries() {
		if d.JobID == early.ID {
			if d.EventType != "job.succeeded" {
				t.Fatalf("requeued job's delivery %+v", d)
			}
			n++
		}
	}
	if n != 2 {
		t.Fatalf("requeued job's deliveries after it succeeded = %d, want 2", n)
	}
}

// testWebhookExpiryPaths: the paths that fail a job because it passed expires_at (a finish, a
// requeue, a claim, the retention sweep that then deletes it) record one job.failed per
// destination with code expired_or_exhausted, like any other failure, and the deliveries
// outlive the deleted jobs; the sweep deleting a finished job records nothing more.
func testWebhookExpiryPaths(t *testing.T, newStore NewFunc) {
	const retention = 3 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	ep := f.endpoint("https://a.example/hook")
	done := f.finishOK(f.create(1))
	toFinish := f.start(f.create(1))
	toRequeue := f.start(f.create(1))
	for _, want := range []string{toFinish.ID, toRequeue.ID} {
		if got := f.claim(); got.ID != want {
			t.Fatalf("claimed %s, want %s", got.ID, want)
		}
	}
	queued := f.start(f.create(1))
	created := f.create(1)
	f.waitExpired(created.ID, retention)
	if ds := f.deliveries(); len(ds) != 1 {
		t.Fatalf("deliveries after passing expires_at by itself: %+v", ds)
	}

	_, err := f.s.FinishJob(toFinish.ID, 1, success(1))
	wantErr(t, err, store.ErrNotFound, "finish after expires_at")
	if _, requeued, err := f.s.RequeueJob(toRequeue.ID, 1, 3, "disk full"); err != nil || requeued {
		t.Fatalf("requeue after expires_at: %v %v", requeued, err)
	}
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim of an expired queued job: ok=%v err=%v", ok, err)
	}
	for {
		d, more, err := f.s.ExpireJobs(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) == 0 && !more {
			break
		}
	}
	want := map[string]string{"evt_" + done.ID + "_succeeded": "job.succeeded"}
	for _, j := range []store.Job{toFinish, toRequeue, queued, created} {
		want["evt_"+j.ID+"_failed"] = "job.failed"
	}
	ds := f.deliveries()
	if len(ds) != len(want) {
		t.Fatalf("%d deliveries, want %d (one per event): %+v", len(ds), len(want), ds)
	}
	for _, d := range ds {
		if want[d.EventID] != d.EventType || d.ID != d.EventID+"."+ep.ID || d.State != store.DeliveryPending {
			t.Fatalf("delivery %+v; want events %v", d, want)
		}
		delete(want, d.EventID)
		var snap store.Job
		if err := json.Unmarshal(d.Job, &snap); err != nil || "job."+snap.Status != d.EventType || snap.FinishedAt == nil {
			t.Fatalf("snapshot of %s: %s (%v)", d.EventType, d.Job, err)
		}
		if snap.Status == store.StatusFailed && snap.ErrorCode != store.CodeExpiredOrExhausted {
			t.Fatalf("expired job's snapshot has error code %q: %s", snap.ErrorCode, d.Job)
		}
	}
}

// testWebhookSecretRotation: rotating the account's signing secret keeps the replaced one, with
// the end of its overlap, in the same record; a claimed delivery to a job's own webhook_url
// carries both (the dispatcher decides by its clock whether the old one still signs), and one
// to an endpoint whose own secret was rotated carries that endpoint's two; a second rotation
// drops the oldest secret.
func testWebhookSecretRotation(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	wb := f.wh()
	first, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_first", time.Hour)
	if err != nil || first.PreviousSecret != "" || first.PreviousExpiresAt != nil {
		t.Fatalf("first secret = %+v, %v: nothing to overlap with", first, err)
	}
	second, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_second", 24*time.Hour)
	if err != nil || second.Secret != "whsec_second" || second.PreviousSecret != "whsec_first" || second.PreviousExpiresAt == nil ||
		!second.PreviousExpiresAt.Equal(second.CreatedAt.Add(24*time.Hour)) {
		t.Fatalf("rotated = %+v, %v; want whsec_first kept until created_at + 24h", second, err)
	}
	if !second.PreviousValid(second.CreatedAt.Add(24*time.Hour-time.Second)) || second.PreviousValid(second.CreatedAt.Add(24*time.Hour)) {
		t.Fatalf("PreviousValid around the overlap's end is wrong for %+v", second)
	}
	got, err := wb.WebhookSigningSecret(f.acct.ID)
	if err != nil || got.Secret != "whsec_second" || got.PreviousSecret != "whsec_first" || got.PreviousExpiresAt == nil ||
		!got.PreviousExpiresAt.Equal(*second.PreviousExpiresAt) {
		t.Fatalf("read back = %+v, %v; want %+v", got, err, second)
	}
	ep := f.endpoint("https://a.example/hook")
	// The endpoint's own secret rotates the same way; another account cannot rotate it.
	other := newFixtureOn(t, f.s, "other")
	_, err = wb.RotateWebhookEndpointSecret(other.ID, ep.ID, "whsec_theirs", time.Hour)
	wantErr(t, err, store.ErrNotFound, "rotate another account's endpoint")
	rotatedEP, err := wb.RotateWebhookEndpointSecret(f.acct.ID, ep.ID, "whsec_ep_new", 2*time.Hour)
	if err != nil || rotatedEP.Secret != "whsec_ep_new" || rotatedEP.PreviousSecret != ep.Secret || rotatedEP.PreviousExpiresAt == nil {
		t.Fatalf("rotated endpoint = %+v, %v", rotatedEP, err)
	}
	if eps, err := wb.WebhookEndpoints(f.acct.ID); err != nil || len(eps) != 1 || eps[0].Secret != "whsec_ep_new" || eps[0].PreviousSecret != ep.Secret ||
		!eps[0].PreviousExpiresAt.Equal(*rotatedEP.PreviousExpiresAt) {
		t.Fatalf("endpoints after rotation = %+v, %v", eps, err)
	}
	job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1,
		WebhookURL: "https://job.example/hook"}, plainRender)
	if err != nil {
		t.Fatal(err)
	}
	f.finishOK(job)
	claimed, err := wb.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	for _, d := range claimed {
		switch d.EndpointID {
		case "":
			if d.Secret != "whsec_second" || d.PreviousSecret != "whsec_first" || !d.PreviousSecretUntil.Equal(*second.PreviousExpiresAt) {
				t.Fatalf("job URL delivery signs with %q, previous %q until %v; want whsec_second, whsec_first until %v",
					d.Secret, d.PreviousSecret, d.PreviousSecretUntil, second.PreviousExpiresAt)
			}
		case ep.ID:
			if d.Secret != "whsec_ep_new" || d.PreviousSecret != ep.Secret || !d.PreviousSecretUntil.Equal(*rotatedEP.PreviousExpiresAt) {
				t.Fatalf("endpoint delivery signs with %q, previous %q until %v", d.Secret, d.PreviousSecret, d.PreviousSecretUntil)
			}
		}
	}
	// A rotation during the overlap: the first secret is gone at once, the second overlaps.
	third, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_third", time.Minute)
	if err != nil || third.PreviousSecret != "whsec_second" || !third.PreviousExpiresAt.Equal(third.CreatedAt.Add(time.Minute)) {
		t.Fatalf("third = %+v, %v", third, err)
	}
	// overlap 0 replaces outright.
	fourth, err := wb.SetWebhookSigningSecret(f.acct.ID, "whsec_fourth", 0)
	if err != nil || fourth.PreviousSecret != "" || fourth.PreviousExpiresAt != nil {
		t.Fatalf("fourth = %+v, %v", fourth, err)
	}
	if got, err := wb.WebhookSigningSecret(f.acct.ID); err != nil || got.PreviousSecret != "" || got.PreviousExpiresAt != nil {
		t.Fatalf("after a replacement without overlap = %+v, %v", got, err)
	}
}

// testWebhookEndpointCap: an account has at most store.MaxWebhookEndpoints endpoints; the
// next is refused and stores nothing, another account is not affected, and removing one makes
// room. Creates racing for the last place take it once.
func testWebhookEndpointCap(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	wb := f.wh()
	for i := range store.MaxWebhookEndpoints - 2 {
		f.endpoint("https://h" + string(rune('a'+i)) + ".example/")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := wb.CreateWebhookEndpoint(f.acct.ID, "https://race.example/", "whsec_race")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		default:
			wantErr(t, err, store.ErrTooManyWebhookEndpoints, "endpoint over the cap")
			wantErr(t, err, store.ErrInvalidArgument, "endpoint over the cap")
		}
	}
	if ok != 2 {
		t.Fatalf("%d racing creates succeeded, want the 2 places left", ok)
	}
	eps, err := wb.WebhookEndpoints(f.acct.ID)
	if err != nil || len(eps) != store.MaxWebhookEndpoints {
		t.Fatalf("endpoints = %d, %v; want %d", len(eps), err, store.MaxWebhookEndpoints)
	}
	other := newFixtureOn(t, f.s, "other")
	if _, err := wb.CreateWebhookEndpoint(other.ID, "https://other.example/", "whsec_o"); err != nil {
		t.Fatalf("another account's endpoint: %v", err)
	}
	if err := wb.DeleteWebhookEndpoint(f.acct.ID, eps[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.CreateWebhookEndpoint(f.acct.ID, "https://again.example/", "whsec_again"); err != nil {
		t.Fatalf("after a removal: %v", err)
	}
}
