package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// finishHookCases run on every backend like the rest of the suite.
var finishHookCases = []testCase{
	{"FinishHookOncePerFinishedJob", testFinishHookPaths},
	{"FinishHookExpiryPaths", testFinishHookExpiry},
	{"FinishHookConcurrentWrites", testFinishHookConcurrent},
}

func init() { cases = append(cases, finishHookCases...) }

// finishCall is one call of the FinishHook: the job it was given and what the store said of
// that job from inside the hook (a read after the commit must see the final state).
type finishCall struct {
	job      store.Job
	state    store.UploadState
	stateErr error
}

// finishRecorder is a FinishHook that records its calls.
type finishRecorder struct {
	mu    sync.Mutex
	s     Backend // set once the store is open; the hook reads the job's state through it
	calls []finishCall
}

func (r *finishRecorder) hook(job store.Job) {
	r.mu.Lock()
	s := r.s
	r.mu.Unlock()
	c := finishCall{job: job, state: store.UploadState(-1)}
	if s != nil {
		c.state, c.stateErr = s.JobUploadState(job.ID)
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// take returns the calls since the last take.
func (r *finishRecorder) take() []finishCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// newHookFixture is a fixture whose store reports finished jobs to the returned recorder.
func newHookFixture(t *testing.T, newStore NewFunc, o Options) (*fixture, *finishRecorder) {
	t.Helper()
	rec := &finishRecorder{}
	o.OnFinished = rec.hook
	f := newFixture(t, newStore, o, 1000)
	rec.mu.Lock()
	rec.s = f.s
	rec.mu.Unlock()
	return f, rec
}

// expectFinished asserts that the hook was called since the last check exactly once for the
// job, with it in status, and that the store already showed the job closed from inside the hook
// (the hook runs after the commit); want is UploadClosed, or UploadGone for a job deleted in
// the same transaction.
func (f *fixture) expectFinished(rec *finishRecorder, what, jobID, status string, want store.UploadState) store.Job {
	f.t.Helper()
	calls := rec.take()
	if len(calls) != 1 {
		f.t.Fatalf("%s: the hook was called %d times (%v), want once for %s", what, len(calls), callIDs(calls), jobID)
	}
	c := calls[0]
	if c.job.ID != jobID || c.job.Status != status || c.job.FinishedAt == nil || !c.job.Finished() {
		f.t.Fatalf("%s: the hook got job %s status %s finished_at %v; want %s %s", what, c.job.ID, c.job.Status, c.job.FinishedAt, jobID, status)
	}
	if c.stateErr != nil || c.state != want {
		f.t.Fatalf("%s: from inside the hook the job's upload state was %v (%v), want %v: the hook ran before the commit", what, c.state, c.stateErr, want)
	}
	return c.job
}

// expectNoFinish asserts that the hook was not called since the last check.
func (f *fixture) expectNoFinish(rec *finishRecorder, what string) {
	f.t.Helper()
	if calls := rec.take(); len(calls) != 0 {
		f.t.Fatalf("%s: the hook was called for %v, want no call", what, callIDs(calls))
	}
}

func callIDs(calls []finishCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.job.ID + ":" + c.job.Status
	}
	return out
}

// testFinishHookPaths: every transition to a final state calls the FinishHook once, after its
// commit, with the finished job; no other transition, and no refused one, calls it.
func testFinishHookPaths(t *testing.T, newStore NewFunc) {
	f, rec := newHookFixture(t, newStore, Options{})

	created := f.create(1)
	f.expectNoFinish(rec, "create")
	if _, err := f.s.CancelJob(f.acct.ID, created.ID); err != nil {
		t.Fatal(err)
	}
	f.expectFinished(rec, "cancel a created job", created.ID, store.StatusCancelled, store.UploadClosed)
	if _, err := f.s.CancelJob(f.acct.ID, created.ID); err != nil {
		t.Fatal(err)
	}
	f.expectNoFinish(rec, "cancel a cancelled job again")

	mismatch := f.create(5)
	_, err := f.s.StartJob(f.acct.ID, mismatch.ID, 4)
	wantErr(t, err, store.ErrSizeMismatch, "start with another size")
	f.expectFinished(rec, "size mismatch", mismatch.ID, store.StatusCancelled, store.UploadClosed)
	_, err = f.s.StartSealedJob(f.acct.ID, f.create(5).ID, store.Upload{Size: 6, ETag: `"e"`})
	wantErr(t, err, store.ErrSizeMismatch, "sealed start with another size")
	if calls := rec.take(); len(calls) != 1 || calls[0].job.Status != store.StatusCancelled || calls[0].state != store.UploadClosed {
		t.Fatalf("sealed size mismatch: hook calls %v", callIDs(calls))
	}

	queued := f.start(f.create(1))
	f.start(queued) // a repeated start changes nothing
	f.expectNoFinish(rec, "start")
	if _, err := f.s.CancelJob(f.acct.ID, queued.ID); err != nil {
		t.Fatal(err)
	}
	f.expectFinished(rec, "cancel a queued job", queued.ID, store.StatusCancelled, store.UploadClosed)

	running := f.start(f.create(1))
	if got := f.claim(); got.ID != running.ID {
		t.Fatalf("claimed %s, want %s", got.ID, running.ID)
	}
	f.expectNoFinish(rec, "claim")
	if _, err := f.s.CancelJob(f.acct.ID, running.ID); err != nil {
		t.Fatal(err)
	}
	f.expectFinished(rec, "cancel a running job", running.ID, store.StatusCancelled, store.UploadClosed)
	_, err = f.s.FinishJob(running.ID, 1, success(3))
	wantErr(t, err, store.ErrInvalidState, "the cancelled job's worker finishes")
	f.expectNoFinish(rec, "finish of a cancelled job")

	ok := f.start(f.create(1))
	f.claim()
	if _, err := f.s.FinishJob(ok.ID, 2, success(3)); !errors.Is(err, store.ErrInvalidState) {
		t.Fatalf("finish another attempt: %v", err)
	}
	f.expectNoFinish(rec, "finish of a stale attempt")
	if _, err := f.s.FinishJob(ok.ID, 1, success(3)); err != nil {
		t.Fatal(err)
	}
	got := f.expectFinished(rec, "success", ok.ID, store.StatusSucceeded, store.UploadClosed)
	if got.Output == nil || got.Output.Bytes != 3 {
		t.Fatalf("the hook's succeeded job has output %+v", got.Output)
	}
	_, err = f.s.CancelJob(f.acct.ID, ok.ID)
	wantErr(t, err, store.ErrInvalidState, "cancel a succeeded job")
	f.expectNoFinish(rec, "cancel of a succeeded job")

	bad := f.start(f.create(1))
	f.claim()
	if _, err := f.s.FinishJob(bad.ID, 1, store.Outcome{ErrorCode: "conversion_failed", ErrorMessage: "bad"}); err != nil {
		t.Fatal(err)
	}
	got = f.expectFinished(rec, "failure", bad.ID, store.StatusFailed, store.UploadClosed)
	if got.ErrorCode != "conversion_failed" {
		t.Fatalf("the hook's failed job has error code %q", got.ErrorCode)
	}

	flaky := f.start(f.create(1))
	f.claim()
	if _, requeued, err := f.s.RequeueJob(flaky.ID, 1, 2, "disk full"); err != nil || !requeued {
		t.Fatalf("requeue: %v %v", requeued, err)
	}
	f.expectNoFinish(rec, "requeue")
	if got := f.claim(); got.ID != flaky.ID || got.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d", got.ID, got.Attempt)
	}
	if _, requeued, err := f.s.RequeueJob(flaky.ID, 2, 2, "disk full"); err != nil || requeued {
		t.Fatalf("requeue at max attempts: %v %v", requeued, err)
	}
	got = f.expectFinished(rec, "requeue at max attempts", flaky.ID, store.StatusFailed, store.UploadClosed)
	if got.ErrorCode != store.CodeConversionFailed {
		t.Fatalf("the hook's exhausted job has error code %q", got.ErrorCode)
	}
	if deleted, _, err := f.s.ExpireJobs(100); err != nil || len(deleted) != 0 {
		t.Fatalf("expire before retention: %v %v", deleted, err)
	}
	f.expectNoFinish(rec, "a sweep with nothing expired")
	f.checkLedger(0, 1)
}

