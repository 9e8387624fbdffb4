package store

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct{ t atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.t.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.t.Add(int64(d)) }

// mustOpen opens a store in a temp dir and, at cleanup, checks bbolt's integrity and the ledger.
func mustOpen(t *testing.T, clk *clock) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "convsvc.db"), Options{Now: clk.Now, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Check(); err != nil {
			t.Errorf("bbolt check: %v", err)
		}
		if err := s.VerifyLedger(); err != nil {
			t.Errorf("ledger: %v", err)
		}
		s.Close()
	})
	return s
}

func noRender(Job) (Response, error) { return Response{Status: 200, Body: []byte("{}")}, nil }

func mustAccount(t *testing.T, s *Store, capCents int64) Account {
	t.Helper()
	a, err := s.CreateAccount("test", capCents)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCreate(t *testing.T, s *Store, acct string, size int64) Job {
	t.Helper()
	job, _, err := s.CreateJob(CreateJobParams{AccountID: acct, InputFormat: "png", TargetFormat: "jpeg", InputBytes: size}, noRender)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func reserved(t *testing.T, s *Store, acct string) (reserved, spent int64) {
	t.Helper()
	a, err := s.Account(acct)
	if err != nil {
		t.Fatal(err)
	}
	return a.ReservedCents, a.SpentCents(s.opts.Now())
}

func TestStore_CreateJob_ReservesOneCent(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 100)
	if job.Status != StatusCreated || job.Attempt != 0 || job.ErrorCode != "" {
		t.Fatalf("got %+v", job)
	}
	if got, want := job.ExpiresAt.Sub(job.CreatedAt), 24*time.Hour; got != want {
		t.Errorf("retention %v, want %v", got, want)
	}
	if r, _ := reserved(t, s, a.ID); r != 1 {
		t.Errorf("reserved %d, want 1", r)
	}
}

func TestStore_CreateJob_LimitReached(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 2)
	mustCreate(t, s, a.ID, 1)
	mustCreate(t, s, a.ID, 1)
	_, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender)
	if !errors.Is(err, ErrLimitReached) {
		t.Fatalf("got %v, want ErrLimitReached", err)
	}
}

func TestStore_CreateJob_ConcurrentCapExact(t *testing.T) {
	s := mustOpen(t, newClock())
	const capCents = 7
	a := mustAccount(t, s, capCents)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrLimitReached):
				limited.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != capCents || limited.Load() != 50-capCents {
		t.Fatalf("ok %d limited %d, want %d and %d", ok.Load(), limited.Load(), capCents, 50-capCents)
	}
	if r, _ := reserved(t, s, a.ID); r != capCents {
		t.Fatalf("reserved %d, want %d", r, capCents)
	}
}

func TestStore_CreateJob_Idempotency(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 5, IdempotencyKey: "k1", RequestHash: "h1"}
	calls := 0
	render := func(j Job) (Response, error) { calls++; return Response{Status: 200, Body: []byte(j.ID)}, nil }
	j1, r1, err := s.CreateJob(p, render)
	if err != nil {
		t.Fatal(err)
	}
	j2, r2, err := s.CreateJob(p, render)
	if err != nil {
		t.Fatal(err)
	}
	if j1.ID != j2.ID || string(r1.Body) != string(r2.Body) || calls != 1 {
		t.Fatalf("replay gave job %s body %q after %s %q, render calls %d", j2.ID, r2.Body, j1.ID, r1.Body, calls)
	}
	if r, _ := reserved(t, s, a.ID); r != 1 {
		t.Fatalf("reserved %d after replay, want 1", r)
	}
	p.RequestHash = "h2"
	if _, _, err := s.CreateJob(p, render); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("different body: got %v", err)
	}
	// Another account may use the same key.
	b := mustAccount(t, s, 10)
	p.AccountID, p.RequestHash = b.ID, "h1"
	if j3, _, err := s.CreateJob(p, render); err != nil || j3.ID == j1.ID {
		t.Fatalf("other account: %v %v", j3.ID, err)
	}
}

func TestStore_CreateJob_IdempotencyExpires(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 5, IdempotencyKey: "k", RequestHash: "h"}
	j1, _, _ := s.CreateJob(p, noRender)
	clk.Advance(24*time.Hour + time.Second)
	if n, err := s.PurgeIdempotencyKeys(); err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	j2, _, err := s.CreateJob(p, noRender)
	if err != nil || j2.ID == j1.ID {
		t.Fatalf("after 24h the key must be forgotten: %v %v", j2.ID, err)
	}
}

