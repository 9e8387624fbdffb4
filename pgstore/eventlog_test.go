package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// The previous release's reads of the event log (schema 31's pgstore/events.go, word for word):
// EventsAfter's job columns from the JSON snapshot, then the event's own, and EventSeq.
const (
	oldEventsAfter = `SELECT r.id, r.seq, r.account_id, r.status, r.input_format, r.target_format, r.input_bytes, r.options, r.attempt,
	r.error_code, r.error_message, r.created_at, r.started_at, r.finished_at, r.expires_at, r.output_bytes, r.output_sha256,
	r.upload_size, r.upload_etag, r.upload_version_id, r.output_attempt, r.output_warnings, r.error_reason, r.source_url, r.deliver_to, r.output_verified,
	coalesce(r.input_sha256, ''), coalesce(r.cache_base, ''), r.output_cached, coalesce(r.output_object, ''), r.hit_cents, e.seq, e.id, e.type, e.account_id, e.job_id, e.created_at FROM events e
		CROSS JOIN LATERAL jsonb_populate_record(NULL::jobs, e.snap) r
		WHERE e.account_id = $1 AND e.seq > greatest($2, coalesce((SELECT s.seq FROM event_seqs s WHERE s.account_id = $1), 0) - 1000) AND ($3 = '' OR e.job_id = $3) ORDER BY e.seq LIMIT $4`
	oldEventSeq = `SELECT seq FROM events WHERE id = $1 AND account_id = $2 AND seq > coalesce((SELECT s.seq FROM event_seqs s WHERE s.account_id = $2), 0) - 1000`
	// eventJobCols are the same job columns read from the job's row itself.
	eventJobCols = `id, seq, account_id, status, input_format, target_format, input_bytes, options, attempt,
	error_code, error_message, created_at, started_at, finished_at, expires_at, output_bytes, output_sha256,
	upload_size, upload_etag, upload_version_id, output_attempt, output_warnings, error_reason, source_url, deliver_to, output_verified,
	coalesce(input_sha256, ''), coalesce(cache_base, ''), output_cached, coalesce(output_object, ''), hit_cents`
)

// loggedChange is one status change of a job and its row's job columns right after it.
type loggedChange struct {
	eventID string
	values  []any
}

// changeStatus moves job through queued, running (attempt 1) and succeeded with plain UPDATEs,
// as any path does, and returns each change's event id and the job's columns after it.
func changeStatus(t *testing.T, ctx context.Context, conn *pgx.Conn, job string) []loggedChange {
	t.Helper()
	steps := []struct{ set, suffix string }{
		{`status = 'queued', started_at = now(), upload_size = 10, upload_etag = '"e"'`, "queued"},
		{`status = 'running', attempt = 1, lease_owner = 'old-node', lease_expires_at = now() + interval '1 minute'`, "running_1"},
		{`status = 'succeeded', finished_at = now(), output_bytes = 7, output_sha256 = 'ab', output_attempt = 1,
			output_verified = true, lease_owner = NULL, lease_expires_at = NULL, hit_cents = 3`, "succeeded"},
	}
	var out []loggedChange
	for _, step := range steps {
		if _, err := conn.Exec(ctx, `UPDATE jobs SET `+step.set+` WHERE id = $1`, job); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `SELECT `+eventJobCols+` FROM jobs WHERE id = $1`, job)
		if err != nil {
			t.Fatal(err)
		}
		values := collectValues(t, rows)
		if len(values) != 1 {
			t.Fatalf("job %s: %d rows", job, len(values))
		}
		out = append(out, loggedChange{"evt_" + job + "_" + step.suffix, values[0]})
	}
	return out
}

