package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestReapLocksAccountsInOrder: a reaper that fails the lapsed jobs of several accounts takes
// their rows in the order of their ids before it changes anything (cache.go's lock order), so
// it never holds one account's row while it waits for another's that a transaction taking
// them in the same order holds (another node's reaper, ExpireJobs): no deadlock, no retry.
// The reaper before this fix took them in an order of its plan's (the hash of their ids), and
// deadlocked with such a transaction when it took another account first; here it waits for
// each row in turn, so any order but the ids' fails (the old one matched it in about 1 run in
// 8! = 40,320).
func TestReapLocksAccountsInOrder(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: time.Millisecond})[0]
	var ids, want []string
	for range 8 {
		acct := account(t, s, 10)
		ids = append(ids, acct.ID)
		want = append(want, queuedJob(t, s, acct.ID).ID)
		if _, ok, err := s.ClaimJob(); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	waitCount(t, s, `SELECT count(*) FROM jobs WHERE status = 'running' AND lease_expires_at < clock_timestamp()`, len(want))
	inOrder(t, s, ids, want, func() ([]string, error) {
		_, failed, err := s.ReapExpiredLeases(1)
		return failed, err
	})
}

// TestExpireLocksAccountsInOrder: ExpireJobs takes the rows of the accounts whose cents it
// releases in the order of their ids, as the reaper does, not in the order the jobs expire.
func TestExpireLocksAccountsInOrder(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Retention: 100 * time.Millisecond})[0]
	var ids, want []string
	for range 8 {
		ids = append(ids, account(t, s, 10).ID)
	}
	slices.Sort(ids)
	// The account whose id sorts first has the job that expires last: before this fix
	// ExpireJobs took the accounts one by one in the jobs' expiry order, and deadlocked with a
	// transaction taking them in id order every time.
	for _, id := range slices.Backward(ids) {
		job, _, err := s.CreateJob(store.CreateJobParams{AccountID: id, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
			func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, job.ID)
	}
	waitCount(t, s, `SELECT count(*) FROM jobs WHERE expires_at <= now()`, len(want))
	inOrder(t, s, ids, want, func() ([]string, error) {
		deleted, _, err := s.ExpireJobs(100)
		return deleted, err
	})
}

// waitCount waits until the query counts n.
func waitCount(t *testing.T, s *pgstore.Store, query string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		var got int
		if err := s.Pool().QueryRow(context.Background(), query).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d within %v, want %d", query, got, waitBound, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// inOrder runs sweep once (a reap or an expiry, which takes the rows of the accounts ids and
// returns the ids want) while the test holds each of those rows in a transaction of its own,
// standing in for other nodes (waitOrder): sweep must wait for every row, in the ids' byte
// order. Then the accounts reserve nothing, the ledger holds, and s ran no transaction again
// after a deadlock.
func inOrder(t *testing.T, s *pgstore.Store, ids, want []string, sweep func() ([]string, error)) {
	t.Helper()
	locks := make([]string, len(ids))
	for i, id := range slices.Sorted(slices.Values(ids)) {
		locks[i] = fmt.Sprintf(`SELECT 1 FROM accounts WHERE id = '%s' FOR UPDATE`, id)
	}
	var got []string
	order, err := waitOrder(t, s.Pool().Config().ConnString(), locks, func() (err error) {
		got, err = sweep()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, locks) {
		t.Errorf("waited for the accounts' rows in the order\n%s\nwant their ids'\n%s", strings.Join(order, "\n"), strings.Join(locks, "\n"))
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

// TestReapEndsFlight: a job converting its cache key (its cache_inflight row) that the reaper
// fails at max attempts ends its flight in the same transaction, as a finish does: no row is
// left naming it (before, it stayed until an identical job's claim replaced it), and an
// identical job claimed next converts.
func TestReapEndsFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	s := nodes(t, 1, pgstore.Options{Lease: time.Millisecond})[0]
	acct := account(t, s, 10)
	sha := strings.Repeat("e", 64)
	keyed := func() store.Job {
		t.Helper()
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10,
			CacheBase: "png>gif;reap"}, noRender)
		if err == nil {
			j, err = s.StartSealedJob(acct.ID, j.ID, store.Upload{Size: 10, SHA256: sha})
		}
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	inflight := func() []string { return column[string](t, s.Pool(), `SELECT job_id FROM cache_inflight`) }
	job := keyed()
	if c, ok, err := s.ClaimJob(); err != nil || !ok || c.ID != job.ID || c.WaitFor != "" {
		t.Fatalf("claim: %+v %v %v, want %s converting", c, ok, err, job.ID)
	}
	if got := inflight(); !slices.Equal(got, []string{job.ID}) {
		t.Fatalf("in flight after the claim: %v, want %s", got, job.ID)
	}
	waitCount(t, s, `SELECT count(*) FROM jobs WHERE status = 'running' AND lease_expires_at < clock_timestamp()`, 1)
	if _, failed, err := s.ReapExpiredLeases(1); err != nil || !slices.Equal(failed, []string{job.ID}) {
		t.Fatalf("reap: failed %v, %v; want %s", failed, err, job.ID)
	}
	if got := inflight(); len(got) != 0 {
		t.Fatalf("in flight after the reaper failed %s: %v, want none", job.ID, got)
	}
	twin := keyed()
	if c, ok, err := s.ClaimJob(); err != nil || !ok || c.ID != twin.ID || c.WaitFor != "" {
		t.Fatalf("claim of the twin: %+v %v %v, want %s converting", c, ok, err, twin.ID)
	}
	if got := inflight(); !slices.Equal(got, []string{twin.ID}) {
		t.Fatalf("in flight after the twin's claim: %v, want %s", got, twin.ID)
	}
	ledger(t, s, acct.ID, 1, 0)
}
