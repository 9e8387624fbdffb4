package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
)

// startCase is one start of a job by convsvc_start_job (or its gated form), and its answer.
type startCase struct {
	name      string
	account   string // the job's account ("": acct_ls)
	status    string // the job's status before the start ("": created)
	expired   bool
	jobSHA    string // the job's input_sha256 ("": NULL)
	cacheBase string // the job's cache_base ("": NULL)
	caller    string // the account that starts it ("": the job's)
	size      int64  // the size the start declares (0: the job's 10)
	sha       string // the checksum the start passes
	want      string // the answer: the row's status/sha/cache_base/upload_etag, or SQLSTATE
	queued    bool   // the start queued the job: it queues payloads for the send
	hit       bool   // the start finished the job from the cache: it queues j: for the send
}

// startCases are the starts whose answers migrations 0028 and 0033 keep: every condition of
// the fast path, and what takes 0025's start instead. startFixture makes their accounts.
var startCases = []startCase{
	{name: "plain", want: "queued sha= base= etag=e", queued: true},
	{name: "checksum given", sha: "abc", want: "queued sha=abc base= etag=e", queued: true},
	{name: "checksum equal", jobSHA: "abc", sha: "abc", want: "queued sha=abc base= etag=e", queued: true},
	{name: "checksum kept", jobSHA: "abc", want: "queued sha=abc base= etag=e", queued: true},
	{name: "checksum differs", jobSHA: "abc", sha: "def", want: "CVFB0"},
	{name: "size differs", size: 11, want: "CVFB0"},
	{name: "already queued", status: "queued", want: "queued sha= base= etag="},
	{name: "expired", expired: true, want: "CV404"},
	{name: "another account's", caller: "acct_ls_other", want: "CV404"},
	{name: "cap reached", account: "acct_ls_full", want: "CV403"},
	{name: "cache key, no entry", jobSHA: "abc", cacheBase: "b1", sha: "abc", want: "queued sha=abc base=b1 etag=e", queued: true},
	{name: "cache base, no checksum", cacheBase: "b1", want: "queued sha= base=b1 etag=e", queued: true},
	{name: "cache base, checksum withheld", jobSHA: "abc", cacheBase: "b1", want: "queued sha=abc base= etag=e", queued: true},
	{name: "max_queued with room", account: "acct_ls_room", want: "queued sha= base= etag=e", queued: true},
	{name: "max_queued full", account: "acct_ls_qfull", want: "CV429"},
}