// collectValues reads each row's values.
func collectValues(t *testing.T, rows pgx.Rows) [][]any {
	t.Helper()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrate_0032OldReadersReadTheNewLog: a database a previous release left at migration 31
// has events whose jobs are JSON snapshots; a node of that release has prepared its reads on
// its connection. Open (a node of this release) applies 0032, and later changes log their
// jobs as rows. The old node's prepared reads then still return every event, those from
// before and after the migration, each with the job's columns as they were right after its
// change, and find each by id; this release's EventsAfter reads both kinds with the same
// jobs. Fails with a log the old reads cannot see through `events`, a view whose snapshot
// lacks a column, or a reader that takes only one kind of row.
func TestMigrate_0032OldReadersReadTheNewLog(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	url, conn, ctx := migratedConn(t, 31)
	const acct = "acct_log32"
	insertAccount(t, ctx, conn, acct)
	newJob := func(id string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options,
				created_at, expires_at, deliver_to, input_sha256)
			VALUES ($1, $2, 'created', 'png', 'jpeg', 10, '{"quality":80}'::bytea, now(), now() + interval '1 day',
				'{"url":"s3://b/k"}'::jsonb, 'cafe')`, id, acct); err != nil {
			t.Fatal(err)
		}
	}
	newJob("job_log32_before")
	changes := changeStatus(t, ctx, conn, "job_log32_before")

	old := connect(t, url) // the previous release's node, its statements prepared and cached
	readOld := func() [][]any {
		t.Helper()
		rows, err := old.Query(ctx, oldEventsAfter, acct, int64(0), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return collectValues(t, rows)
	}
	before := readOld()
	if len(before) != len(changes) {
		t.Fatalf("schema 31's log: %d events, want %d", len(before), len(changes))
	}

	s := open(t, url, pgstore.Options{NodeID: "new-node"}) // applies 0032
	var kind string
	if err := conn.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'events'`).Scan(&kind); err != nil || kind != "v" {
		t.Fatalf("events after 0032: relkind %q (%v), want a view", kind, err)
	}
	newJob("job_log32_after")
	changes = append(changes, changeStatus(t, ctx, conn, "job_log32_after")...)
	var rows, asRows int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(job) FROM event_log WHERE account_id = $1`, acct).Scan(&rows, &asRows); err != nil || rows != 6 || asRows != 3 {
		t.Fatalf("event_log: %d rows, %d with the job as a row (%v); want 6, 3", rows, asRows, err)
	}

	after := readOld()
	if len(after) != len(changes) || fmt.Sprint(after[:3]) != fmt.Sprint(before) {
		t.Fatalf("the previous release's read after 0032:\n%v\nwant its first three as before:\n%v", after, before)
	}
	for i, c := range changes {
		// The event's job columns come first in the old read, then e.seq, e.id, ...
		if got := after[i][:len(c.values)]; fmt.Sprint(got) != fmt.Sprint(c.values) {
			t.Errorf("event %d (%s) read by the previous release:\n%v\nwant the job right after its change:\n%v", i, c.eventID, got, c.values)
		}
		var seq int64
		if err := old.QueryRow(ctx, oldEventSeq, c.eventID, acct).Scan(&seq); err != nil || seq != int64(i+1) {
			t.Errorf("the previous release's EventSeq(%s) = %d (%v), want %d", c.eventID, seq, err, i+1)
		}
		if got, found, err := s.EventSeq(acct, c.eventID); err != nil || !found || got != int64(i+1) {
			t.Errorf("EventSeq(%s) = %d, %v (%v), want %d", c.eventID, got, found, err, i+1)
		}
	}

	evs, err := s.EventsAfter(acct, 0, "", 100)
	if err != nil || len(evs) != len(changes) {
		t.Fatalf("EventsAfter: %d events (%v), want %d", len(evs), err, len(changes))
	}
	for i, ev := range evs {
		if ev.ID != changes[i].eventID || ev.Seq != int64(i+1) {
			t.Errorf("event %d: %s seq %d, want %s seq %d", i, ev.ID, ev.Seq, changes[i].eventID, i+1)
		}
	}
	// A finished job's last event carries the job as the store reads it, whichever kind of row.
	for _, i := range []int{2, 5} {
		job, err := s.Job(evs[i].AccountID, evs[i].JobID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(job)
		if string(evs[i].Job) != string(want) {
			t.Errorf("%s's job:\n%s\nwant the stored job:\n%s", evs[i].ID, evs[i].Job, want)
		}
	}
	var decoded store.Job
	if err := json.Unmarshal(evs[4].Job, &decoded); err != nil || decoded.Status != store.StatusRunning || decoded.Attempt != 1 {
		t.Errorf("%s's job: %+v (%v), want running, attempt 1", evs[4].ID, decoded, err)
	}
}
