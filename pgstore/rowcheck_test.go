package pgstore_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestMigrate_0027OneRowCheck: 0027's jobs_row_check (one call of convsvc_job_row_ok) accepts
// and refuses exactly the rows 0001's three CHECK constraints did. Every status, and one that
// is none, with and without a lease, an output size and a finish time (56 rows), is inserted,
// and written by an UPDATE over a created job, on the schema before 0027 and after it: a row
// is stored when its status is one of the six, it has a lease exactly when running, and a
// succeeded one has its output size and finish time; any other is refused with SQLSTATE 23514
// on jobs (naming jobs_row_check after 0027). After 0027 that is jobs' one CHECK constraint.
// Fails with a clause of the function missing or changed, and on a schema without 0027.
func TestMigrate_0027OneRowCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to two new databases: the plain run covers it")
	}
	for _, version := range []int{25, 27} {
		t.Run(fmt.Sprintf("schema %d", version), func(t *testing.T) {
			_, conn, ctx := migratedConn(t, version)
			var checks []string
			if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(conname::text ORDER BY conname), '{}') FROM pg_constraint
				WHERE conrelid = 'jobs'::regclass AND contype = 'c'`).Scan(&checks); err != nil {
				t.Fatal(err)
			}
			want := []string{"jobs_check", "jobs_check1", "jobs_status_check"}
			if version >= 27 {
				want = []string{"jobs_row_check"}
			}
			if !slices.Equal(checks, want) {
				t.Fatalf("jobs' CHECK constraints: %v, want %v", checks, want)
			}
			if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at) VALUES ('acct_rc', 'rc', 1000, now())`); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, status := range []string{"created", "queued", "running", "succeeded", "failed", "cancelled", "paused"} {
				for _, lease := range []bool{false, true} {
					for _, output := range []bool{false, true} {
						for _, finished := range []bool{false, true} {
							valid := status != "paused" && (status == "running") == lease && (status != "succeeded" || (output && finished))
							row := fmt.Sprintf("%s lease=%v output_bytes=%v finished_at=%v", status, lease, output, finished)
							n++
							id := fmt.Sprintf("job_rc_%02d", n)
							_, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
									created_at, expires_at, lease_expires_at, output_bytes, finished_at)
								VALUES ($1, 'acct_rc', $2, 'md', 'pdf', 10, now(), now() + interval '1 day',
									CASE WHEN $3 THEN now() + interval '1 minute' END, CASE WHEN $4 THEN 7 END, CASE WHEN $5 THEN now() END)`,
								id, status, lease, output, finished)
							checkRowCheck(t, version, "insert of "+row, valid, err)

							if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
									created_at, expires_at)
								VALUES ($1, 'acct_rc', 'created', 'md', 'pdf', 10, now(), now() + interval '1 day')`, id+"_u"); err != nil {
								t.Fatal(err)
							}
							_, err = conn.Exec(ctx, `UPDATE jobs SET status = $2, lease_expires_at = CASE WHEN $3 THEN now() + interval '1 minute' END,
									output_bytes = CASE WHEN $4 THEN 7 END, finished_at = CASE WHEN $5 THEN now() END
								WHERE id = $1`, id+"_u", status, lease, output, finished)
							checkRowCheck(t, version, "update to "+row, valid, err)
						}
					}
				}
			}
		})
	}
}

// checkRowCheck fails t unless err is nil for a valid row, and jobs' check violation for
// another.
func checkRowCheck(t *testing.T, version int, what string, valid bool, err error) {
	t.Helper()
	checkViolation(t, "jobs", "jobs_row_check", version >= 27, what, valid, err)
}

