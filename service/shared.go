package service

import (
	"time"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// Running jobs on a store shared by several nodes (PostgreSQL): the worker running a job renews
// its lease, a lost lease stops the conversion, every node reaps lapsed leases, and the
// database's notifications wake this node's workers and cancel its conversions.

// defaultLease is how long a claim lasts without a heartbeat when Config.Lease is unset
// (pgstore's default).
const defaultLease = 30 * time.Second

// shared reports whether the queue's store is shared by several nodes (leases).
func (q *jobQueue) shared() bool {
	_, ok := q.store.(leasedStore)
	return ok
}

// leaseOf is the store's lease, or 0 when the store has none.
func leaseOf(st JobStore) time.Duration {
	ls, ok := st.(leasedStore)
	if !ok {
		return 0
	}
	if d := ls.Lease(); d > 0 {
		return d
	}
	return defaultLease
}

// startHeartbeat renews the lease of a claimed attempt every third of the lease until
// stopHeartbeat; a heartbeat that finds the job no longer this attempt's (cancelled, expired,
// or reaped and claimed again elsewhere) stops the conversion. A failed heartbeat is retried
// at the next tick: the lease leaves two more before it lapses.
func (q *jobQueue) startHeartbeat(jobID string, attempt int) {
	ls, ok := q.store.(leasedStore)
	if !ok {
		return
	}
	every := leaseOf(q.store) / 3
	done := make(chan struct{})
	q.mu.Lock()
	q.beats[claimKey{jobID, attempt}] = func() { close(done) }
	q.mu.Unlock()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ok, err := ls.Heartbeat(jobID, attempt)
			switch {
			case err != nil:
				q.log.Warn("lease heartbeat failed; retrying", "job_id", jobID, "attempt", attempt, "error", err)
			case !ok:
				q.log.Warn("lease lost; stopping the conversion", "job_id", jobID, "attempt", attempt)
				if q.cancel != nil {
					q.cancel(jobID)
				}
				return
			}
		}
	}()
}

// stopHeartbeat ends the heartbeat of an attempt, if it has one.
func (q *jobQueue) stopHeartbeat(jobID string, attempt int) {
	key := claimKey{jobID, attempt}
	q.mu.Lock()
	stop := q.beats[key]
	delete(q.beats, key)
	q.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// checkLeases heartbeats every running attempt now (after the listener reconnected, when
// cancellations may have been missed), stopping those that are no longer this node's.
func (q *jobQueue) checkLeases() {
	ls, ok := q.store.(leasedStore)
	if !ok {
		return
	}
	q.mu.Lock()
	keys := make([]claimKey, 0, len(q.beats))
	for k := range q.beats {
		keys = append(keys, k)
	}
	q.mu.Unlock()
	for _, k := range keys {
		if ok, err := ls.Heartbeat(k.jobID, k.attempt); err == nil && !ok && q.cancel != nil {
			q.cancel(k.jobID)
		}
	}
}

// startSharedStore starts, on a leased store, the reaper loop and the subscription that turns
// the database's notifications into wake-ups and cancellations. The pool's poll interval stays
// the fallback should notifications be lost.
func (m *Main) startSharedStore(q *jobQueue) {
	ls, ok := m.store.(leasedStore)
	if !ok {
		return
	}
	if pg, ok := m.store.(*pgstore.Store); ok {
		unsubscribe := pg.Subscribe(func(ev pgstore.Event) {
			switch ev.Kind {
			case pgstore.EventJobQueued:
				m.pool.Notify()
			case pgstore.EventJobCancelled:
				m.pool.Cancel(ev.JobID)
			case pgstore.EventResync:
				m.pool.Notify()
				go q.checkLeases() // callbacks must not block
			}
		})
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			<-m.stop
			unsubscribe()
		}()
	}
	m.wg.Add(1)
	go m.reapLoop(ls, leaseOf(m.store)/2)
}

// reapLoop requeues (or fails, at --max-attempts) the running jobs whose lease lapsed, on
// whichever node they ran; it replaces start-up recovery on a shared store.
func (m *Main) reapLoop(ls leasedStore, every time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		requeued, failed, err := ls.ReapExpiredLeases(m.cfg.MaxAttempts)
		if err != nil {
			m.log.Warn("reap expired leases", "error", err)
		} else if len(requeued)+len(failed) > 0 {
			m.log.Warn("requeued jobs whose node stopped renewing their lease", "requeued", len(requeued), "failed", len(failed))
			m.logRequeued(requeued, failed, "lease_expired")
			m.pool.Notify()
		}
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

// logRequeued logs the transitions of jobs taken back from a stopped worker.
func (m *Main) logRequeued(requeued, failed []string, reason string) {
	for _, id := range requeued {
		m.log.Info("job transition", "job_id", id, "status", store.StatusQueued, "reason", reason)
	}
	for _, id := range failed {
		m.log.Info("job transition", "job_id", id, "status", store.StatusFailed, "error_code", store.CodeExpiredOrExhausted, "reason", "max_attempts")
	}
}
