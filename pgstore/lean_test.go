package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testpg"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// queueEvents makes events from+1 ... from+n on acct's log, one per job inserted queued at
// creation (each insert fires the event trigger once, in the insert's row order), and returns
// their event ids, oldest first.
func queueEvents(t *testing.T, ctx context.Context, conn *pgx.Conn, acct string, from, n int) []string {
	t.Helper()
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
			created_at, expires_at, started_at, source_url)
		SELECT 'job_lean_' || lpad(i::text, 6, '0'), $1, 'queued', 'md', 'pdf', 10,
			now(), now() + interval '1 day', now(), 'https://example.com/in.md'
		FROM generate_series($2::int + 1, $2::int + $3::int) AS i ORDER BY i`, acct, from, n); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt_job_lean_%06d_queued", from+1+i)
	}
	return ids
}

// checkLog asserts that the account's log, as the store reads it, is exactly the last
// store.EventLogSize of all (every event id the account ever got, oldest first): EventsAfter(0)
// returns them in order, the oldest retained id is found and resumes to the other 999, and
// the id just before it is no longer found (a resume from it gets reset).
func checkLog(t *testing.T, s *pgstore.Store, acct string, all []string) {
	t.Helper()
	kept := all[max(0, len(all)-store.EventLogSize):]
	evs, err := s.EventsAfter(acct, 0, "", 2*store.EventLogSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(kept) {
		t.Fatalf("after %d events the log reads %d, want %d", len(all), len(evs), len(kept))
	}
	for i, ev := range evs {
		if ev.ID != kept[i] {
			t.Fatalf("after %d events the log's event %d is %s, want %s", len(all), i, ev.ID, kept[i])
		}
	}
	seq, found, err := s.EventSeq(acct, kept[0])
	if err != nil || !found {
		t.Fatalf("after %d events the oldest retained event %s: found=%v err=%v", len(all), kept[0], found, err)
	}
	rest, err := s.EventsAfter(acct, seq, "", 2*store.EventLogSize)
	if err != nil || len(rest) != len(kept)-1 || rest[0].ID != kept[1] {
		t.Fatalf("after %d events a resume from the oldest retained event reads %d events (%v), want %d from %s",
			len(all), len(rest), err, len(kept)-1, kept[1])
	}
	job := strings.TrimSuffix(strings.TrimPrefix(kept[0], "evt_"), "_queued")
	if one, err := s.EventsAfter(acct, 0, job, 10); err != nil || len(one) != 1 || one[0].ID != kept[0] {
		t.Fatalf("after %d events the oldest retained job's own events: %+v %v", len(all), one, err)
	}
	if len(all) > len(kept) {
		gone := all[len(all)-len(kept)-1]
		if _, found, err := s.EventSeq(acct, gone); err != nil || found {
			t.Fatalf("after %d events %s, one older than the last %d, is still found (%v)", len(all), gone, store.EventLogSize, err)
		}
		job := strings.TrimSuffix(strings.TrimPrefix(gone, "evt_"), "_queued")
		if evs, err := s.EventsAfter(acct, 0, job, 10); err != nil || len(evs) != 0 {
			t.Fatalf("after %d events the dropped event's job still reads %+v (%v)", len(all), evs, err)
		}
	}
}

// eventRows is how many rows of acct's log its table holds (through the events view since 0032).
func eventRows(t *testing.T, ctx context.Context, conn *pgx.Conn, acct string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1`, acct).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrate_0025PrunesTheLogInBatches: a database a previous release left at migration 0023,
// whose account has had 1,050 events (0017's trigger kept the last 1,000, one DELETE per
// event), gets 0025 from Open. Its trigger then prunes every 100th event; the log the store
// reads stays exactly the last 1,000 events before, at and after the prunes at seqs 1,100 and
// 1,200: each retained id resumes, the one before is gone, and the table holds at most 99 rows
// more than that, 1,000 right after each prune. Fails
// with the readers unbounded (up to 1,099 events read), a prune that drops more than the
// events 1,000 back, or none.
func TestMigrate_0025PrunesTheLogInBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database and makes 1,201 events: the plain run covers it")
	}
	url, conn, ctx := migratedConn(t, 23)
	const acct = "acct_lean25"
	insertAccount(t, ctx, conn, acct)
	all := queueEvents(t, ctx, conn, acct, 0, 1050)
	if n := eventRows(t, ctx, conn, acct); n != store.EventLogSize {
		t.Fatalf("0023's log holds %d rows, want %d", n, store.EventLogSize)
	}

	s := open(t, url, pgstore.Options{NodeID: "new-node"})
	checkLog(t, s, acct, all)
	// Up to each prune's neighbours in one insert, then one event at a time across it.
	for _, k := range []int{1098, 1099, 1100, 1101, 1198, 1199, 1200, 1201} {
		all = append(all, queueEvents(t, ctx, conn, acct, len(all), k-len(all))...)
		checkLog(t, s, acct, all)
		n := eventRows(t, ctx, conn, acct)
		switch {
		case k%100 == 0 && n != store.EventLogSize:
			t.Fatalf("after event %d (a prune) the table holds %d rows, want %d", k, n, store.EventLogSize)
		case n < store.EventLogSize || n > store.EventLogSize+99:
			t.Fatalf("after event %d the table holds %d rows, want %d to %d", k, n, store.EventLogSize, store.EventLogSize+99)
		}
	}
}

