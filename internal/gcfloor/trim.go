package gcfloor

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTrimDelay is how long the workers stay idle before serve returns the memory their
// conversions left behind.
const DefaultTrimDelay = 2 * time.Second

// Trimmer gives the memory a burst of conversions left behind back to the system once the
// workers have been idle for a while. Without it a warm server keeps the resident set of its
// largest recent conversions (245 MiB after a round of 12 MP jobs, against 30 MiB idle): the
// heap goal stays where the last collection during the jobs put it, the sync.Pools keep their
// buffers until two collections pass, and the runtime's scavenger returns free pages to the
// system only slowly. A trim runs two collections (the first moves the pools' buffers to their
// victim caches, the second frees them) and then debug.FreeOSMemory. The heap floor still
// applies afterwards: the next collection's goal is tuned from the live heap as usual.
type Trimmer struct {
	delay time.Duration
	busy  func() bool
	trim  func()

	mu    sync.Mutex
	timer *time.Timer
	done  bool
	trims atomic.Int64
}

// NewTrimmer returns a Trimmer that trims delay after the last JobDone unless busy reports a
// conversion running then. A delay of 0 or less never trims.
func NewTrimmer(delay time.Duration, busy func() bool) *Trimmer {
	return &Trimmer{delay: delay, busy: busy, trim: trimNow}
}

// trimNow returns what the heap does not hold live to the system.
func trimNow() {
	runtime.GC()
	debug.FreeOSMemory()
}

// JobDone tells the Trimmer a conversion finished: it trims after the delay unless another
// finishes meanwhile (which moves the trim later) or one is running then (whose end will).
func (t *Trimmer) JobDone() {
	if t == nil || t.delay <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.delay, t.fire)
		return
	}
	t.timer.Reset(t.delay)
}

func (t *Trimmer) fire() {
	t.mu.Lock()
	stopped := t.done
	t.mu.Unlock()
	if stopped || t.busy() {
		return
	}
	// Counted before trimming, so whoever the trim wakes sees it counted.
	t.trims.Add(1)
	t.trim()
}

// Trims is how many times the Trimmer has trimmed.
func (t *Trimmer) Trims() int64 { return t.trims.Load() }

// Stop cancels a pending trim; JobDone does nothing afterwards.
func (t *Trimmer) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
	}
}