// testFinishHookExpiry: the paths that fail a job because it passed expires_at (a finish, a
// requeue, a claim, the retention sweep) call the FinishHook once each; the sweep deleting an
// already finished job does not.
func testFinishHookExpiry(t *testing.T, newStore NewFunc) {
	const retention = 3 * time.Second
	f, rec := newHookFixture(t, newStore, Options{Retention: retention})
	done := f.start(f.create(1))
	f.claim()
	if _, err := f.s.FinishJob(done.ID, 1, success(1)); err != nil {
		t.Fatal(err)
	}
	f.expectFinished(rec, "success", done.ID, store.StatusSucceeded, store.UploadClosed)
	toFinish := f.start(f.create(1))
	toRequeue := f.start(f.create(1))
	for _, want := range []string{toFinish.ID, toRequeue.ID} {
		if got := f.claim(); got.ID != want {
			t.Fatalf("claimed %s, want %s", got.ID, want)
		}
	}
	queued := f.start(f.create(1))
	created := f.create(1)
	f.expectNoFinish(rec, "create, start and claim")
	f.waitExpired(created.ID, retention)
	f.expectNoFinish(rec, "passing expires_at by itself")

	_, err := f.s.FinishJob(toFinish.ID, 1, success(1))
	wantErr(t, err, store.ErrNotFound, "finish after expires_at")
	f.expectFinished(rec, "finish after expires_at", toFinish.ID, store.StatusFailed, store.UploadClosed)
	if job, requeued, err := f.s.RequeueJob(toRequeue.ID, 1, 3, "disk full"); err != nil || requeued || job.Status != store.StatusFailed {
		t.Fatalf("requeue after expires_at: %s %v %v", job.Status, requeued, err)
	}
	f.expectFinished(rec, "requeue after expires_at", toRequeue.ID, store.StatusFailed, store.UploadClosed)
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim of an expired queued job: ok=%v err=%v", ok, err)
	}
	f.expectFinished(rec, "claim after expires_at", queued.ID, store.StatusFailed, store.UploadClosed)
	var deleted []string
	for {
		d, more, err := f.s.ExpireJobs(100)
		if err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, d...)
		if len(d) == 0 && !more {
			break
		}
	}
	want := []string{done.ID, toFinish.ID, toRequeue.ID, queued.ID, created.ID}
	slices.Sort(want)
	slices.Sort(deleted)
	if fmt.Sprint(deleted) != fmt.Sprint(want) {
		t.Fatalf("sweep deleted %v, want %v", deleted, want)
	}
	// Only the job the sweep itself failed; it was deleted in the same transaction.
	got := f.expectFinished(rec, "the retention sweep", created.ID, store.StatusFailed, store.UploadGone)
	if got.ErrorCode != store.CodeExpiredOrExhausted {
		t.Fatalf("the swept job's error code %q", got.ErrorCode)
	}
}

