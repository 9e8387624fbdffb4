package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// BatchBackend is what the batch cases need besides Backend: jobs reserved together.
type BatchBackend interface {
	CreateBatch(p store.CreateBatchParams, render func(store.Batch, []store.Job) (store.Response, error)) (store.Batch, []store.Job, store.Response, error)
	Batch(accountID, batchID string) (store.Batch, []store.Job, error)
	CancelBatch(accountID, batchID string) (store.Batch, []store.Job, error)
}

var batchCases = []testCase{
	{"BatchAllOrNothing", testBatchAllOrNothing},
	{"BatchSize", testBatchSize},
	{"BatchIdempotency", testBatchIdempotency},
	{"BatchFinishes", testBatchFinishes},
	{"BatchCancel", testBatchCancel},
	{"BatchRemoteItems", testBatchRemoteItems},
}

func init() { cases = append(cases, batchCases...) }

func (f *fixture) batches() BatchBackend {
	f.t.Helper()
	bb, ok := f.s.(BatchBackend)
	if !ok {
		f.t.Fatalf("%T does not implement storetest.BatchBackend", f.s)
	}
	return bb
}

func batchRender(b store.Batch, jobs []store.Job) (store.Response, error) {
	body := `{"id":"` + b.ID + `","jobs":[`
	for i, j := range jobs {
		if i > 0 {
			body += ","
		}
		body += `"` + j.ID + `"`
	}
	return store.Response{Status: 200, Body: []byte(body + "]}")}, nil
}

func (f *fixture) batchParams(n int) store.CreateBatchParams {
	p := store.CreateBatchParams{AccountID: f.acct.ID}
	for i := range n {
		p.Jobs = append(p.Jobs, store.CreateJobParams{InputFormat: "markdown", TargetFormat: "pdf", InputBytes: int64(10 + i)})
	}
	return p
}

func (f *fixture) createBatch(n int) (store.Batch, []store.Job) {
	f.t.Helper()
	b, jobs, _, err := f.batches().CreateBatch(f.batchParams(n), batchRender)
	if err != nil {
		f.t.Fatalf("create batch of %d: %v", n, err)
	}
	return b, jobs
}

// testBatchAllOrNothing: a batch over the cap reserves nothing; one that fits reserves one cent
// per job, every job created in order, readable as a job and through the batch; another
// account sees none of it.
func testBatchAllOrNothing(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 5)
	bb := f.batches()
	if _, _, _, err := bb.CreateBatch(f.batchParams(6), batchRender); !errors.Is(err, store.ErrLimitReached) {
		t.Fatalf("batch of 6 under a 5 cent cap: %v, want ErrLimitReached", err)
	}
	if n := len(f.all()); n != 0 {
		t.Fatalf("%d jobs after a refused batch, want 0", n)
	}
	f.checkLedger(0, 0)

	b, jobs := f.createBatch(5)
	if len(b.ID) < 5 || b.ID[:4] != "bat_" || len(jobs) != 5 || len(b.JobIDs) != 5 {
		t.Fatalf("batch %q with %d jobs (%d ids)", b.ID, len(jobs), len(b.JobIDs))
	}
	for i, j := range jobs {
		if j.ID != b.JobIDs[i] || j.Status != store.StatusCreated || j.InputBytes != int64(10+i) || j.AccountID != f.acct.ID {
			t.Fatalf("job %d = %+v, batch lists %s", i, j, b.JobIDs[i])
		}
		if got := f.get(j.ID); got.ID != j.ID {
			t.Fatalf("job %d not readable as a job", i)
		}
	}
	f.checkLedger(5, 0)
	got, gotJobs, err := bb.Batch(f.acct.ID, b.ID)
	if err != nil || got.ID != b.ID || len(gotJobs) != 5 || got.FinishedAt != nil || !got.ExpiresAt.Equal(jobs[0].ExpiresAt) {
		t.Fatalf("Batch = %+v, %d jobs, %v", got, len(gotJobs), err)
	}
	for i := range gotJobs {
		if gotJobs[i].ID != b.JobIDs[i] {
			t.Fatalf("Batch's job %d is %s, want %s", i, gotJobs[i].ID, b.JobIDs[i])
		}
	}
	if _, _, _, err := bb.CreateBatch(f.batchParams(1), batchRender); !errors.Is(err, store.ErrLimitReached) {
		t.Fatalf("batch of 1 at the cap: %v, want ErrLimitReached", err)
	}
	other, err := f.s.CreateAccount("other", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bb.Batch(other.ID, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account's batch: %v, want ErrNotFound", err)
	}
	if _, _, err := bb.CancelBatch(other.ID, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel another account's batch: %v, want ErrNotFound", err)
	}
	if _, _, err := bb.Batch(f.acct.ID, "bat_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown batch: %v, want ErrNotFound", err)
	}
	f.checkLedger(5, 0)
}

