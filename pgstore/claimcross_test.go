package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// capped inserts an account with max_running limit and its jobs: running of them running
// (leased to another node), then one queued job per entry of keyed (with a cache key when
// true), oldest first. It returns the queued jobs' ids.
func capped(ctx context.Context, t *testing.T, conn *pgx.Conn, acct string, limit, running int, keyed ...bool) []string {
	t.Helper()
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at, max_running)
		VALUES ($1, 'capped', 100, 0, now(), $2)`, acct, limit); err != nil {
		t.Fatal(err)
	}
	var queued []string
	for i := range running + len(keyed) {
		id := store.NewJobID(time.Now())
		var base, sha *string
		if i >= running && keyed[i-running] {
			base, sha = &[]string{"png>gif;" + id}[0], &[]string{"0f8f2b8a6b7c3e1d0a9f8e7d6c5b4a392817161514131211100f0e0d0c0b0a09"}[0]
		}
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at,
				expires_at, started_at, input_sha256, cache_base, source_url)
			VALUES ($1, $2, 'queued', 'png', 'gif', 10, now(), now() + interval '1 day', now() + $3 * interval '1 millisecond',
				$4, $5, 'https://example.com/in.png')`, id, acct, i, sha, base); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = $1`, acct); err != nil {
			t.Fatal(err)
		}
		if i < running {
			if _, err := conn.Exec(ctx, `UPDATE jobs SET status = 'running', attempt = 1, lease_owner = 'elsewhere',
				lease_expires_at = now() + interval '1 day' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		} else {
			queued = append(queued, id)
		}
	}
	return queued
}

// claimTx is a node's claim (0019's convsvc_claim_job, as ClaimJob calls it) in a
// transaction left open on a connection of its own, so that what the claim locked stays
// locked until the test commits it.
type claimTx struct {
	tx   pgx.Tx
	pid  uint32
	done chan struct{}
	job  string // the claimed job's id, "" when none
	err  error
}

// startClaim runs the claim after last in a goroutine; done closes when it has returned.
func startClaim(ctx context.Context, t *testing.T, url, node, last string) *claimTx {
	t.Helper()
	conn := connect(t, url)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &claimTx{tx: tx, pid: conn.PgConn().PID(), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		var id *string
		c.err = tx.QueryRow(ctx, `SELECT (c.o_job).id FROM convsvc_claim_job($1, $2, 60000000, 1, false) c`, last, node).Scan(&id)
		if errors.Is(c.err, pgx.ErrNoRows) {
			c.err = nil
		}
		if id != nil {
			c.job = *id
		}
	}()
	return c
}

func (c *claimTx) returned() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// TestClaim_CrossingCappedAccountsDoNotDeadlock: two claims walking past two accounts at
// max_running in opposite orders (one after wrapping round the account list) never wait for
// each other. Before migration 0022 a claim kept each capped account's claim lock (and its
// row, when the job it looked at had a cache key) while it walked on, and the interleaving
// forced here (a test transaction holding b's row lets x hold a's claim lock and stop at b,
// while y takes b's claim lock and asks for a's) ended with PostgreSQL aborting one of them:
// 40P01 deadlock detected.
func TestClaim_CrossingCappedAccountsDoNotDeadlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testpg.NewDatabase(t)
	open(t, url, pgstore.Options{NodeID: "migrator"}) // migrates
	setup := connect(t, url)
	// Both at max_running 1 with one job running. b's oldest queued job has a cache key (the
	// walk locked its account's row before it counted), its next one none.
	capped(ctx, t, setup, "acct_cross_a", 1, 1, false, false)
	capped(ctx, t, setup, "acct_cross_b", 1, 1, true, false)

	// Another transaction holds b's row.
	holder := startDying(ctx, t, url)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM accounts WHERE id = 'acct_cross_b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, url)
	// x walks a then b: a's claim lock taken, a at its limit, then b's keyed job. Before 0022 it
	// stopped there, waiting for b's row, holding a's claim lock; now it passes b and returns.
	x := startClaim(ctx, t, url, "node-x", "")
	waitBlocked(t, admin, []uint32{holder.pid}, x.returned)
	// y walks b (after its last, a) then a: b's unkeyed job, b's claim lock, b at its limit,
	// then a, whose claim lock x holds. Before 0022 it waited for x; now it passes a.
	y := startClaim(ctx, t, url, "node-y", "acct_cross_a")
	waitBlocked(t, admin, []uint32{x.pid}, y.returned)
	// b's row free: before 0022 x asked for b's claim lock next, which y held: a cycle.
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-x.done
	<-y.done
	for _, c := range []*claimTx{x, y} {
		var pgErr *pgconn.PgError
		if errors.As(c.err, &pgErr) && pgErr.Code == "40P01" {
			t.Fatalf("crossing claims deadlocked: %v", c.err)
		}
		if c.err != nil || c.job != "" {
			t.Fatalf("claim with both accounts at max_running: job %q, %v", c.job, c.err)
		}
		if err := c.tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := column[int64](t, admin, `SELECT count(*) FROM jobs WHERE status = 'running'`); n[0] != 2 {
		t.Fatalf("%d jobs running after the claims, want 2 (one per account, its max_running)", n[0])
	}
}