func TestStore_StartJob(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 100)
	got, err := s.StartJob(a.ID, job.ID, 100)
	if err != nil || got.Status != StatusQueued || got.StartedAt == nil {
		t.Fatalf("start: %+v %v", got, err)
	}
	again, err := s.StartJob(a.ID, job.ID, 100)
	if err != nil || again.Status != StatusQueued {
		t.Fatalf("repeat start: %+v %v", again, err)
	}
	if r, _ := reserved(t, s, a.ID); r != 1 {
		t.Errorf("reserved %d, want 1", r)
	}
}

func TestStore_StartJob_SizeMismatch(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 100)
	got, err := s.StartJob(a.ID, job.ID, 99)
	if !errors.Is(err, ErrSizeMismatch) || got.Status != StatusCancelled {
		t.Fatalf("got %+v %v", got, err)
	}
	if r, _ := reserved(t, s, a.ID); r != 0 {
		t.Errorf("reserved %d, want 0", r)
	}
	// Already cancelled: returned unchanged.
	if again, err := s.StartJob(a.ID, job.ID, 100); err != nil || again.Status != StatusCancelled {
		t.Fatalf("repeat: %+v %v", again, err)
	}
}

func TestStore_StartJob_CapLowered(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 1)
	zero := int64(0)
	if _, err := s.UpdateAccount(a.ID, nil, &zero); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartJob(a.ID, job.ID, 1); !errors.Is(err, ErrLimitReached) {
		t.Fatalf("got %v, want ErrLimitReached", err)
	}
	got, _ := s.Job(a.ID, job.ID)
	if got.Status != StatusCreated {
		t.Fatalf("status %s, want created", got.Status)
	}
}

func TestStore_Job_OtherAccountAndExpired(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	b := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 1)
	if _, err := s.Job(b.ID, job.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other account: %v", err)
	}
	if _, err := s.StartJob(b.ID, job.ID, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other account start: %v", err)
	}
	if _, err := s.CancelJob(b.ID, job.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other account cancel: %v", err)
	}
	clk.Advance(24 * time.Hour)
	if _, err := s.Job(a.ID, job.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired: %v", err)
	}
}

