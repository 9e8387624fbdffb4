package pgstore

import (
	"context"

	"github.com/convsvc/convsvc/store"
)

// ScanJobBothWays reads the job id's row of jobCols twice: through scanJob's raw decoding
// (jobRow.ScanRow) and through pgx's own Scan (a column after the job's makes scanJob take
// it), so a test can hold the two to the same Job and the same error.
func (s *Store) ScanJobBothWays(id string) (raw, viaPgx store.Job, rawErr, pgxErr error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, rawErr = scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	var extra int32
	viaPgx, pgxErr = scanJob(extraRow{s.pool.QueryRow(ctx, `SELECT `+jobCols+`, 7 FROM jobs WHERE id = $1`, id), []any{&extra}})
	if pgxErr == nil && extra != 7 {
		panic("extra column not scanned")
	}
	return raw, viaPgx, rawErr, pgxErr
}

// ExecForTest runs one statement on the store's pool.
func (s *Store) ExecForTest(sql string, args ...any) error {
	_, err := s.pool.Exec(context.Background(), sql, args...)
	return err
}
