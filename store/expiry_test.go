package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rawJob reads a job record whatever its expiry, as the sweep would find it.
func rawJob(t *testing.T, s *Store, id string) Job {
	t.Helper()
	var job Job
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		job, err = findJob(tx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// claimOne starts and claims a fresh job of a.
func claimOne(t *testing.T, s *Store, acct string) Job {
	t.Helper()
	j := mustCreate(t, s, acct, 1)
	if _, err := s.StartJob(acct, j.ID, 1); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.ClaimJob()
	if err != nil || !ok || got.ID != j.ID {
		t.Fatalf("claim: %+v %v %v", got, ok, err)
	}
	return got
}

// A success reported after expires_at is refused in the transaction that checks the expiry:
// the job fails expired_or_exhausted, nothing is charged, and its cent is released.
func TestStore_FinishJob_AfterExpiryRefused(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	for _, tc := range []struct {
		name    string
		outcome Outcome
	}{
		{"success", Outcome{Output: &Output{Bytes: 3, SHA256: "abc"}}},
		{"failure", Outcome{ErrorCode: CodeConversionFailed, ErrorMessage: "bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := claimOne(t, s, a.ID)
			clk.Advance(24 * time.Hour) // exactly expires_at: no longer alive
			if _, err := s.FinishJob(job.ID, job.Attempt, tc.outcome); !errors.Is(err, ErrNotFound) {
				t.Fatalf("finish after expiry: %v, want ErrNotFound", err)
			}
			got := rawJob(t, s, job.ID)
			if got.Status != StatusFailed || got.ErrorCode != CodeExpiredOrExhausted || got.Output != nil {
				t.Fatalf("job after a late finish: status %s code %q output %v", got.Status, got.ErrorCode, got.Output)
			}
			if r, spent := reserved(t, s, a.ID); r != 0 || spent != 0 {
				t.Fatalf("reserved %d spent %d, want 0 and 0", r, spent)
			}
			if _, err := s.Job(a.ID, job.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("read after expiry: %v, want ErrNotFound", err)
			}
		})
	}
}

// Just before expires_at the finish still counts.
func TestStore_FinishJob_BeforeExpirySucceeds(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	job := claimOne(t, s, a.ID)
	clk.Advance(24*time.Hour - time.Nanosecond)
	done, err := s.FinishJob(job.ID, job.Attempt, Outcome{Output: &Output{Bytes: 3, SHA256: "abc"}})
	if err != nil || done.Status != StatusSucceeded {
		t.Fatalf("finish: %+v %v", done, err)
	}
	if r, spent := reserved(t, s, a.ID); r != 0 || spent != 1 {
		t.Fatalf("reserved %d spent %d, want 0 and 1", r, spent)
	}
}

// A queued job past expires_at is never handed to a worker: the claim fails it and moves on.
func TestStore_ClaimJob_SkipsExpired(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	old := mustCreate(t, s, a.ID, 1)
	if _, err := s.StartJob(a.ID, old.ID, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(23 * time.Hour)
	young := mustCreate(t, s, a.ID, 1)
	if _, err := s.StartJob(a.ID, young.ID, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	got, ok, err := s.ClaimJob()
	if err != nil || !ok || got.ID != young.ID {
		t.Fatalf("claim: %+v %v %v, want %s", got, ok, err, young.ID)
	}
	if j := rawJob(t, s, old.ID); j.Status != StatusFailed || j.ErrorCode != CodeExpiredOrExhausted || j.Attempt != 0 {
		t.Fatalf("expired queued job: %+v", j)
	}
	if r, _ := reserved(t, s, a.ID); r != 1 {
		t.Fatalf("reserved %d, want 1 (the running job)", r)
	}
}

// A storage fault puts the job back in the queue with its attempt counted, until
// maxAttempts is reached; then it fails expired_or_exhausted and releases its cent.
func TestStore_RequeueJob(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	job := claimOne(t, s, a.ID)
	for attempt := 1; attempt <= 3; attempt++ {
		if job.Attempt != attempt {
			t.Fatalf("claimed attempt %d, want %d", job.Attempt, attempt)
		}
		got, requeued, err := s.RequeueJob(job.ID, job.Attempt, 3, "disk full")
		if err != nil {
			t.Fatal(err)
		}
		if attempt < 3 {
			if !requeued || got.Status != StatusQueued || got.Attempt != attempt {
				t.Fatalf("requeue %d: %+v requeued=%v", attempt, got, requeued)
			}
			if _, _, err := s.RequeueJob(job.ID, job.Attempt, 3, "again"); !errors.Is(err, ErrInvalidState) {
				t.Fatalf("requeue of a queued job: %v, want ErrInvalidState", err)
			}
			var ok bool
			if job, ok, err = s.ClaimJob(); err != nil || !ok {
				t.Fatalf("claim again: %v %v", ok, err)
			}
			continue
		}
		if requeued || got.Status != StatusFailed || got.ErrorCode != CodeConversionFailed {
			t.Fatalf("requeue at max attempts: %+v requeued=%v", got, requeued)
		}
	}
	if _, ok, _ := s.ClaimJob(); ok {
		t.Fatal("an exhausted job was queued again")
	}
	if r, spent := reserved(t, s, a.ID); r != 0 || spent != 0 {
		t.Fatalf("reserved %d spent %d, want 0 and 0", r, spent)
	}
}

// An expired job is not requeued.
func TestStore_RequeueJob_Expired(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	job := claimOne(t, s, a.ID)
	clk.Advance(25 * time.Hour)
	got, requeued, err := s.RequeueJob(job.ID, job.Attempt, 3, "disk full")
	if err != nil || requeued || got.Status != StatusFailed || got.ErrorCode != CodeExpiredOrExhausted {
		t.Fatalf("requeue after expiry: %+v %v %v", got, requeued, err)
	}
}

// NextExpiry names the earliest expires_at, and nothing once every job is gone.
func TestStore_NextExpiry(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	if _, ok, err := s.NextExpiry(); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	a := mustAccount(t, s, 10)
	first := mustCreate(t, s, a.ID, 1)
	clk.Advance(time.Minute)
	mustCreate(t, s, a.ID, 1)
	at, ok, err := s.NextExpiry()
	if err != nil || !ok || !at.Equal(first.ExpiresAt) {
		t.Fatalf("next expiry %v %v %v, want %v", at, ok, err, first.ExpiresAt)
	}
	clk.Advance(25 * time.Hour)
	if _, _, err := s.ExpireJobs(100); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.NextExpiry(); ok {
		t.Fatal("expiry left after every job was deleted")
	}
}
