package store

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProgressHub keeps the progress (0 to 1) of running jobs in memory: the node running a job
// reports it (Report, throttled by the caller to about once a second and only on a visible
// change), Publish carries it to the other nodes (PostgreSQL NOTIFY; nil on one node), and
// Apply takes in what they publish. Nothing is written to the database: progress is lost
// with the node, and the job's next state change supersedes it. Entries of jobs that stopped
// reporting are dropped after ProgressTTL, so memory is bounded by the jobs running now.
type ProgressHub struct {
	// Publish, when set, sends a report to the other nodes (as FormatProgress encodes it).
	Publish func(payload string)

	mu      sync.Mutex
	jobs    map[string]progressEntry
	waiters ChangeWaiters
	now     func() time.Time
}

// ProgressTTL is how long a job's progress is kept after its last report.
const ProgressTTL = 2 * time.Minute

type progressEntry struct {
	account string
	attempt int
	value   float64
	at      time.Time
}

// NewProgressHub returns an empty hub.
func NewProgressHub() *ProgressHub {
	return &ProgressHub{jobs: map[string]progressEntry{}, now: time.Now}
}

// Report records the progress of attempt of a job of account on this node and publishes it.
func (h *ProgressHub) Report(account, jobID string, attempt int, value float64) {
	if h.set(account, jobID, attempt, value, false) && h.Publish != nil {
		h.Publish(FormatProgress(account, jobID, attempt, value))
	}
}

// Apply records a report another node published (FormatProgress); a malformed one is ignored,
// and so is one below the attempt's known progress: every node's listener receives its own
// reports back too, after it recorded newer ones (TestProgress_ConvertersCount/postgres saw
// a stream go from 0.99 back to 0.93), and an attempt's progress only grows.
func (h *ProgressHub) Apply(payload string) {
	account, jobID, attempt, value, err := ParseProgress(payload)
	if err == nil {
		h.set(account, jobID, attempt, value, true)
	}
}

// set stores a report and wakes the account's streams; false when it changed nothing. A
// remote report lower than the attempt's known value changes nothing.
func (h *ProgressHub) set(account, jobID string, attempt int, value float64, remote bool) bool {
	value = min(max(value, 0), 1)
	now := h.now()
	h.mu.Lock()
	old, ok := h.jobs[jobID]
	if ok && (old.attempt > attempt || old.attempt == attempt && (old.value == value || remote && value < old.value)) {
		// Unchanged, or an earlier attempt's report arriving late (another node's, over
		// another connection): it must not hide the running attempt's progress.
		h.mu.Unlock()
		return false
	}
	h.jobs[jobID] = progressEntry{account: account, attempt: attempt, value: value, at: now}
	if len(h.jobs)%64 == 0 {
		for id, e := range h.jobs {
			if now.Sub(e.at) > ProgressTTL {
				delete(h.jobs, id)
			}
		}
	}
	h.mu.Unlock()
	h.waiters.Signal(account)
	return true
}

// Forget drops a job's progress (it finished: an event stream sent its final event).
func (h *ProgressHub) Forget(jobID string) {
	h.mu.Lock()
	delete(h.jobs, jobID)
	h.mu.Unlock()
}

// Progress is the last progress of attempt of the job; false when none is known.
func (h *ProgressHub) Progress(jobID string, attempt int) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.jobs[jobID]
	if !ok || e.attempt != attempt || h.now().Sub(e.at) > ProgressTTL {
		return 0, false
	}
	return e.value, true
}

// WaitProgress returns a channel closed at the account's next progress change, and a
// function that releases it.
func (h *ProgressHub) WaitProgress(account string) (<-chan struct{}, func()) {
	return h.waiters.WaitChange(account)
}

// AccountProgress calls fn for each job of the account with a known progress.
func (h *ProgressHub) AccountProgress(account string, fn func(jobID string, attempt int, value float64)) {
	type item struct {
		id string
		e  progressEntry
	}
	var items []item
	now := h.now()
	h.mu.Lock()
	for id, e := range h.jobs {
		if e.account == account && now.Sub(e.at) <= ProgressTTL {
			items = append(items, item{id, e})
		}
	}
	h.mu.Unlock()
	for _, it := range items {
		fn(it.id, it.e.attempt, it.e.value)
	}
}

// Len is how many jobs' progress the hub holds.
func (h *ProgressHub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.jobs)
}

// FormatProgress encodes a report for another node: "account job attempt value".
func FormatProgress(account, jobID string, attempt int, value float64) string {
	return account + " " + jobID + " " + strconv.Itoa(attempt) + " " + strconv.FormatFloat(value, 'f', 4, 64)
}

// ParseProgress decodes what FormatProgress encodes.
func ParseProgress(payload string) (account, jobID string, attempt int, value float64, err error) {
	f := strings.Fields(payload)
	if len(f) != 4 {
		return "", "", 0, 0, fmt.Errorf("progress %q: want 4 fields", payload)
	}
	if attempt, err = strconv.Atoi(f[2]); err != nil {
		return "", "", 0, 0, fmt.Errorf("progress %q: attempt: %w", payload, err)
	}
	if value, err = strconv.ParseFloat(f[3], 64); err != nil || math.IsNaN(value) || value < 0 || value > 1 {
		return "", "", 0, 0, fmt.Errorf("progress %q: value not in 0..1", payload)
	}
	return f[0], f[1], attempt, value, nil
}
