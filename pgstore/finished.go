package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// finished collects the jobs one transaction finished; jobTx reports them once it committed.
type finished struct{ jobs []store.Job }

// add records a job that reached its final state in the transaction.
func (f *finished) add(job store.Job) { f.jobs = append(f.jobs, job) }

// jobTx is tx for transactions that may finish jobs: fn records them in fin (finish does),
// and after the commit each goes to Options.OnFinished (store.FinishHook). A transaction that
// fails, or a run that was retried, reports nothing; a commit whose outcome is unknown (the
// connection dropped during COMMIT) reports nothing either, and the service's sweep covers it.
func (s *Store) jobTx(ctx context.Context, fn func(tx pgx.Tx, fin *finished) error) error {
	var fin finished
	err := s.tx(ctx, func(tx pgx.Tx) error {
		fin.jobs = fin.jobs[:0]
		return fn(tx, &fin)
	})
	if err == nil {
		s.reportFinished(fin.jobs)
	}
	return err
}

// reportFinished hands committed finished jobs to the hook.
func (s *Store) reportFinished(jobs []store.Job) {
	if s.opts.OnFinished == nil {
		return
	}
	for _, job := range jobs {
		s.opts.OnFinished(job)
	}
}