// startFixture makes startCases' accounts on a migrated database, each with an API key for
// the gated start (key_ and the account's id, hashing k and the id); acct_ls_room has room
// for two more queued jobs (its case runs once per form of the start).
func startFixture(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, max_queued, created_at) VALUES
			('acct_ls', 'ls', 1000, 100, NULL, now()), ('acct_ls_other', 'other', 1000, 0, NULL, now()),
			('acct_ls_full', 'full', 5, 1, NULL, now()), ('acct_ls_room', 'room', 1000, 2, 3, now()),
			('acct_ls_qfull', 'qfull', 1000, 2, 1, now());
		INSERT INTO api_keys (id, account_id, prefix, hash, created_at, presets_only)
			SELECT 'key_' || id, id, 'p' || id, sha256(('k' || id)::bytea), now(), false FROM accounts;
		INSERT INTO month_spend (account_id, month, cents) VALUES ('acct_ls_full', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'), 5);
		INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at, expires_at, started_at)
			VALUES ('job_ls_room_q', 'acct_ls_room', 'queued', 'png', 'jpeg', 10, now(), now() + interval '1 day', now()),
				('job_ls_qfull_q', 'acct_ls_qfull', 'queued', 'png', 'jpeg', 10, now(), now() + interval '1 day', now())`); err != nil {
		t.Fatal(err)
	}
}

// runStartCases inserts each case's job (job_ls_ and prefix and its number) and starts it with
// start, checking the answer and the payloads it queued for the send: for a start that queued
// the job, the event trigger's e: and then queuedPayload(id); for a hit, e: and then j:.
func runStartCases(t *testing.T, conn *pgx.Conn, prefix string, cases []startCase, start startFunc, queuedPayload func(id string) string) {
	t.Helper()
	for i, c := range cases {
		account, status, size, caller := c.account, c.status, c.size, c.caller
		if account == "" {
			account = "acct_ls"
		}
		if status == "" {
			status = "created"
		}
		if size == 0 {
			size = 10
		}
		if caller == "" {
			caller = account
		}
		id := fmt.Sprintf("job_ls_%s%02d", prefix, i)
		if _, err := conn.Exec(t.Context(), `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
				created_at, expires_at, started_at, input_sha256, cache_base)
			VALUES ($1, $2, $3, 'png', 'jpeg', 10, now() - interval '2 days',
				now() + CASE WHEN $4 THEN interval '-1 day' ELSE interval '1 day' END,
				CASE WHEN $3 = 'queued' THEN now() END, nullif($5, ''), nullif($6, ''))`,
			id, account, status, c.expired, c.jobSHA, c.cacheBase); err != nil {
			t.Fatal(err)
		}
		got, payloads := start(t, conn, caller, id, size, c.sha)
		if got != c.want {
			t.Errorf("%s: the start answers %q, want %q", c.name, got, c.want)
		}
		want := ""
		switch {
		case c.queued:
			want = "e:" + account + "," + queuedPayload(id) // the event trigger's, first
		case c.hit:
			want = "e:" + account + ",j:" + id
		}
		if payloads != want {
			t.Errorf("%s: the start queues %q for the send, want %q", c.name, payloads, want)
		}
	}
}

// holdAccount locks the account's row in a transaction of its own on another connection to
// url until the test ends, and makes conn's statements give up on a lock after a second.
func holdAccount(t *testing.T, url string, conn *pgx.Conn, account string) {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.Exec(ctx, `SET lock_timeout = '1s'`); err != nil {
		t.Fatal(err)
	}
	tx, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, account); err != nil {
		t.Fatal(err)
	}
}

// TestMigrate_0028StartAnswersAsBefore: 0028's start (one UPDATE of the job when the account
// has no max_queued and is within its cap, 0025's start for anything else) answers every
// case as 0025's did, on the schema before 0028 and after it: the job's row it returns (status,
// checksum, cache base, upload), or the SQLSTATE it refuses with, and what it queues for the
// send, which is q: alone after 0028 where it was j: and q:. Fails with a condition of the fast
// path's WHERE missing (a mismatched size or checksum, a cache key, a job no longer created,
// expired or another account's would be queued) or its cap or max_queued check dropped.
func TestMigrate_0028StartAnswersAsBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to two new databases: the plain run covers it")
	}
	for _, version := range []int{27, 28} {
		t.Run(fmt.Sprintf("schema %d", version), func(t *testing.T) {
			url, conn, ctx := migratedConn(t, version)
			startFixture(t, conn)
			runStartCases(t, conn, "", startCases, startAs, func(id string) string {
				if version >= 28 {
					return "q:" + id
				}
				return "j:" + id + ",q:" + id
			})

			// While another transaction holds the account's row, a plain start waits for it
			// before 0028 (here: gives up after lock_timeout) and not after.
			if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at, expires_at)
				VALUES ('job_ls_held', 'acct_ls', 'created', 'png', 'jpeg', 10, now(), now() + interval '1 day')`); err != nil {
				t.Fatal(err)
			}
			holdAccount(t, url, conn, "acct_ls")
			want := "queued sha= base= etag=e"
			if version < 28 {
				want = "55P03" // lock_not_available
			}
			if got, _ := startAs(t, conn, "acct_ls", "job_ls_held", 10, ""); got != want {
				t.Errorf("a plain start while the account's row is held answers %q, want %q", got, want)
			}
		})
	}
}

// startFunc starts a job on conn as account, declaring size bytes and the checksum sha, in a
// transaction of its own, and returns its answer (the row's status, checksum, cache base and
// upload etag, or the SQLSTATE of its refusal) and the payloads it queued for the send.
type startFunc func(t *testing.T, conn *pgx.Conn, account, jobID string, size int64, sha string) (answer, payloads string)

// startAs calls convsvc_start_job in a transaction of its own, as pgstore's batch does but for
// the send: a startFunc whose payloads are what the call left in the session.
func startAs(t *testing.T, conn *pgx.Conn, account, jobID string, size int64, sha string) (answer, payloads string) {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.Exec(ctx, `SELECT set_config('convsvc.notify', '', false)`); err != nil {
		t.Fatal(err)
	}
	answer = startAnswer(t, conn, nil, `SELECT status, coalesce(input_sha256, ''), coalesce(cache_base, ''), coalesce(upload_etag, '')
		FROM convsvc_start_job($1, $2, $3, $3, 'e', NULL, $4, 1, true)`, account, jobID, size, sha)
	if err := conn.QueryRow(ctx, `SELECT coalesce(current_setting('convsvc.notify', true), '')`).Scan(&payloads); err != nil {
		t.Fatal(err)
	}
	return answer, payloads
}