// testFinishHookConcurrent: writes that share transactions (bbolt's group commit runs a group
// again without a write that failed in it; PostgreSQL retries aborted transactions) still call
// the hook once per job they finished, and never for a write that failed.
func testFinishHookConcurrent(t *testing.T, newStore NewFunc) {
	f, rec := newHookFixture(t, newStore, Options{})
	const n = 16
	var open, done []store.Job
	for range n {
		j := f.start(f.create(1))
		f.claim()
		if _, err := f.s.FinishJob(j.ID, 1, store.Outcome{ErrorCode: "conversion_failed", ErrorMessage: "bad"}); err != nil {
			t.Fatal(err)
		}
		done = append(done, j)
	}
	for range n {
		open = append(open, f.start(f.create(1)))
	}
	rec.take()
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() { defer wg.Done(); _, errs[i] = f.s.CancelJob(f.acct.ID, open[i].ID) }()
		go func() { defer wg.Done(); _, errs[n+i] = f.s.CancelJob(f.acct.ID, done[i].ID) }()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("cancel an unfinished job: %v", errs[i])
		}
		wantErr(t, errs[n+i], store.ErrInvalidState, "cancel a failed job")
	}
	calls := rec.take()
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.job.ID]++
		if c.job.Status != store.StatusCancelled || c.stateErr != nil || c.state != store.UploadClosed {
			t.Fatalf("hook call for %s: status %s, state inside the hook %v (%v)", c.job.ID, c.job.Status, c.state, c.stateErr)
		}
	}
	for _, j := range open {
		if seen[j.ID] != 1 {
			t.Fatalf("the hook saw job %s %d times, want once (calls %v)", j.ID, seen[j.ID], callIDs(calls))
		}
	}
	if len(calls) != n {
		t.Fatalf("%d hook calls, want %d: %v", len(calls), n, callIDs(calls))
	}
}