// testBatchSize: 0 jobs and more than MaxBatchJobs are refused, and a bad job refuses the
// whole batch, reserving nothing.
func testBatchSize(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 10_000)
	bb := f.batches()
	for _, n := range []int{0, store.MaxBatchJobs + 1} {
		if _, _, _, err := bb.CreateBatch(f.batchParams(n), batchRender); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("batch of %d: %v, want ErrInvalidArgument", n, err)
		}
	}
	p := f.batchParams(3)
	p.Jobs[2].InputBytes = 0
	if _, _, _, err := bb.CreateBatch(p, batchRender); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("batch with a 0-byte job: %v, want ErrInvalidArgument", err)
	}
	f.checkLedger(0, 0)
	if b, jobs := f.createBatch(store.MaxBatchJobs); len(jobs) != store.MaxBatchJobs || len(b.JobIDs) != store.MaxBatchJobs {
		t.Fatalf("batch of the maximum has %d jobs", len(jobs))
	}
	f.checkLedger(store.MaxBatchJobs, 0)
}

// testBatchIdempotency: one key for the batch; a repeat replays the first response and
// reserves nothing, another request under the key is ErrIdempotencyMismatch.
func testBatchIdempotency(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	bb := f.batches()
	p := f.batchParams(3)
	p.IdempotencyKey, p.RequestHash = "k1", "h1"
	b1, _, r1, err := bb.CreateBatch(p, batchRender)
	if err != nil {
		t.Fatal(err)
	}
	b2, jobs2, r2, err := bb.CreateBatch(p, func(store.Batch, []store.Job) (store.Response, error) {
		t.Fatal("render called on a replay")
		return store.Response{}, nil
	})
	if err != nil || b2.ID != b1.ID || string(r2.Body) != string(r1.Body) || r2.Status != r1.Status || len(jobs2) != 3 {
		t.Fatalf("replay = %s %q %v, first %s %q", b2.ID, r2.Body, err, b1.ID, r1.Body)
	}
	f.checkLedger(3, 0)
	p.RequestHash = "h2"
	if _, _, _, err := bb.CreateBatch(p, batchRender); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Fatalf("same key, other request: %v", err)
	}
	f.checkLedger(3, 0)
}

