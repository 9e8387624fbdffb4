package service

import (
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// newProgressHub makes the hub of running jobs' progress: on a store shared by several nodes
// (PostgreSQL) every report goes to every node by NOTIFY, and each node's hub takes in all
// of them, so a stream on any node shows the progress of a job running on any other.
func (m *Main) newProgressHub() *store.ProgressHub {
	m.progress = store.NewProgressHub()
	if pg, ok := m.store.(*pgstore.Store); ok {
		// Reports go out from one goroutine, so a slow database never holds up a conversion;
		// under pressure the newest wait in a small queue and the rest are dropped (the next
		// report, or the job's next state change, supersedes them).
		queue := make(chan string, 64)
		m.progress.Publish = func(payload string) {
			select {
			case queue <- payload:
			default:
			}
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				select {
				case <-m.stop:
					return
				case p := <-queue:
					if err := pg.PublishProgress(p); err != nil {
						m.log.Debug("progress not published", "error", err)
					}
				}
			}
		}()
		pg.OnProgress(m.progress.Apply)
	}
	return m.progress
}

// reportProgress is the pool's Progress: the task's progress, under its job's account.
func (q *jobQueue) reportProgress(hub *store.ProgressHub) func(convert.Task, float64) {
	return func(t convert.Task, v float64) {
		q.mu.Lock()
		job, ok := q.running[t.JobID]
		q.mu.Unlock()
		if ok && job.Attempt == t.Attempt {
			hub.Report(job.AccountID, t.JobID, t.Attempt, v)
		}
	}
}