func TestStore_ClaimJob_OldestFirstAndFinish(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	var ids []string
	for i := 0; i < 3; i++ {
		j := mustCreate(t, s, a.ID, 1)
		clk.Advance(time.Millisecond)
		ids = append(ids, j.ID)
	}
	// Start in reverse creation order: the queue follows start time.
	for i := 2; i >= 0; i-- {
		if _, err := s.StartJob(a.ID, ids[i], 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	for _, want := range []string{ids[2], ids[1], ids[0]} {
		job, ok, err := s.ClaimJob()
		if err != nil || !ok || job.ID != want || job.Status != StatusRunning || job.Attempt != 1 {
			t.Fatalf("claim: %+v %v %v, want %s", job, ok, err, want)
		}
	}
	if _, ok, _ := s.ClaimJob(); ok {
		t.Fatal("queue should be empty")
	}
	done, err := s.FinishJob(ids[2], 1, Outcome{Output: &Output{Bytes: 3, SHA256: "abc"}})
	if err != nil || done.Status != StatusSucceeded || done.FinishedAt == nil {
		t.Fatalf("finish: %+v %v", done, err)
	}
	failed, err := s.FinishJob(ids[1], 1, Outcome{ErrorCode: CodeConversionFailed, ErrorMessage: "bad"})
	if err != nil || failed.Status != StatusFailed || failed.ErrorCode != CodeConversionFailed {
		t.Fatalf("fail: %+v %v", failed, err)
	}
	if _, err := s.FinishJob(ids[1], 1, Outcome{ErrorCode: CodeConversionFailed}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("finish twice: %v", err)
	}
	if _, err := s.FinishJob(ids[0], 2, Outcome{ErrorCode: CodeConversionFailed}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("finish wrong attempt: %v", err)
	}
	r, spent := reserved(t, s, a.ID)
	if r != 1 || spent != 1 {
		t.Fatalf("reserved %d spent %d, want 1 and 1", r, spent)
	}
}

func TestStore_CancelJob(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	created := mustCreate(t, s, a.ID, 1)
	queued := mustCreate(t, s, a.ID, 1)
	running := mustCreate(t, s, a.ID, 1)
	succeeded := mustCreate(t, s, a.ID, 1)
	for _, j := range []Job{queued, running, succeeded} {
		s.StartJob(a.ID, j.ID, 1)
	}
	s.ClaimJob() // queued job (started first) -> running
	// Make "running" really running and "succeeded" succeed.
	if j, _, _ := s.ClaimJob(); j.ID != running.ID {
		t.Fatalf("claimed %s", j.ID)
	}
	if j, _, _ := s.ClaimJob(); j.ID != succeeded.ID {
		t.Fatalf("claimed %s", j.ID)
	}
	s.FinishJob(succeeded.ID, 1, Outcome{Output: &Output{Bytes: 1}})
	for _, id := range []string{created.ID, queued.ID, running.ID} {
		got, err := s.CancelJob(a.ID, id)
		if err != nil || got.Status != StatusCancelled {
			t.Fatalf("cancel %s: %+v %v", id, got, err)
		}
		again, err := s.CancelJob(a.ID, id)
		if err != nil || again.Status != StatusCancelled {
			t.Fatalf("cancel again: %v", err)
		}
	}
	if _, err := s.CancelJob(a.ID, succeeded.ID); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("cancel finished: %v", err)
	}
	if _, err := s.FinishJob(running.ID, 1, Outcome{Output: &Output{Bytes: 1}}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("finish after cancel: %v", err)
	}
	if r, spent := reserved(t, s, a.ID); r != 0 || spent != 1 {
		t.Fatalf("reserved %d spent %d", r, spent)
	}
}

func TestStore_RecoverRunning(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	j1 := mustCreate(t, s, a.ID, 1)
	j2 := mustCreate(t, s, a.ID, 1)
	s.StartJob(a.ID, j1.ID, 1)
	s.StartJob(a.ID, j2.ID, 1)
	s.ClaimJob()
	s.ClaimJob()
	requeued, failed, err := s.RecoverRunning(3)
	if err != nil || len(requeued) != 2 || len(failed) != 0 {
		t.Fatalf("recover: %v %v %v", requeued, failed, err)
	}
	// Requeued jobs keep their place: j1 first again, now attempt 2.
	job, _, _ := s.ClaimJob()
	if job.ID != j1.ID || job.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d", job.ID, job.Attempt)
	}
	s.ClaimJob()
	s.RecoverRunning(3)
	s.ClaimJob()
	s.ClaimJob()
	requeued, failed, _ = s.RecoverRunning(3)
	if len(requeued) != 0 || len(failed) != 2 {
		t.Fatalf("third crash: requeued %v failed %v", requeued, failed)
	}
	got, _ := s.Job(a.ID, j1.ID)
	if got.Status != StatusFailed || got.ErrorCode != CodeExpiredOrExhausted || got.Attempt != 3 {
		t.Fatalf("got %+v", got)
	}
	if r, _ := reserved(t, s, a.ID); r != 0 {
		t.Fatalf("reserved %d", r)
	}
}

func TestStore_ExpireJobs(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	unfinished := mustCreate(t, s, a.ID, 1)
	done := mustCreate(t, s, a.ID, 1)
	s.StartJob(a.ID, done.ID, 1)
	s.ClaimJob()
	s.FinishJob(done.ID, 1, Outcome{Output: &Output{Bytes: 1}})
	clk.Advance(time.Hour)
	later := mustCreate(t, s, a.ID, 1)
	clk.Advance(23 * time.Hour)
	deleted, more, err := s.ExpireJobs(100)
	if err != nil || more || len(deleted) != 2 {
		t.Fatalf("deleted %v %v", deleted, err)
	}
	for _, id := range []string{unfinished.ID, done.ID} {
		if ok, _ := s.JobExists(id); ok {
			t.Errorf("%s still exists", id)
		}
	}
	if _, err := s.Job(a.ID, later.ID); err != nil {
		t.Fatalf("later job: %v", err)
	}
	r, spent := reserved(t, s, a.ID)
	if r != 1 || spent != 1 {
		t.Fatalf("reserved %d spent %d, want 1 1", r, spent)
	}
}

