package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/pgstore"
)

// TestReapLocksAccountsInOrder: a reaper that fails the lapsed jobs of several accounts takes
// their rows in the order of their ids before it changes anything (cache.go's lock order), so
// it never holds one account's row while it waits for another's that a transaction taking
// them in the same order holds (another node's reaper, ExpireJobs): no deadlock, no retry.
// The test's own transaction stands in for that other node: it holds the account whose id
// sorts first while the reaper waits, then takes the others in order.
func TestReapLocksAccountsInOrder(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: time.Millisecond})[0]
	// The reaper before this fix took the accounts in an order of its plan's (the hash of
	// their ids): it held another one first, and deadlocked, in about 5 rounds out of 6.
	for range 3 {
		reapInOrder(t, s, 6)
	}
	if n := s.Retried(); n != 0 {
		t.Errorf("the reaper ran %d times again after a deadlock", n)
	}
}

// reapInOrder makes a lapsed job on each of n new accounts and reaps them (at max attempts:
// their cents are released) while the test's transaction holds the account whose id sorts
// first, then takes the others in order.
func reapInOrder(t *testing.T, s *pgstore.Store, n int) {
	t.Helper()
	var ids, want []string
	for range n {
		acct := account(t, s, 10)
		ids = append(ids, acct.ID)
		want = append(want, queuedJob(t, s, acct.ID).ID)
		if _, ok, err := s.ClaimJob(); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	slices.Sort(ids)
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
	type reap struct {
		failed []string
		err    error
	}
	done := make(chan reap, 1)
	go func() {
		var r reap
		deadline := time.Now().Add(waitBound)
		for len(r.failed) < n && r.err == nil && time.Now().Before(deadline) { // until every lease lapsed
			var f []string
			_, f, r.err = s.ReapExpiredLeases(1)
			r.failed = append(r.failed, f...)
		}
		done <- r
	}()
	waitBlocked(t, s, conn.PgConn().PID())
	for _, id := range ids[1:] {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, id); err != nil {
			t.Errorf("lock account %s while the reaper waits: %v", id, err)
			break
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	slices.Sort(r.failed)
	slices.Sort(want)
	if r.err != nil || !slices.Equal(r.failed, want) {
		t.Fatalf("reaper failed %v, %v; want %v", r.failed, r.err, want)
	}
	for _, id := range ids {
		ledger(t, s, id, 0, 0)
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