// TestMigrate_0025QueueQueriesUseAnIndex: with jobs_queue and jobs_seq_key dropped (0025), the queries that
// read the queue across accounts (the claim walk's, Go's and SQL's, and the metrics' queue
// depth) still read it through an index of queued jobs, never a scan of the jobs table; the
// index's partial predicate keeps them to the queue.
func TestMigrate_0025QueueQueriesUseAnIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	_, conn, ctx := migratedConn(t, 25)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'jobs' AND indexname IN ('jobs_queue', 'jobs_seq_key')`).
		Scan(&n); err != nil || n != 0 {
		t.Fatalf("jobs_queue and jobs_seq_key: %d left (%v), want both dropped", n, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at)
		SELECT 'acct_q' || i, 'q', 100000, now() FROM generate_series(1, 20) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
			created_at, expires_at, started_at, finished_at, output_bytes)
		SELECT 'job_q' || i, 'acct_q' || (i % 20 + 1), CASE WHEN i % 50 = 0 THEN 'queued' ELSE 'succeeded' END, 'md', 'pdf', 10,
			now(), now() + interval '1 day', now(), CASE WHEN i % 50 <> 0 THEN now() END, CASE WHEN i % 50 <> 0 THEN 1 END
		FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"metrics' queue depth": `SELECT count(*), min(started_at) FROM jobs WHERE status = 'queued'`,
		"claim walk's job": `SELECT * FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" = (
				SELECT account_id COLLATE "C" FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > 'acct_q1'
				ORDER BY account_id COLLATE "C" LIMIT 1)
			ORDER BY account_id COLLATE "C", started_at, seq FOR UPDATE SKIP LOCKED LIMIT 1`,
		"claim walk's next account": `SELECT account_id FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > 'acct_q1'
			ORDER BY account_id COLLATE "C" LIMIT 1`,
		"an account's queue length": `SELECT count(*) FROM jobs WHERE account_id = 'acct_q1' AND status = 'queued'`,
	} {
		plan := explain(t, conn, q)
		if strings.Contains(plan, "Seq Scan on jobs") || !strings.Contains(plan, "Index") {
			t.Errorf("%s reads the jobs table without an index:\n%s", name, plan)
		}
	}
}

// TestStart_HitCountsItsBatchAndDelivers: a hit at start (0025's convsvc_start_job answers it
// in its own statements) counts its batch's job finished, the last one finishing the batch,
// and on an account with a webhook endpoint has its webhook delivery recorded (the function
// leaves that to Go, CVWH0, and the call runs again). Fails if the start's hit skips either.
func TestStart_HitCountsItsBatchAndDelivers(t *testing.T) {
	if testing.Short() {
		t.Skip("the plain run covers it (kept out of the race step's time)")
	}
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{NodeID: "lean"})
	acct, err := s.CreateAccount("lean", 100)
	if err != nil {
		t.Fatal(err)
	}
	const base, sha = "png>gif;lean", "1f8f2b8a6b7c3e1d0a9f8e7d6c5b4a392817161514131211100f0e0d0c0b0a09"
	params := store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, CacheBase: base}
	noResponse := func(store.Job) (store.Response, error) { return store.Response{}, nil }
	// The key's entry: the first job converts and stores its output.
	first, _, err := s.CreateJob(params, noResponse)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := s.StartSealedJob(acct.ID, first.ID, store.Upload{Size: 10, SHA256: sha}); err != nil || j.Status != store.StatusQueued {
		t.Fatalf("start the first job: %+v %v", j, err)
	}
	claimed, ok, err := s.ClaimJob()
	if err != nil || !ok || claimed.ID != first.ID {
		t.Fatalf("claim: %+v %v %v", claimed, ok, err)
	}
	if j, err := s.FinishJob(first.ID, claimed.Attempt, store.Outcome{Output: &store.Output{Bytes: 7, SHA256: strings.Repeat("c", 64)}}); err != nil ||
		j.Status != store.StatusSucceeded {
		t.Fatalf("finish the first job: %+v %v", j, err)
	}

	batch, jobs, _, err := s.CreateBatch(store.CreateBatchParams{AccountID: acct.ID, Jobs: []store.CreateJobParams{params, params}},
		func(store.Batch, []store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, job := range jobs {
		j, err := s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, SHA256: sha})
		if err != nil || j.Status != store.StatusSucceeded || !j.Output.Cached {
			t.Fatalf("start batch job %d: %+v %v, want a hit", i, j, err)
		}
		b, _, err := s.Batch(acct.ID, batch.ID)
		if err != nil || b.Unfinished != len(jobs)-1-i || (b.FinishedAt != nil) != (i == len(jobs)-1) {
			t.Fatalf("after batch job %d's hit the batch is %+v (%v), want %d unfinished", i, b, err, len(jobs)-1-i)
		}
	}

	if _, err := s.CreateWebhookEndpoint(acct.ID, "https://hooks.example/lean", strings.Repeat("s", 32)); err != nil {
		t.Fatal(err)
	}
	hooked, _, err := s.CreateJob(params, noResponse)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := s.StartSealedJob(acct.ID, hooked.ID, store.Upload{Size: 10, SHA256: sha}); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("start the hooked job: %+v %v, want a hit", j, err)
	}
	ds, err := s.WebhookDeliveries(acct.ID, store.WebhookDeliveryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range ds {
		found = found || (d.JobID == hooked.ID && d.EventType == "job.succeeded")
	}
	if !found {
		t.Fatalf("the hooked job's hit at start recorded no job.succeeded delivery: %+v", ds)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}