// testBatchFinishes: the batch is finished when its last job reaches a final state, whatever
// moved each (worker success, failure, a job's own cancel), and a waiter on the batch id wakes then.
func testBatchFinishes(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	bb := f.batches()
	b, jobs := f.createBatch(3)
	if _, err := f.s.CancelJob(f.acct.ID, jobs[2].ID); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs[:2] {
		f.start(j)
	}
	c := f.claim()
	if _, err := f.s.FinishJob(c.ID, c.Attempt, success(7)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := bb.Batch(f.acct.ID, b.ID); err != nil || got.FinishedAt != nil {
		t.Fatalf("batch with a job running: finished_at %v, %v", got.FinishedAt, err)
	}
	changed, release := f.s.WaitChange(b.ID)
	defer release()
	c = f.claim()
	if _, err := f.s.FinishJob(c.ID, c.Attempt, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(waitBound):
		t.Fatalf("no change of batch %s within %v of its last job finishing", b.ID, waitBound)
	}
	got, gotJobs, err := bb.Batch(f.acct.ID, b.ID)
	if err != nil || got.FinishedAt == nil {
		t.Fatalf("batch after its last job: %+v, %v", got, err)
	}
	want := map[string]string{jobs[0].ID: store.StatusSucceeded, jobs[1].ID: store.StatusFailed, jobs[2].ID: store.StatusCancelled}
	for _, j := range gotJobs {
		if j.Status != want[j.ID] {
			t.Fatalf("job %s is %s, want %s", j.ID, j.Status, want[j.ID])
		}
	}
	f.checkLedger(0, 1)
}

// testBatchCancel: cancelling a batch cancels its unfinished jobs in one go, releases their
// reservations, leaves a finished job as it is, and finishes the batch; repeating it is safe.
func testBatchCancel(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	bb := f.batches()
	b, jobs := f.createBatch(4)
	f.start(jobs[0])
	c := f.claim()
	if _, err := f.s.FinishJob(c.ID, c.Attempt, success(3)); err != nil {
		t.Fatal(err)
	}
	f.start(jobs[1])
	f.claim() // running
	f.start(jobs[2])
	got, gotJobs, err := bb.CancelBatch(f.acct.ID, b.ID)
	if err != nil || got.FinishedAt == nil || len(gotJobs) != 4 {
		t.Fatalf("CancelBatch = %+v, %d jobs, %v", got, len(gotJobs), err)
	}
	want := []string{store.StatusSucceeded, store.StatusCancelled, store.StatusCancelled, store.StatusCancelled}
	for i, j := range gotJobs {
		if j.Status != want[i] || f.get(j.ID).Status != want[i] {
			t.Fatalf("job %d is %s, want %s", i, j.Status, want[i])
		}
	}
	f.checkLedger(0, 1)
	if again, _, err := bb.CancelBatch(f.acct.ID, b.ID); err != nil || !again.FinishedAt.Equal(*got.FinishedAt) {
		t.Fatalf("second cancel = %+v, %v", again, err)
	}
	f.checkLedger(0, 1)
}

// testBatchRemoteItems: a batch item with a source_url is queued at create with its source and
// delivery, as a single create makes it, and claimable at once; the uploaded items stay
// created; max_queued holds for the queued items, refusing the whole batch.
func testBatchRemoteItems(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	deliver := &store.Delivery{URL: "https://bucket.example/out.pdf?sig=x", Headers: map[string]string{"Content-Type": "application/pdf"}}
	p := f.batchParams(3)
	p.Jobs[1].SourceURL, p.Jobs[1].DeliverTo = "https://cdn.example/b.md", deliver
	_, jobs, _, err := f.batches().CreateBatch(p, batchRender)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		got := f.get(j.ID)
		want := store.StatusCreated
		if i == 1 {
			want = store.StatusQueued
		}
		if got.Status != want || (i == 1) != (got.StartedAt != nil) {
			t.Fatalf("item %d: %s (started_at %v), want %s", i, got.Status, got.StartedAt, want)
		}
		if i == 1 && (got.SourceURL != "https://cdn.example/b.md" || got.DeliverTo == nil || got.DeliverTo.URL != deliver.URL) {
			t.Fatalf("item 1 lost its source or delivery: %+v %+v", got, got.DeliverTo)
		}
	}
	if claimed := f.claim(); claimed.ID != jobs[1].ID || claimed.SourceURL == "" {
		t.Fatalf("claimed %s (%q), want the source_url item %s", claimed.ID, claimed.SourceURL, jobs[1].ID)
	}
	f.checkLedger(3, 0)
	one := int64(1)
	if _, err := f.fair().UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: store.LimitUpdate{Set: true, Value: &one}}); err != nil {
		t.Fatal(err)
	}
	p = f.batchParams(2)
	p.Jobs[0].SourceURL, p.Jobs[1].SourceURL = "https://cdn.example/c.md", "https://cdn.example/d.md"
	if _, _, _, err := f.batches().CreateBatch(p, batchRender); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("a batch of 2 source_url items with max_queued 1: %v, want ErrQueueFull", err)
	}
	f.checkLedger(3, 0)
}
