package service

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/store"
)

// cacheCounts counts the conversion cache's outcomes among the jobs this node finished
// (store.FinishHook): a hit is a job answered from the cache (at create, start or claim), a
// miss one that took part in the cache and was converted.
type cacheCounts struct {
	hits, misses, hitBytes atomic.Uint64
}

// finished counts a job that reached its final state.
func (c *cacheCounts) finished(job store.Job) {
	if job.Status != store.StatusSucceeded || job.Output == nil {
		return
	}
	switch {
	case job.Output.Cached:
		c.hits.Add(1)
		c.hitBytes.Add(uint64(job.Output.Bytes))
	case job.CacheBase != "":
		c.misses.Add(1)
	}
}

// cacheConfig is the API's view of the cache flags.
func (m *Main) cacheConfig() httpapi.CacheConfig {
	return httpapi.CacheConfig{Disabled: m.cfg.CacheMaxBytes < 0, Scope: m.cfg.CacheScope}
}

// countCache exports the cache's counters and what it holds.
func (m *metrics) countCache(st JobStore, c *cacheCounts) {
	stat := func(f func(store.CacheStats) int64) func() float64 {
		return func() float64 {
			s, err := st.CacheStats()
			if err != nil {
				return 0
			}
			return float64(f(s))
		}
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_cache_hits_total",
			Help: "Jobs answered from the conversion cache (at create, start or claim) instead of converted, on this node.",
		}, func() float64 { return float64(c.hits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_cache_misses_total",
			Help: "Jobs taking part in the conversion cache that were converted because nothing was cached for them, on this node.",
		}, func() float64 { return float64(c.misses.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_cache_hit_bytes_total",
			Help: "Bytes of the outputs served from the conversion cache instead of converted, on this node.",
		}, func() float64 { return float64(c.hitBytes.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_cache_entries",
			Help: "Outputs the conversion cache holds (every node's).",
		}, stat(func(s store.CacheStats) int64 { return s.Entries })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_cache_bytes",
			Help: "Bytes of the outputs the conversion cache holds (every node's), bounded by --cache-max-bytes.",
		}, stat(func(s store.CacheStats) int64 { return s.Bytes })),
	)
}

// deleteJobFiles deletes the files of a job retention deleted: all of them, or only its input
// while another job or the cache still uses its output (which goes with the last reference,
// sweepDeadOutputs).
func (m *Main) deleteJobFiles(id string) error {
	held, err := m.store.OutputHeld(id)
	if err != nil {
		return err
	}
	if held {
		return m.blobs.DeleteInput(id)
	}
	return m.blobs.Delete(id)
}

// sweepDeadOutputs deletes the outputs whose job is gone and whose last reference was
// dropped (an evicted cache entry, the last job that used it expired), then forgets them.
func (m *Main) sweepDeadOutputs() {
	ids, err := m.store.DeadOutputs()
	if err != nil {
		m.log.Warn("list dead outputs", "error", err)
		return
	}
	var done []string
	for _, id := range ids {
		if err := m.blobs.Delete(id); err != nil {
			m.log.Warn("delete dead output", "object", id, "error", err)
			continue
		}
		done = append(done, id)
	}
	if len(done) == 0 {
		return
	}
	if err := m.store.ForgetDeadOutputs(done); err != nil {
		m.log.Warn("forget dead outputs", "error", err)
	}
}

// The conversion cache's scopes (--cache-scope), as the API names them.
const (
	CacheScopeAccount = httpapi.CacheScopeAccount
	CacheScopeGlobal  = httpapi.CacheScopeGlobal
)

// twinPoll is how often a job waiting for its twin's conversion asks the store again when no
// change of the twin was signalled (another node's, with notifications lost).
const twinPoll = 2 * time.Second

// awaitTwin waits for the job converting the same input as job (job.WaitFor) to finish, then
// asks the store to answer job from the cache (FinishFromCache). answered is true when the job
// succeeded from the cache, or is no longer this attempt's (cancelled, expired): either way
// the worker claims the next job. False means the worker converts job itself (the twin
// failed, or ctx ended: shutdown handles the job as any running one).
func (q *jobQueue) awaitTwin(ctx context.Context, job *store.Job) (answered bool, err error) {
	for job.WaitFor != "" {
		changed, stop := q.store.WaitChange(job.WaitFor)
		t := time.NewTimer(twinPoll)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		stop()
		if ctx.Err() != nil {
			return false, nil
		}
		next, hit, err := q.store.FinishFromCache(job.ID, job.Attempt)
		switch {
		case errors.Is(err, store.ErrInvalidState) || errors.Is(err, store.ErrNotFound):
			q.forgetClaim(*job)
			return true, nil
		case err != nil:
			return false, err
		case hit:
			q.forgetClaim(*job)
			logTransition(q.log, next, slog.String("reason", "cache_hit"))
			return true, nil
		}
		job.WaitFor = next.WaitFor
		job.InputSHA256, job.CacheBase = next.InputSHA256, next.CacheBase
	}
	return false, nil
}

// forgetClaim drops what the queue keeps of a claimed attempt that will not be converted.
func (q *jobQueue) forgetClaim(job store.Job) {
	q.stopHeartbeat(job.ID, job.Attempt)
	q.dropClaim(claimKey{job.ID, job.Attempt})
}

// dropClaim forgets an attempt's claim time, faults and record, returning when it was claimed.
func (q *jobQueue) dropClaim(key claimKey) (claimed time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	claimed, ok = q.claims[key]
	delete(q.claims, key)
	delete(q.inputFaults, key)
	delete(q.outputFaults, key)
	if j, found := q.running[key.jobID]; found && j.Attempt == key.attempt {
		delete(q.running, key.jobID)
	}
	return claimed, ok
}