// TestMigrate_0029OneAccountCheck: 0029's accounts_row_check (one call of
// convsvc_account_row_ok) accepts and refuses exactly the rows 0001's and 0012's four CHECK
// constraints did: a spend cap and reservations of at least 0, max_running and max_queued
// absent or at least 1. Each value on either side of its bound (and NULL for the optional
// two) is inserted, and written by an UPDATE, on the schema before 0029 and after it; a refused
// row is SQLSTATE 23514 on accounts (naming accounts_row_check after 0029), which then has no
// other CHECK constraint. Fails with a clause of the function missing or changed.
func TestMigrate_0029OneAccountCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to two new databases: the plain run covers it")
	}
	for _, version := range []int{28, 29} {
		t.Run(fmt.Sprintf("schema %d", version), func(t *testing.T) {
			_, conn, ctx := migratedConn(t, version)
			var checks []string
			if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(conname::text ORDER BY conname), '{}') FROM pg_constraint
				WHERE conrelid = 'accounts'::regclass AND contype = 'c'`).Scan(&checks); err != nil {
				t.Fatal(err)
			}
			want := []string{"accounts_max_queued_check", "accounts_max_running_check", "accounts_reserved_cents_check", "accounts_spend_cap_cents_check"}
			if version >= 29 {
				want = []string{"accounts_row_check"}
			}
			if !slices.Equal(checks, want) {
				t.Fatalf("accounts' CHECK constraints: %v, want %v", checks, want)
			}
			type row struct {
				capCents, reserved int64
				maxRunning         *int64
				maxQueued          *int64
			}
			n := func(v int64) *int64 { return &v }
			rows := []row{{0, 0, nil, nil}, {-1, 0, nil, nil}, {5, -1, nil, nil}, {5, 5, n(1), n(1)}, {5, 5, n(0), nil}, {5, 5, nil, n(0)},
				{5, 5, n(-3), n(2)}, {-1, -1, n(0), n(0)}}
			for i, r := range rows {
				valid := r.capCents >= 0 && r.reserved >= 0 && (r.maxRunning == nil || *r.maxRunning >= 1) && (r.maxQueued == nil || *r.maxQueued >= 1)
				what := fmt.Sprintf("cap %d reserved %d max_running %v max_queued %v", r.capCents, r.reserved, r.maxRunning, r.maxQueued)
				_, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, max_running, max_queued, created_at)
					VALUES ($1, 'n', $2, $3, $4, $5, now())`, fmt.Sprintf("acct_ac_%d", i), r.capCents, r.reserved, r.maxRunning, r.maxQueued)
				checkAccountCheck(t, version, "insert of "+what, valid, err)
				if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at) VALUES ($1, 'n', 0, now())`,
					fmt.Sprintf("acct_ac_%d_u", i)); err != nil {
					t.Fatal(err)
				}
				_, err = conn.Exec(ctx, `UPDATE accounts SET spend_cap_cents = $2, reserved_cents = $3, max_running = $4, max_queued = $5 WHERE id = $1`,
					fmt.Sprintf("acct_ac_%d_u", i), r.capCents, r.reserved, r.maxRunning, r.maxQueued)
				checkAccountCheck(t, version, "update to "+what, valid, err)
			}
		})
	}
}

// checkAccountCheck fails t unless err is nil for a valid row, and accounts' check violation
// for another.
func checkAccountCheck(t *testing.T, version int, what string, valid bool, err error) {
	t.Helper()
	checkViolation(t, "accounts", "accounts_row_check", version >= 29, what, valid, err)
}

// checkViolation fails t unless err is nil for a valid row, and for another SQLSTATE 23514 on
// table, naming constraint when named.
func checkViolation(t *testing.T, table, constraint string, named bool, what string, valid bool, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	switch {
	case valid && err != nil:
		t.Errorf("%s: %v, want it stored", what, err)
	case !valid && err == nil:
		t.Errorf("%s stored, want SQLSTATE 23514", what)
	case !valid && (!errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.TableName != table):
		t.Errorf("%s: %v, want SQLSTATE 23514 on %s", what, err, table)
	case !valid && named && pgErr.ConstraintName != constraint:
		t.Errorf("%s: refused by %q, want %s", what, pgErr.ConstraintName, constraint)
	}
}
