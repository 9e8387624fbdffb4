package store

import bolt "go.etcd.io/bbolt"

// FinishHook is told about every job that reached a final state (succeeded, failed,
// cancelled; a size mismatch, an expiry or used-up attempts are failures or cancels): once per
// job, by the store that committed the transition, after the commit and before the method
// that made it returns, in that method's goroutine. Whatever finishes a job (the API's
// cancel or start, a worker's outcome or requeue, crash recovery, a lease reaper, claim-time
// expiry, the retention sweep) goes through it, so the service removes a finished job's input
// in one place. A crash between the commit and the hook loses the call: whoever acts on it
// must also sweep for what it missed. The hook may read the store (it sees the commit) but
// must not block for long, since the caller waits for it.
type FinishHook func(Job)

// finished collects the jobs one write function finished; updateJobs reports them once the
// transaction committed.
type finished struct{ jobs []Job }

// add records a job that reached its final state in the transaction.
func (f *finished) add(job Job) { f.jobs = append(f.jobs, job) }

// updateJobs is update for writes that may finish jobs: fn records them in fin (finish does),
// and after the commit each goes to Options.OnFinished. A write that fails, or a run of fn
// that its group rolled back, reports nothing.
func (s *Store) updateJobs(fn func(tx *bolt.Tx, fin *finished) error) error {
	var fin finished
	err := s.update(func(tx *bolt.Tx) error {
		fin.jobs = fin.jobs[:0]
		return fn(tx, &fin)
	})
	if err == nil {
		s.reportFinished(fin.jobs)
	}
	return err
}

// reportFinished hands committed finished jobs to the hook.
func (s *Store) reportFinished(jobs []Job) {
	if s.opts.OnFinished == nil {
		return
	}
	for _, job := range jobs {
		s.opts.OnFinished(job)
	}
}