// startGatedAs calls convsvc_start_job_gated (migration 0030) with the account's key from
// startFixture, as pgstore's one statement does: a startFunc whose payloads are the ones the
// call took (o_notify), after which the session holds none.
func startGatedAs(t *testing.T, conn *pgx.Conn, account, jobID string, size int64, sha string) (answer, payloads string) {
	t.Helper()
	answer = startAnswer(t, conn, &payloads, `SELECT status, coalesce(input_sha256, ''), coalesce(cache_base, ''), coalesce(upload_etag, ''),
			o_notify
		FROM convsvc_start_job_gated(sha256(('k' || $1)::bytea), 'key_' || $1, $1, false, 1000000, 86400000000,
			$1, $2, $3, $3, 'e', NULL, $4, 1, true)`, account, jobID, size, sha)
	var left string
	if err := conn.QueryRow(t.Context(), `SELECT coalesce(current_setting('convsvc.notify', true), '')`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != "" {
		t.Errorf("the gated start of %s left %q in the session, want nothing (its result carries them)", jobID, left)
	}
	return answer, payloads
}

// startAnswer runs a start's query in a transaction of its own and returns the row's status,
// checksum, cache base and upload etag, or the SQLSTATE of its refusal; with notify, the
// query's fifth column is scanned into it.
func startAnswer(t *testing.T, conn *pgx.Conn, notify *string, query string, args ...any) string {
	t.Helper()
	var answer string
	err := pgx.BeginFunc(t.Context(), conn, func(tx pgx.Tx) error {
		var status, jobSHA, base, etag string
		dest := []any{&status, &jobSHA, &base, &etag}
		if notify != nil {
			dest = append(dest, notify)
		}
		err := tx.QueryRow(t.Context(), query, args...).Scan(dest...)
		answer = fmt.Sprintf("%s sha=%s base=%s etag=%s", status, jobSHA, base, etag)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	} else if err != nil {
		t.Fatal(err)
	}
	return answer
}

// TestJobLookups_TakeTheJobByItsID: a start (0028's fast path, with 0033's cache lookup
// for a keyed job, and 0025's lookup for a job whose start withholds its checksum), a job's
// read and lockOwnJob find the job by its primary key even when jobs has never been analyzed
// and the plans were made while it was small: a store on one connection warms its plans on
// an account with 20 jobs, the account then gets 2,000 more, and 10 reads and 10 starts (5
// plain, 2 keyed, 3 by 0025's path) read fewer than 100 entries of the account's indexes
// (each read the account's history, 2,000 entries, when account_id and status were plain
// conditions).
func TestJobLookups_TakeTheJobByItsID(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	s := open(t, testpg.NewDatabase(t), pgstore.Options{MaxConns: 1})
	ctx := t.Context()
	exec := func(sql string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	addJobs := func(from, to int) {
		t.Helper()
		exec(fmt.Sprintf(`INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at, expires_at,
				input_sha256, cache_base)
			SELECT 'job_fp_' || lpad(i::text, 5, '0'), 'acct_fp', 'created', 'png', 'jpeg', 10, now(), now() + interval '1 day',
				CASE WHEN i %% 2 = 0 THEN 'abc' || i END, CASE WHEN i %% 2 = 0 THEN 'base' END
			FROM generate_series(%d, %d) AS i`, from, to))
	}
	exec(`ALTER TABLE jobs SET (autovacuum_enabled = false);
		INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at) VALUES ('acct_fp', 'fp', 100000, 2020, now())`)
	_, secret, err := s.CreateKey("acct_fp")
	if err != nil {
		t.Fatal(err)
	}
	addJobs(1, 20)
	// lookups reads the jobs numbered ids (as Job does, and with the key as a GET does) and
	// starts them, on the store's one connection: odd numbers have no cache key (the fast
	// path); even ones declared a checksum and have a cache base, and the start passes the
	// checksum to multiples of 4 (a key that finds no entry: the fast path, from migration
	// 0033) and withholds it from the others (0025's path).
	lookups := func(ids ...int) {
		t.Helper()
		for _, i := range ids {
			id := fmt.Sprintf("job_fp_%05d", i)
			if _, err := s.Job("acct_fp", id); err != nil {
				t.Fatal(err)
			}
			if _, _, jobErr, err := s.AuthenticateJob(secret, id); err != nil || jobErr != nil {
				t.Fatal(err, jobErr)
			}
			sha := ""
			if i%4 == 0 {
				sha = fmt.Sprintf("abc%d", i)
			}
			var status string
			if err := s.Pool().QueryRow(ctx, `SELECT status FROM convsvc_start_job('acct_fp', $1, 10, 10, 'e', NULL, $2, 1, true)`,
				id, sha).Scan(&status); err != nil || status != "queued" {
				t.Fatalf("start %s: %s %v", id, status, err)
			}
		}
	}
	read := func() int64 {
		t.Helper()
		exec(`SELECT pg_stat_force_next_flush()`)
		var n int64
		if err := s.Pool().QueryRow(ctx, `SELECT pg_stat_clear_snapshot(), (SELECT sum(idx_tup_read) FROM pg_stat_user_indexes
			WHERE indexrelname IN ('jobs_account_status', 'jobs_account'))`).Scan(new(any), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	lookups(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20) // plans made, and kept, on a small table
	addJobs(21, 2020)
	before := read()
	lookups(1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010)
	if n := read() - before; n >= 100 {
		t.Errorf("20 reads and 10 starts read %d entries of the account's indexes, want fewer than 100 (the job by its id)", n)
	}
}
