package store

import "sync"

// ChangeWaiters parks callers until a job changes: WaitChange hands out a channel, Signal
// closes those of the jobs a commit changed. Both stores keep one (pgstore wakes it on its
// own commits and on other nodes' notifications). The zero value is ready to use.
type ChangeWaiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

// WaitChange returns a channel closed at the job's next Signal, and a function that releases
// it when the caller stops waiting.
func (w *ChangeWaiters) WaitChange(jobID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]map[chan struct{}]struct{}{}
	}
	set := w.m[jobID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.m[jobID] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set, ok := w.m[jobID]; ok {
			delete(set, ch)
			if len(set) == 0 {
				delete(w.m, jobID)
			}
		}
	}
}

// Waiters is how many channels are open now (long-polls parked on a job).
func (w *ChangeWaiters) Waiters() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, set := range w.m {
		n += len(set)
	}
	return n
}

// Signal wakes everyone waiting on the given jobs; call it only after the change committed.
func (w *ChangeWaiters) Signal(jobIDs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range jobIDs {
		for ch := range w.m[id] {
			close(ch)
		}
		delete(w.m, id)
	}
}

// SignalAll wakes every waiter, for when changes may have been missed.
func (w *ChangeWaiters) SignalAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, set := range w.m {
		for ch := range set {
			close(ch)
		}
		delete(w.m, id)
	}
}