// TestClaim_LastSlotTakenOnce: an account with one running slot left and jobs queued, claimed
// at once by many claims on several nodes: exactly one takes the slot. The claim lock is
// tried, not waited for (migration 0022), and a claim that finds it held passes the account,
// so a second claim never counts the running jobs while the first has not yet committed its
// own. A claim holding the slot's lock in an open transaction is passed by a claim of another
// node (deterministic), and many claims racing for it take it once (they may interleave
// in any way, and each way must take the slot exactly once).
func TestClaim_LastSlotTakenOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a second claim test beside TestClaim_CrossingCappedAccountsDoNotDeadlock: the plain run covers it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{NodeID: "node-1"})
	other := open(t, url, pgstore.Options{NodeID: "node-2"})
	setup := connect(t, url)
	queued := capped(ctx, t, setup, "acct_slot", 2, 1, false, false, false, false)

	// One claim takes the last slot and has not committed: another node's claim passes the
	// account (it cannot count a running job that is not committed yet).
	first := startClaim(ctx, t, url, "node-x", "")
	<-first.done
	if first.err != nil || first.job != queued[0] {
		t.Fatalf("first claim: %q, %v; want %s", first.job, first.err, queued[0])
	}
	done := make(chan struct{})
	var j store.Job
	var ok bool
	var err error
	go func() {
		defer close(done)
		j, ok, err = other.ClaimJob()
	}()
	// Before 0022 that claim waited for the first's lock, then counted: the same outcome.
	waitBlocked(t, setup, []uint32{first.pid}, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if err := first.tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || ok {
		t.Fatalf("claim while another took the last slot: %s ok=%v err=%v", j.ID, ok, err)
	}

	// A slot again (the running job that was not claimed here finishes), and 16 claims at once.
	elsewhere := column[string](t, setup, `SELECT id FROM jobs WHERE account_id = 'acct_slot' AND lease_owner = 'elsewhere'`)
	if _, err := s.FinishJob(elsewhere[0], 1, store.Outcome{Output: &store.Output{Bytes: 1}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var claimed []string
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := s
			if i%2 == 1 {
				node = other
			}
			j, ok, err := node.ClaimJob()
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				claimed = append(claimed, j.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Exactly one: a claim passes the account only while another holds its lock, and the
	// first to hold it finds the slot free. Which job is not fixed: a claim locks the head job
	// (SKIP LOCKED) before it tries the account's lock, and one that is passed keeps that row
	// until its transaction ends, so the holder may take the next queued job instead.
	if len(claimed) != 1 || !slices.Contains(queued[1:], claimed[0]) {
		t.Fatalf("16 claims with one slot left took %v, want one of the queued jobs %v", claimed, queued[1:])
	}
	if n := column[int64](t, setup, `SELECT count(*) FROM jobs WHERE account_id = 'acct_slot' AND status = 'running'`); n[0] != 2 {
		t.Fatalf("%d jobs running, want 2 (max_running)", n[0])
	}
}

// TestClaim_CrossingCappedAccountsDoNotDeadlock_Go: the same crossing on the Go claim
// (claimFair: what the claim function leaves to Go, and UseGoTransitions). Its transaction
// commits as ClaimJob returns, so y's walk meets x's locks only while x waits: before, x
// stopped at b's row holding a's claim lock, y waited for it holding b's, and one of them
// was aborted and ran again (Retried).
func TestClaim_CrossingCappedAccountsDoNotDeadlock_Go(t *testing.T) {
	if testing.Short() {
		t.Skip("a second claim test beside TestClaim_CrossingCappedAccountsDoNotDeadlock: the plain run covers it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testpg.NewDatabase(t)
	x := open(t, url, pgstore.Options{NodeID: "node-x"})
	y := open(t, url, pgstore.Options{NodeID: "node-y"})
	z := open(t, url, pgstore.Options{NodeID: "node-z"})
	setup := connect(t, url)
	a := capped(ctx, t, setup, "acct_crossgo_a", 1, 0, false, false, false)
	b := capped(ctx, t, setup, "acct_crossgo_b", 1, 0, false, true, false)
	for _, s := range []*pgstore.Store{x, y, z} {
		s.UseGoTransitions()
	}
	// y serves a (its last is a), z then b: both at max_running.
	if j, ok, err := y.ClaimJob(); err != nil || !ok || j.ID != a[0] {
		t.Fatalf("y's first claim: %s ok=%v err=%v, want %s", j.ID, ok, err, a[0])
	}
	if j, ok, err := z.ClaimJob(); err != nil || !ok || j.ID != b[0] {
		t.Fatalf("z's first claim: %s ok=%v err=%v, want %s", j.ID, ok, err, b[0])
	}

	holder := startDying(ctx, t, url)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM accounts WHERE id = 'acct_crossgo_b' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, url)
	type claim struct {
		job store.Job
		ok  bool
		err error
	}
	run := func(s *pgstore.Store) (chan claim, func() bool) {
		done := make(chan claim, 1)
		returned := make(chan struct{})
		go func() {
			j, ok, err := s.ClaimJob()
			done <- claim{j, ok, err}
			close(returned)
		}()
		return done, func() bool {
			select {
			case <-returned:
				return true
			default:
				return false
			}
		}
	}
	// x walks a then b; before, it waited for b's row (its keyed job) holding a's claim lock.
	xDone, xReturned := run(x)
	_, xWaits := waitBlocked(t, admin, []uint32{holder.pid}, xReturned)
	// y walks b then a; before, it took b's claim lock and waited for a's, which x held.
	yDone, yReturned := run(y)
	if xWaits {
		// The backend x waits in (one of its pool's): y waits for it.
		var pids []uint32
		for _, p := range column[int32](t, admin, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, int32(holder.pid)) {
			pids = append(pids, uint32(p))
		}
		waitBlocked(t, admin, pids, yReturned)
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []claim{<-xDone, <-yDone} {
		if c.err != nil || c.ok {
			t.Fatalf("claim with both accounts at max_running: %s ok=%v err=%v", c.job.ID, c.ok, c.err)
		}
	}
	if n := x.Retried() + y.Retried(); n != 0 {
		t.Fatalf("the crossing claims ran %d transactions again (deadlock detected)", n)
	}
	if n := column[int64](t, admin, `SELECT count(*) FROM jobs WHERE status = 'running'`); n[0] != 2 {
		t.Fatalf("%d jobs running after the claims, want 2 (one per account, its max_running)", n[0])
	}
}

// TestMigrate_0022ClaimsPassEachOther: a database a previous release left at migration 0021,
// with two accounts at max_running 1 and jobs queued, gets 0022 from Open. Two nodes of the
// previous release (0015's convsvc_claim_job, the function they call, in transactions left
// open) then walk past both accounts in opposite orders: neither waits for the other, neither
// claims; once a running job of a finishes, its oldest queued job is the next claim's.
func TestMigrate_0022ClaimsPassEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	url, conn, ctx := migratedConn(t, 21)
	a := capped(ctx, t, conn, "acct_m22a", 1, 1, false, false)
	capped(ctx, t, conn, "acct_m22b", 1, 1, false, false)
	s := open(t, url, pgstore.Options{NodeID: "new-node"})
	if versions := column[int](t, conn, `SELECT version FROM schema_migrations ORDER BY version`); !slices.Contains(versions, 22) {
		t.Fatalf("schema_migrations %v after Open, want 22 among them", versions)
	}

	// oldClaim is the previous release's claim, in a transaction left open.
	oldClaim := func(node, last string) (pgx.Tx, string) {
		t.Helper()
		c := connect(t, url)
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		err = tx.QueryRow(ctx, `SELECT id FROM convsvc_claim_job($1, $2, 60000000)`, last, node).Scan(&id)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return tx, id
	}
	// x walks a then b, y (which served a last) b then a, each holding what it passed: on 0021's
	// walk y would wait for x's claim lock of b.
	x, got := oldClaim("old-x", "")
	if got != "" {
		t.Fatalf("x claimed %s with both accounts at max_running", got)
	}
	y, got := oldClaim("old-y", "acct_m22a")
	if got != "" {
		t.Fatalf("y claimed %s with both accounts at max_running", got)
	}
	for _, tx := range []pgx.Tx{x, y} {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	running := column[string](t, conn, `SELECT id FROM jobs WHERE account_id = 'acct_m22a' AND status = 'running'`)
	if _, err := s.FinishJob(running[0], 1, store.Outcome{Output: &store.Output{Bytes: 1}}); err != nil {
		t.Fatal(err)
	}
	tx, got := oldClaim("old-x", "")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got != a[0] {
		t.Fatalf("claim after a's running job finished: %q, want a's oldest queued job %s", got, a[0])
	}
}
