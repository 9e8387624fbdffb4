package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// recordJobEvent appends the event of job reaching its current status to its account's log
// (store.Event), drops the account's events beyond store.EventLogSize and notifies every
// node's streams at commit, in one statement of the change's transaction. The per-account
// counter row (event_seqs) is held until commit, so an account's events commit in seq order.
// A retried transaction writes the event once (its id is unique).
func recordJobEvent(ctx context.Context, tx pgx.Tx, job store.Job) error {
	ev, err := store.NewJobEvent(job, job.CreatedAt)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `WITH s AS (
			INSERT INTO event_seqs (account_id, seq) VALUES ($1, 1)
			ON CONFLICT (account_id) DO UPDATE SET seq = event_seqs.seq + 1 RETURNING seq),
		e AS (
			INSERT INTO events (account_id, seq, id, type, job_id, created_at, job)
			SELECT $1, s.seq, $2, $3, $4, now(), $5 FROM s
			ON CONFLICT (id) DO NOTHING RETURNING seq),
		d AS (
			DELETE FROM events WHERE account_id = $1 AND seq <= (SELECT seq FROM e) - $6)
		SELECT pg_notify('`+notifyChannel+`', 'e:' || $1) FROM e`,
		job.AccountID, ev.ID, ev.Type, job.ID, []byte(ev.Job), store.EventLogSize)
	if err != nil {
		return fmt.Errorf("record event %s: %w", ev.ID, err)
	}
	return nil
}

func scanEvents(rows pgx.Rows) ([]store.Event, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Event, error) {
		var ev store.Event
		var job []byte
		err := row.Scan(&ev.Seq, &ev.ID, &ev.Type, &ev.AccountID, &ev.JobID, &ev.CreatedAt, &job)
		ev.Job, ev.CreatedAt = job, ev.CreatedAt.UTC()
		return ev, err
	})
}

// EventsAfter returns up to limit of the account's events after seq, oldest first; jobID,
// when set, keeps only that job's.
func (s *Store) EventsAfter(accountID string, after int64, jobID string, limit int) ([]store.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT seq, id, type, account_id, job_id, created_at, job FROM events
		WHERE account_id = $1 AND seq > $2 AND ($3 = '' OR job_id = $3) ORDER BY seq LIMIT $4`, accountID, after, jobID, limit)
	if err != nil {
		return nil, wrap("events", err)
	}
	evs, err := scanEvents(rows)
	return evs, wrap("events", err)
}

// EventSeq finds an event of the account's log by id: its seq, and false when the log does
// not hold it (never recorded, another account's, or older than the last store.EventLogSize).
func (s *Store) EventSeq(accountID, eventID string) (int64, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM events WHERE id = $1 AND account_id = $2`, eventID, accountID).Scan(&seq)
	if isNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("event", err)
	}
	return seq, true, nil
}

// LastEventSeq is the seq of the account's newest event (0 when it has none).
func (s *Store) LastEventSeq(accountID string) (int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM event_seqs WHERE account_id = $1), 0)`, accountID).Scan(&seq)
	return seq, wrap("last event", err)
}

// WaitEvents returns a channel closed when the account's log next gets an event on any node
// (or when the listener reconnects), and a function that releases it.
func (s *Store) WaitEvents(accountID string) (<-chan struct{}, func()) {
	return s.events.WaitChange(accountID)
}
