package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// lockAccountClaims is the first key of the transaction-scoped advisory lock that claims of
// an account with max_running take (the second is hashtext of its id): the running count they
// read and the claim they make are one step across nodes. A node that dies holding it loses
// its connection, and the lock goes with the transaction.
const lockAccountClaims int32 = 0x63760004

// extraRow scans a row's columns after a job's (scanJob) into extra.
type extraRow struct {
	row   pgx.Row
	extra []any
}

func (r extraRow) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

// claimFair claims, in tx, the oldest queued job of the next account in turn
// (store.RoundRobin from the account this node served last) that is under its max_running:
// the Go side of migration 0021's convsvc_claim_walk, for the cases the claim function leaves
// to Go. Rows are still locked FOR UPDATE SKIP LOCKED, so claimers on every node pass each other's
// jobs and no job is claimed twice; the walk only chooses whose job to lock. A job past its
// expires_at fails on the way (appended to expired).
func (s *Store) claimFair(ctx context.Context, tx pgx.Tx, fin *finished, expired *[]string) (job store.Job, ok bool, err error) {
	s.claimTurn.Lock()
	last := s.claimTurn.last
	s.claimTurn.Unlock()
	served, err := store.RoundRobin(last, func(after string) (string, bool, error) {
		for {
			var maxRunning *int64
			j, err := scanJob(extraRow{tx.QueryRow(ctx, `SELECT `+jobCols+`, (SELECT max_running FROM accounts a WHERE a.id = jobs.account_id)
				FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" = (
					SELECT account_id COLLATE "C" FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > $1
					ORDER BY account_id COLLATE "C" LIMIT 1)
				ORDER BY account_id COLLATE "C", started_at, seq FOR UPDATE SKIP LOCKED LIMIT 1`, after), []any{&maxRunning}})
			if err == store.ErrNotFound {
				// Nothing queued after it, or every queued job of the next account is being
				// claimed: which one says the next account's id.
				var next string
				err = tx.QueryRow(ctx, `SELECT account_id FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > $1
					ORDER BY account_id COLLATE "C" LIMIT 1`, after).Scan(&next)
				if isNoRows(err) {
					return "", false, nil
				}
				return next, false, err
			} else if err != nil {
				return "", false, err
			}
			if store.CacheKeyOf(j) != "" {
				// A hit finishes the job in this transaction (ClaimJob's flight), moving the
				// account's cents: its row is locked before the status change and the cache's
				// locks (cache.go's lock order).
				if err := lockAccount(ctx, tx, j.AccountID); err != nil {
					return "", false, err
				}
			}
			if maxRunning != nil {
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockAccountClaims, j.AccountID); err != nil {
					return "", false, err
				}
				var running int64
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'running'`, j.AccountID).Scan(&running); err != nil {
					return "", false, err
				}
				if running >= *maxRunning {
					return j.AccountID, false, nil // its job stays queued (locked until this transaction ends)
				}
			}
			if expiredAt(ctx, tx, j) {
				if err := s.finish(ctx, tx, fin, &j, store.StatusFailed, store.CodeExpiredOrExhausted, expiredMessage, nil); err != nil {
					return "", false, err
				}
				*expired = append(*expired, j.ID)
				continue // the same account's next job
			}
			job, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET status = 'running', attempt = attempt + 1,
					lease_owner = $2, lease_expires_at = clock_timestamp() + $3 * interval '1 microsecond'
				WHERE id = $1 RETURNING `+jobCols, j.ID, s.opts.NodeID, micros(s.opts.Lease)))
			if err != nil {
				return "", false, err
			}
			ok = true
			return j.AccountID, true, notify(ctx, tx, "j:"+job.ID)
		}
	})
	if ok {
		s.claimTurn.Lock()
		s.claimTurn.last = served
		s.claimTurn.Unlock()
	}
	return job, ok, err
}

// queueRoomCond is startJob's condition that the account has room in its queue (fewer than
// max_queued jobs queued, or no limit): the update that queues the job matches no row
// otherwise. It runs under the account's row lock (lockAccountSpend), so concurrent starts
// count each other.
const queueRoomCond = `(SELECT a.max_queued IS NULL OR (SELECT count(*) FROM jobs q WHERE q.account_id = a.id AND q.status = 'queued') < a.max_queued
	FROM accounts a WHERE a.id = jobs.account_id)`

// checkQueueRoom refuses, with ErrQueueFull, adding n queued jobs to an account that would
// then hold more than its max_queued: creates that queue at once (a source_url job, a batch's
// source_url items) are held to the limit as a start is. It runs under the account's row lock.
func checkQueueRoom(ctx context.Context, tx pgx.Tx, accountID string, n int) error {
	var room bool
	if err := tx.QueryRow(ctx, `SELECT max_queued IS NULL OR (SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'queued') + $2 <= max_queued
		FROM accounts WHERE id = $1`, accountID, n).Scan(&room); err != nil {
		return err
	}
	if !room {
		return queueFull(ctx, tx, accountID)
	}
	return nil
}

// queueFull is the ErrQueueFull of a start that queueRoomCond refused.
func queueFull(ctx context.Context, tx pgx.Tx, accountID string) error {
	var n, limit int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'queued'), coalesce(max_queued, 0)
		FROM accounts WHERE id = $1`, accountID).Scan(&n, &limit); err != nil {
		return err
	}
	return fmt.Errorf("%w: %d jobs queued, max_queued is %d", store.ErrQueueFull, n, limit)
}

// UpdateAccountLimits changes the account's max_running and max_queued as l says.
func (s *Store) UpdateAccountLimits(id string, l store.AccountLimits) (store.Account, error) {
	if err := store.ValidateAccountLimits(l); err != nil {
		return store.Account{}, err
	}
	return s.updateAccount("update account limits", id, func(acct *store.Account) (string, []any, error) {
		l.Apply(acct)
		return `UPDATE accounts SET max_running = $2, max_queued = $3 WHERE id = $1`, []any{acct.MaxRunning, acct.MaxQueued}, nil
	})
}