// TestStore_ExpireJobs_OutOfOrder expires jobs before older ones of their account, as after a
// restart with a shorter retention: the account's list skips them and keeps the rest in order,
// whether the job that went was the newest or one in the middle. With no budget for walking
// lists, each transaction stops after the first job it had to unlink and reports more.
func TestStore_ExpireJobs_OutOfOrder(t *testing.T) {
	defer func(n int) { unlinkBudget = n }(unlinkBudget)
	unlinkBudget = 0
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 100)
	other := mustAccount(t, s, 100)
	var ids []string
	for _, retention := range []time.Duration{24 * time.Hour, 24 * time.Hour, time.Hour, 24 * time.Hour, time.Hour} {
		s.opts.Retention = retention
		ids = append(ids, mustCreate(t, s, a.ID, 1).ID)
		mustCreate(t, s, other.ID, 1)
		clk.Advance(time.Minute)
	}
	s.opts.Retention = 24 * time.Hour
	clk.Advance(2 * time.Hour)
	list := func(p ListParams) []string {
		t.Helper()
		page, _, err := s.ListJobs(a.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range page {
			got = append(got, j.ID)
		}
		return got
	}
	// Expired but not yet deleted: the list passes over them.
	if got, want := list(ListParams{Limit: 100}), []string{ids[3], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("list before the sweep = %v, want %v", got, want)
	}
	var deleted []string
	calls := 0
	for more := true; more; calls++ {
		gone, m, err := s.ExpireJobs(100)
		if err != nil {
			t.Fatal(err)
		}
		deleted, more = append(deleted, gone...), m
	}
	// a's third and the other account's third job are each unlinked by a walk; the fifths are
	// their lists' heads.
	if len(deleted) != 4 || calls != 3 {
		t.Fatalf("ExpireJobs deleted %v in %d calls; want a's and the other account's third and fifth jobs in 3", deleted, calls)
	}
	if got, want := list(ListParams{Limit: 100}), []string{ids[3], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("list after expiry = %v, want %v", got, want)
	}
	if got, want := list(ListParams{Limit: 1, StartingAfter: ids[3]}), []string{ids[1]}; !slices.Equal(got, want) {
		t.Fatalf("page after %s = %v, want %v", ids[3], got, want)
	}
	newest := mustCreate(t, s, a.ID, 1)
	if got, want := list(ListParams{Limit: 100}), []string{newest.ID, ids[3], ids[1], ids[0]}; !slices.Equal(got, want) {
		t.Fatalf("list after a new job = %v, want %v", got, want)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}

func TestStore_MonthlySpendRollsOver(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 1)
	j := mustCreate(t, s, a.ID, 1)
	s.StartJob(a.ID, j.ID, 1)
	s.ClaimJob()
	s.FinishJob(j.ID, 1, Outcome{Output: &Output{Bytes: 1}})
	if _, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender); !errors.Is(err, ErrLimitReached) {
		t.Fatalf("same month: %v", err)
	}
	clk.Advance(10 * 24 * time.Hour) // into December
	mustCreate(t, s, a.ID, 1)
	acct, _ := s.Account(a.ID)
	if acct.MonthlySpend["2026-11"] != 1 || acct.SpentCents(clk.Now()) != 0 {
		t.Fatalf("monthly %v", acct.MonthlySpend)
	}
}

func TestStore_ListJobs(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 100)
	b := mustAccount(t, s, 100)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, mustCreate(t, s, a.ID, 1).ID)
		mustCreate(t, s, b.ID, 1)
	}
	s.StartJob(a.ID, ids[1], 1)
	page, more, err := s.ListJobs(a.ID, ListParams{Limit: 2})
	if err != nil || !more || len(page) != 2 || page[0].ID != ids[4] || page[1].ID != ids[3] {
		t.Fatalf("page 1: %v %v %v", page, more, err)
	}
	page, more, _ = s.ListJobs(a.ID, ListParams{Limit: 2, StartingAfter: ids[3]})
	if more != true || len(page) != 2 || page[0].ID != ids[2] {
		t.Fatalf("page 2: %v %v", page, more)
	}
	page, more, _ = s.ListJobs(a.ID, ListParams{Limit: 2, StartingAfter: ids[1]})
	if more || len(page) != 1 || page[0].ID != ids[0] {
		t.Fatalf("page 3: %v %v", page, more)
	}
	page, _, _ = s.ListJobs(a.ID, ListParams{Status: StatusQueued})
	if len(page) != 1 || page[0].ID != ids[1] {
		t.Fatalf("status filter: %v", page)
	}
	// The last account's list must not spill into nothing or into another account.
	page, _, _ = s.ListJobs(b.ID, ListParams{Limit: 100})
	if len(page) != 5 {
		t.Fatalf("b has %d jobs", len(page))
	}
}

