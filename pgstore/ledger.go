package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// VerifyLedger checks, in one snapshot, the invariants DESIGN.md promises: every job's account
// exists, for every account reserved_cents equals its unfinished jobs and each month's spend
// equals the jobs that succeeded in it (plus those retention deleted); a succeeded job has its
// output, a queued one its start time, a running one its lease. It returns every violation
// found.
func (s *Store) VerifyLedger() error {
	ctx, cancel := s.ctx()
	defer cancel()
	var problems []error
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		problems, err = ledgerProblems(ctx, tx)
		return err
	})
	if err != nil {
		return wrap("verify ledger", err)
	}
	return errors.Join(problems...)
}

// ledgerProblems lists every violation of VerifyLedger's invariants that tx sees (Import
// checks its rows with it before committing).
func ledgerProblems(ctx context.Context, tx pgx.Tx) ([]error, error) {
	var problems []error
	err := func() error {
		check := func(sql string, describe func(rows pgx.Rows) (error, error)) error {
			rows, err := tx.Query(ctx, sql)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				problem, err := describe(rows)
				if err != nil {
					return err
				}
				problems = append(problems, problem)
			}
			return rows.Err()
		}
		err := check(`SELECT a.id, a.reserved_cents, count(j.id) FROM accounts a
				LEFT JOIN jobs j ON j.account_id = a.id AND j.status IN ('created', 'queued', 'running')
				GROUP BY a.id, a.reserved_cents HAVING a.reserved_cents <> count(j.id)`,
			func(rows pgx.Rows) (error, error) {
				var id string
				var reserved, unfinished int64
				err := rows.Scan(&id, &reserved, &unfinished)
				return fmt.Errorf("account %s reserves %d cents for %d unfinished jobs", id, reserved, unfinished), err
			})
		if err != nil {
			return err
		}
		// jobs has no foreign key to accounts since migration 0028: every path that inserts a
		// job holds its account's row, and this keeps checking it (an import's rows above all).
		err = check(`SELECT j.account_id, count(*) FROM jobs j
				WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = j.account_id) GROUP BY 1`,
			func(rows pgx.Rows) (error, error) {
				var id string
				var jobs int64
				err := rows.Scan(&id, &jobs)
				return fmt.Errorf("%d jobs belong to account %s, which does not exist", jobs, id), err
			})
		if err != nil {
			return err
		}
		err = check(`WITH want AS (
				SELECT account_id, month, sum(n) AS n FROM (
					SELECT account_id, to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month, sum(coalesce(hit_cents, 1)) AS n
						FROM jobs WHERE status = 'succeeded' GROUP BY 1, 2
					UNION ALL SELECT account_id, month, purged_successes FROM month_spend) x
				GROUP BY 1, 2),
			got AS (SELECT account_id, month, cents AS n FROM month_spend)
			SELECT coalesce(w.account_id, g.account_id), coalesce(w.month, g.month), coalesce(g.n, 0), coalesce(w.n, 0)
			FROM want w FULL JOIN got g ON w.account_id = g.account_id AND w.month = g.month
			WHERE coalesce(w.n, 0) <> coalesce(g.n, 0)`,
			func(rows pgx.Rows) (error, error) {
				var id, month string
				var spent, successes int64
				err := rows.Scan(&id, &month, &spent, &successes)
				return fmt.Errorf("account %s spent %d cents in %s for %d successes", id, spent, month, successes), err
			})
		if err != nil {
			return err
		}
		// The conversion cache's references: one per entry and per job pointing at an object.
		err = check(`WITH want AS (
				SELECT output_object AS object, count(*) AS n FROM jobs WHERE output_object IS NOT NULL GROUP BY 1)
			SELECT coalesce(w.object, r.object), coalesce(r.refs, 0), coalesce(w.n, 0)
			FROM want w FULL JOIN cache_refs r ON r.object = w.object
			WHERE coalesce(w.n, 0) <> coalesce(r.refs, 0)`,
			func(rows pgx.Rows) (error, error) {
				var object string
				var refs, want int64
				err := rows.Scan(&object, &refs, &want)
				return fmt.Errorf("output %s has %d references, %d jobs use it", object, refs, want), err
			})
		if err != nil {
			return err
		}
		err = check(`SELECT e.object FROM cache_entries e WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.object)
				AND NOT EXISTS (SELECT 1 FROM cache_refs r WHERE r.object = e.object)`,
			func(rows pgx.Rows) (error, error) {
				var object string
				err := rows.Scan(&object)
				return fmt.Errorf("cache entry of output %s outlived every job that uses it", object), err
			})
		if err != nil {
			return err
		}
		err = check(`SELECT t.entries, t.bytes, (SELECT count(*) FROM cache_entries), (SELECT coalesce(sum(output_bytes), 0) FROM cache_entries)
			FROM cache_totals t WHERE t.entries <> (SELECT count(*) FROM cache_entries)
				OR t.bytes <> (SELECT coalesce(sum(output_bytes), 0) FROM cache_entries)`,
			func(rows pgx.Rows) (error, error) {
				var entries, bytes, wantEntries, wantBytes int64
				err := rows.Scan(&entries, &bytes, &wantEntries, &wantBytes)
				return fmt.Errorf("cache totals %d entries, %d bytes; the entries hold %d, %d", entries, bytes, wantEntries, wantBytes), err
			})
		if err != nil {
			return err
		}
		return check(`SELECT id, status FROM jobs WHERE
				(status = 'succeeded' AND (output_bytes IS NULL OR output_sha256 IS NULL OR finished_at IS NULL))
				OR (status IN ('failed', 'cancelled') AND finished_at IS NULL)
				OR (status = 'queued' AND started_at IS NULL)
				OR (status = 'running' AND (lease_owner IS NULL OR lease_expires_at IS NULL OR attempt < 1))`,
			func(rows pgx.Rows) (error, error) {
				var id, status string
				err := rows.Scan(&id, &status)
				return fmt.Errorf("job %s is %s without the fields that state needs", id, status), err
			})
	}()
	return problems, err
}

// Counts reads job counts by status, the queue's depth and head, and ledger totals in one
// snapshot, for metrics.
func (s *Store) Counts() (store.Counts, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	c := store.Counts{Jobs: map[string]int{}}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		c.Jobs = map[string]int{}
		rows, err := tx.Query(ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var status string
			var n int
			if err := rows.Scan(&status, &n); err != nil {
				rows.Close()
				return err
			}
			c.Jobs[status] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var oldest *time.Time
		if err := tx.QueryRow(ctx, `SELECT count(*), min(started_at) FROM jobs WHERE status = 'queued'`).Scan(&c.QueueDepth, &oldest); err != nil {
			return err
		}
		if oldest != nil {
			c.OldestQueued = oldest.UTC()
		}
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM accounts), (SELECT coalesce(sum(reserved_cents), 0) FROM accounts),
				(SELECT coalesce(sum(cents), 0) FROM month_spend WHERE month = `+currentMonth+`),
				(SELECT coalesce(sum(cents), 0) FROM month_spend), pg_database_size(current_database())`).
			Scan(&c.Accounts, &c.ReservedCents, &c.SpentCentsMonth, &c.SpentCentsAllTime, &c.DBBytes)
	})
	if err != nil {
		return store.Counts{}, wrap("counts", err)
	}
	return c, nil
}
