package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestReapLocksAccountsInOrder: a reaper that fails the lapsed jobs of several accounts takes
// their rows in the order of their ids before it changes anything (cache.go's lock order), so
// it never holds one account's row while it waits for another's that a transaction taking
// them in the same order holds (another node's reaper, ExpireJobs): no deadlock, no retry.
func TestReapLocksAccountsInOrder(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: time.Millisecond})[0]
	// The reaper before this fix took the accounts in an order of its plan's (the hash of
	// their ids): it held another one first, and deadlocked, in about 5 rounds out of 6.
	for range 3 {
		var ids, want []string
		for range 6 {
			acct := account(t, s, 10)
			ids = append(ids, acct.ID)
			want = append(want, queuedJob(t, s, acct.ID).ID)
			if _, ok, err := s.ClaimJob(); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		inOrder(t, s, ids, want, func() ([]string, error) {
			_, failed, err := s.ReapExpiredLeases(1)
			return failed, err
		})
	}
}

// TestExpireLocksAccountsInOrder: ExpireJobs takes the rows of the accounts whose cents it
// releases in the order of their ids, as the reaper does, not in the order the jobs expire.
func TestExpireLocksAccountsInOrder(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Retention: 100 * time.Millisecond})[0]
	var ids, want []string
	for range 3 {
		ids = append(ids, account(t, s, 10).ID)
	}
	slices.Sort(ids)
	// The account whose id sorts first has the job that expires last: before this fix
	// ExpireJobs held the other accounts while it waited for it, and deadlocked every time.
	for _, id := range slices.Backward(ids) {
		job, _, err := s.CreateJob(store.CreateJobParams{AccountID: id, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
			func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, job.ID)
	}
	inOrder(t, s, ids, want, func() ([]string, error) {
		deleted, _, err := s.ExpireJobs(100)
		return deleted, err
	})
}

// inOrder runs sweep (a reap or an expiry, which takes the rows of the accounts ids) until it
// has returned the ids want, while a transaction of the test's, standing in for another node
// that takes the accounts in id order, holds the first: once sweep waits for it, the
// transaction takes the others (an error if that deadlocks), then ends. Then the accounts
// reserve nothing, the ledger holds, and s ran no transaction again after a deadlock.
func inOrder(t *testing.T, s *pgstore.Store, ids, want []string, sweep func() ([]string, error)) {
	t.Helper()
	ids = slices.Sorted(slices.Values(ids))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	var got []string
	done := make(chan error, 1)
	go func() {
		for len(got) < len(want) { // until every lease or job lapsed
			swept, err := sweep()
			if err != nil {
				done <- err
				return
			}
			got = append(got, swept...)
			time.Sleep(time.Millisecond)
		}
		done <- nil
	}()
	waitBlocked(t, s, conn.PgConn().PID())
	for _, id := range ids[1:] {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, id); err != nil {
			t.Errorf("lock account %s while the other waits: %v", id, err)
			break
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Error(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitBound):
		t.Fatalf("not done within %v", waitBound)
	}
	slices.Sort(got)
	if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
		t.Fatalf("swept %v, want %v", got, want)
	}
	for _, id := range ids {
		ledger(t, s, id, 0, 0)
	}
	if n := s.Retried(); n != 0 {
		t.Errorf("ran %d transactions again after a deadlock", n)
	}
}

// waitBlocked waits until a backend waits for a lock that the backend pid holds.
func waitBlocked(t *testing.T, s *pgstore.Store, pid uint32) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		var n int
		if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, int(pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backend waited for pid %d within %v", pid, waitBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReapFinishesBatch: a batch's job that the reaper fails at max attempts counts as
// finished: the batch finishes with it.
func TestReapFinishesBatch(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: time.Millisecond})[0]
	acct := account(t, s, 10)
	batch, jobs, _, err := s.CreateBatch(store.CreateBatchParams{AccountID: acct.ID, Jobs: []store.CreateJobParams{
		{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}}},
		func(store.Batch, []store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartJob(acct.ID, jobs[0].ID, 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ClaimJob(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	var failed []string
	for deadline := time.Now().Add(waitBound); len(failed) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lease not reaped within %v", waitBound)
		}
		if _, failed, err = s.ReapExpiredLeases(1); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := s.Batch(acct.ID, batch.ID)
	if err != nil || got.Unfinished != 0 || got.FinishedAt == nil {
		t.Fatalf("batch after its job was reaped: %+v, %v", got, err)
	}
	ledger(t, s, acct.ID, 0, 0)
}
