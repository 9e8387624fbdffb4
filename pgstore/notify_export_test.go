package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// CancelQueued cancels a created job the way a Go transaction of this Store changes a status
// (Store.tx, with notify's payload "c:" and the job id) and returns what the transaction's
// session holds queued for after its commit (convsvc.notify) as read inside it, before the
// commit: the notifications it deferred instead of sending at its commit.
func (s *Store) CancelQueued(ctx context.Context, jobID string) (queued string, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1`, jobID); err != nil {
			return err
		}
		if err := notify(ctx, tx, "c:"+jobID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT coalesce(current_setting('convsvc.notify', true), '')`).Scan(&queued)
	})
	return queued, err
}
