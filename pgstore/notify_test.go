package pgstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// woken fails the test unless ch is closed within a bound far past any commit's.
func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testenv.Scale(30 * time.Second)):
		t.Fatalf("%s was not woken", what)
	}
}

// payloads is a session's queued notifications (convsvc.notify), sorted.
func payloads(queued string) []string {
	if queued == "" {
		return nil
	}
	p := strings.Split(queued, ",")
	slices.Sort(p)
	return p
}

// queuedOf reads the notifications conn's session holds for after a commit.
func queuedOf(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	var q string
	if err := conn.QueryRow(ctx, `SELECT coalesce(current_setting('convsvc.notify', true), '')`).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestNotify_LeavesAfterTheCommit (migration 0020): a transition function's transaction and a
// Go transaction of this release send no notification at their commit (which would take
// NOTIFY's cluster-wide lock through the commit's WAL flush): the start function's event,
// job and queue payloads, and a Go transaction's event and notify payloads, are queued in the
// session, the start's still queued after its COMMIT. Sent afterwards, as pgstore sends them
// (convsvc_send_notifies() after the COMMIT, one round trip), they wake another node's
// WaitChange and event waiters, and nothing stays queued. On 0019 the queue stays empty: the
// event trigger and the start function call pg_notify inside the transaction.
func TestNotify_LeavesAfterTheCommit(t *testing.T) {
	url := testpg.NewDatabase(t)
	a := open(t, url, pgstore.Options{NodeID: "node-a"})
	b := open(t, url, pgstore.Options{NodeID: "node-b"})
	acct, err := a.CreateAccount("acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	create := func() store.Job {
		job, _, err := a.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
			func(store.Job) (store.Response, error) { return store.Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// The start function, called as pgstore calls it, but with the send held back.
	started := create()
	changed, releaseChange := b.WaitChange(started.ID)
	defer releaseChange()
	events, releaseEvents := b.WaitEvents(acct.ID)
	defer releaseEvents()
	bt := &pgx.Batch{}
	bt.Queue(`BEGIN`)
	bt.Queue(`SELECT status FROM convsvc_start_job($1, $2, 10, NULL, NULL, NULL, '', 1, false)`, acct.ID, started.ID)
	bt.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, bt).Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"e:" + acct.ID, "q:" + started.ID} // q: wakes the job's waiters too
	if got := payloads(queuedOf(t, ctx, conn)); !slices.Equal(got, want) {
		t.Fatalf("queued after the start's commit: %q, want %q (sent at the commit instead?)", got, want)
	}
	if _, err := conn.Exec(ctx, `SELECT convsvc_send_notifies()`); err != nil {
		t.Fatal(err)
	}
	woken(t, changed, "node B's WaitChange of the started job")
	woken(t, events, "node B's event waiter after the start")
	if q := queuedOf(t, ctx, conn); q != "" {
		t.Fatalf("queued after the send: %q", q)
	}
	if j, err := b.Job(acct.ID, started.ID); err != nil || j.Status != store.StatusQueued {
		t.Fatalf("node B reads %+v, %v; want it queued", j, err)
	}

	// A Go transaction of this release (Store.tx).
	cancelled := create()
	changed, releaseChange = b.WaitChange(cancelled.ID)
	defer releaseChange()
	events, releaseEvents = b.WaitEvents(acct.ID)
	defer releaseEvents()
	queued, err := a.CancelQueued(ctx, cancelled.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := payloads(queued), []string{"c:" + cancelled.ID, "e:" + acct.ID}; !slices.Equal(got, want) {
		t.Fatalf("queued inside the Go transaction: %q, want %q", got, want)
	}
	woken(t, changed, "node B's WaitChange of the cancelled job")
	woken(t, events, "node B's event waiter after the cancel")
}

// TestNotify_ClaimsLeaveAfterTheCommit (migration 0023): both claim functions (0019's, which
// this release calls, and 0015's, which a previous release's nodes call) send nothing at their
// commit: the event trigger's payload and the job's are queued in the session, still there
// after the COMMIT, and once sent (as pgstore sends them, after the COMMIT) they wake another
// node's WaitChange and event waiters. Before 0023 the 5-argument claim called pg_notify and
// both fired the event trigger without the defer flag: the queue held the job's payload of
// 0015's claim only.
func TestNotify_ClaimsLeaveAfterTheCommit(t *testing.T) {
	url := testpg.NewDatabase(t)
	a := open(t, url, pgstore.Options{NodeID: "node-a"})
	b := open(t, url, pgstore.Options{NodeID: "node-b"})
	acct, err := a.CreateAccount("acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, claim := range []string{
		`SELECT (c.o_job).id FROM convsvc_claim_job('', 'node-x', 60000000, 1, false) c`,
		`SELECT id FROM convsvc_claim_job('', 'node-x', 60000000)`,
	} {
		job, _, err := a.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
			func(store.Job) (store.Response, error) { return store.Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		start := &pgx.Batch{}
		start.Queue(`BEGIN`)
		start.Queue(`SELECT status FROM convsvc_start_job($1, $2, 10, NULL, NULL, NULL, '', 1, false)`, acct.ID, job.ID)
		start.Queue(`COMMIT`)
		start.Queue(`SELECT convsvc_send_notifies()`)
		if err := conn.SendBatch(ctx, start).Close(); err != nil {
			t.Fatal(err)
		}
		changed, releaseChange := b.WaitChange(job.ID)
		defer releaseChange()
		events, releaseEvents := b.WaitEvents(acct.ID)
		defer releaseEvents()
		var claimed string
		bt := &pgx.Batch{}
		bt.Queue(`BEGIN`)
		bt.Queue(claim).QueryRow(func(r pgx.Row) error { return r.Scan(&claimed) })
		bt.Queue(`COMMIT`)
		if err := conn.SendBatch(ctx, bt).Close(); err != nil {
			t.Fatalf("%s: %v", claim, err)
		}
		if claimed != job.ID {
			t.Fatalf("%s claimed %q, want %s", claim, claimed, job.ID)
		}
		want := []string{"e:" + acct.ID, "j:" + job.ID}
		if got := payloads(queuedOf(t, ctx, conn)); !slices.Equal(got, want) {
			t.Fatalf("%s: queued after the claim's commit: %q, want %q (sent at the commit instead?)", claim, got, want)
		}
		if _, err := conn.Exec(ctx, `SELECT convsvc_send_notifies()`); err != nil {
			t.Fatal(err)
		}
		woken(t, changed, "node B's WaitChange of the claimed job")
		woken(t, events, "node B's event waiter after the claim")
		if j, err := b.Job(acct.ID, job.ID); err != nil || j.Status != store.StatusRunning {
			t.Fatalf("node B reads %+v, %v; want it running", j, err)
		}
	}
}

// TestMigrate_0020KeepsNotifying: a database at migration 0019 with a session of a previous
// release connected (it ran 0019's start function, as that release's nodes do) gets 0020 from
// a new node's Open; that session's transactions still wake the new node's waiters: its
// transition call (BEGIN, the function, COMMIT and convsvc_send_notifies() in one batch) and
// its Go transaction that changes a status and notifies at its commit, sending nothing
// afterwards (the event trigger notifies inside a transaction that does not defer its
// notifications); nothing stays queued in its session.
func TestMigrate_0020KeepsNotifying(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	defer cancel()
	old, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(context.Background())
	migrateTo(t, old, 19)
	const acct = "acct_migrate20"
	if _, err := old.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at)
		VALUES ($1, 'm', 100, 3, now())`, acct); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = store.NewJobID(time.Now())
		if _, err := old.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at, expires_at)
			VALUES ($1, $2, 'created', 'png', 'gif', 10, now(), now() + interval '1 day')`, ids[i], acct); err != nil {
			t.Fatal(err)
		}
	}
	oldStart := func(jobID string) {
		t.Helper()
		bt := &pgx.Batch{}
		bt.Queue(`BEGIN`)
		bt.Queue(`SELECT status FROM convsvc_start_job($1, $2, 10, NULL, NULL, NULL, '', 1, false)`, acct, jobID)
		bt.Queue(`COMMIT`)
		bt.Queue(`SELECT convsvc_send_notifies()`)
		if err := old.SendBatch(ctx, bt).Close(); err != nil {
			t.Fatal(err)
		}
	}
	oldStart(ids[0]) // 0019's functions compiled in the old session

	s := open(t, url, pgstore.Options{NodeID: "new-node"})
	var applied bool
	if err := old.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 20)`).Scan(&applied); err != nil || !applied {
		t.Fatalf("0020 applied: %v %v", applied, err)
	}

	changed, release := s.WaitChange(ids[1])
	defer release()
	events, releaseEvents := s.WaitEvents(acct)
	defer releaseEvents()
	oldStart(ids[1])
	woken(t, changed, "the new node's WaitChange of the job the old session started")
	woken(t, events, "the new node's event waiter after the old session's start")
	if q := queuedOf(t, ctx, old); q != "" {
		t.Fatalf("the old session's queue after its start: %q", q)
	}

	changed, release = s.WaitChange(ids[2])
	defer release()
	events, releaseEvents = s.WaitEvents(acct)
	defer releaseEvents()
	tx, err := old.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1`, ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify('convsvc', 'c:' || $1::text)`, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	woken(t, changed, "the new node's WaitChange of the job the old session cancelled")
	woken(t, events, "the new node's event waiter after the old session's cancel (the trigger's notification)")
	if q := queuedOf(t, ctx, old); q != "" {
		t.Fatalf("the old session's queue after its Go transaction: %q (the trigger queued where nothing sends)", q)
	}
	evs, err := s.EventsAfter(acct, 0, "", 10)
	if err != nil || len(evs) != 3 || evs[2].ID != store.WebhookEventID(ids[2], store.StatusCancelled) {
		t.Fatalf("events: %+v, %v; want two starts and the cancel", evs, err)
	}
}

// TestNotify_SendNeverFails (migration 0020): convsvc_send_notifies() runs after its caller's
// COMMIT, so an error from it would report a committed change as failed; a payload NOTIFY
// refuses (over 8,000 bytes) is dropped with a warning, and the queue is emptied. On 0019
// (0015's send) the call fails.
func TestNotify_SendNeverFails(t *testing.T) {
	url := testpg.NewDatabase(t)
	open(t, url, pgstore.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(time.Minute))
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT set_config('convsvc.notify', 'j:job_a,' || repeat('x', 9000), false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT convsvc_send_notifies()`); err != nil {
		t.Fatalf("send: %v, want the refused payload dropped", err)
	}
	if q := queuedOf(t, ctx, conn); q != "" {
		t.Fatalf("queued after the send: %d bytes", len(q))
	}
}