func TestStore_Keys(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 1)
	key, secret, err := s.CreateKey(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Authenticate(secret); err != nil || got.ID != key.ID || got.AccountID != a.ID {
		t.Fatalf("auth: %v %v", got, err)
	}
	if _, err := s.Authenticate(secret[:len(secret)-1] + flip(secret[len(secret)-1])); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bad checksum: %v", err)
	}
	if _, err := s.Authenticate(NewKeySecret()); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := s.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(secret); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("revoked: %v", err)
	}
	if _, _, err := s.CreateKey("acct_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing account: %v", err)
	}
}

func TestStore_EnsureDefaultAccount(t *testing.T) {
	s := mustOpen(t, newClock())
	acct, secret, err := s.EnsureDefaultAccount(500)
	if err != nil || acct.Name != DefaultAccountName || secret == "" {
		t.Fatalf("%v %q %v", acct, secret, err)
	}
	_, again, err := s.EnsureDefaultAccount(500)
	if err != nil || again != "" {
		t.Fatalf("second call must not create another key: %q %v", again, err)
	}
}

func TestStore_OpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if _, err := Open(path, Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("lock wait did not time out")
	}
}

func TestStore_WaitChange(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 1)
	ch, release := s.WaitChange(job.ID)
	defer release()
	select {
	case <-ch:
		t.Fatal("signalled before any change")
	default:
	}
	s.CancelJob(a.ID, job.ID)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal after cancel")
	}
}

// TestStore_GroupCommitConcurrentLifecycle runs whole job lifecycles from many goroutines so
// writes share group commits (and may be retried), then checks the ledger at cleanup.
func TestStore_GroupCommitConcurrentLifecycle(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 1000)
	_, secret, _ := s.CreateKey(a.ID)
	keyIDs := make(chan string, 16)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, _, err := s.CreateKey(a.ID)
			if err != nil {
				t.Error(err)
				return
			}
			keyIDs <- k.ID
			for i := 0; i < 20; i++ {
				j, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.StartJob(a.ID, j.ID, 1); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					s.CancelJob(a.ID, j.ID)
				}
				if c, ok, err := s.ClaimJob(); err == nil && ok {
					s.FinishJob(c.ID, c.Attempt, Outcome{Output: &Output{Bytes: 1}})
				}
			}
		}()
	}
	wg.Wait()
	close(keyIDs)
	for id := range keyIDs {
		if k, err := s.RevokeKey(id); err != nil || k.RevokedAt == nil {
			t.Fatalf("revoke %s: %v", id, err)
		}
	}
	if _, err := s.Authenticate(secret); err != nil {
		t.Fatalf("the first key must still work: %v", err)
	}
}

// TestStore_RecoverRunningFinishHook: crash recovery calls the FinishHook for the jobs it
// fails (max attempts), after its commit, and not for those it requeues.
func TestStore_RecoverRunningFinishHook(t *testing.T) {
	var s *Store
	var mu sync.Mutex
	var calls []Job
	var states []UploadState
	s, err := Open(filepath.Join(t.TempDir(), "convsvc.db"), Options{OnFinished: func(j Job) {
		st, err := s.JobUploadState(j.ID)
		if err != nil {
			t.Errorf("upload state from the hook: %v", err)
		}
		mu.Lock()
		calls, states = append(calls, j), append(states, st)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := mustAccount(t, s, 10)
	j1 := mustCreate(t, s, a.ID, 1)
	j2 := mustCreate(t, s, a.ID, 1)
	s.StartJob(a.ID, j1.ID, 1)
	s.ClaimJob() // j1 attempt 1
	s.StartJob(a.ID, j2.ID, 1)
	if requeued, failed, err := s.RecoverRunning(2); err != nil || len(requeued) != 1 || len(failed) != 0 {
		t.Fatalf("recover: %v %v %v", requeued, failed, err)
	}
	if len(calls) != 0 {
		t.Fatalf("the hook was called for %d requeued jobs", len(calls))
	}
	s.ClaimJob() // j1 attempt 2
	s.ClaimJob() // j2 attempt 1
	requeued, failed, err := s.RecoverRunning(2)
	if err != nil || !slices.Equal(requeued, []string{j2.ID}) || !slices.Equal(failed, []string{j1.ID}) {
		t.Fatalf("recover: requeued %v failed %v, %v", requeued, failed, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0].ID != j1.ID || calls[0].Status != StatusFailed || calls[0].ErrorCode != CodeExpiredOrExhausted || states[0] != UploadClosed {
		t.Fatalf("hook calls %+v, states inside the hook %v; want j1 failed and closed once", calls, states)
	}
}
