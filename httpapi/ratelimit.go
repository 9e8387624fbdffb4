package httpapi

import (
	"sync"
	"time"
)

// slidingLimiter accepts at most limit events per key in any rolling window. It keeps, per key,
// the times of the accepted events still inside the window (at most limit of them), so the
// promise holds however requests are spaced, which a token bucket cannot guarantee.
type slidingLimiter struct {
	limit   int
	window  time.Duration
	maxKeys int

	mu   sync.Mutex
	logs map[string]*eventLog
}

// eventLog is a ring of accepted event times, oldest at head.
type eventLog struct {
	times []time.Time
	head  int
	n     int
}

// rateDecision tells a caller whether it may proceed and what to put in the RateLimit headers.
type rateDecision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Duration // until the oldest counted event leaves the window
}

func newSlidingLimiter(limit int, window time.Duration, maxKeys int) *slidingLimiter {
	return &slidingLimiter{limit: limit, window: window, maxKeys: maxKeys, logs: map[string]*eventLog{}}
}

// Allow records an event for key at now if the window has room.
func (l *slidingLimiter) Allow(key string, now time.Time) rateDecision {
	return l.take(key, now, true)
}

// Peek reports the key's state without recording anything.
func (l *slidingLimiter) Peek(key string, now time.Time) rateDecision {
	return l.take(key, now, false)
}

func (l *slidingLimiter) take(key string, now time.Time, record bool) rateDecision {
	l.mu.Lock()
	defer l.mu.Unlock()
	log := l.logs[key]
	if log == nil {
		if !record {
			return rateDecision{Allowed: true, Limit: l.limit, Remaining: l.limit}
		}
		if len(l.logs) >= l.maxKeys {
			l.pruneLocked(now)
		}
		log = &eventLog{times: make([]time.Time, l.limit)}
		l.logs[key] = log
	}
	cutoff := now.Add(-l.window)
	for log.n > 0 && !log.times[log.head].After(cutoff) {
		log.head = (log.head + 1) % l.limit
		log.n--
	}
	d := rateDecision{Limit: l.limit}
	if log.n < l.limit {
		d.Allowed = true
		if record {
			log.times[(log.head+log.n)%l.limit] = now
			log.n++
		}
	}
	d.Remaining = l.limit - log.n
	if log.n > 0 {
		d.Reset = log.times[log.head].Add(l.window).Sub(now)
	}
	return d
}

// Prune drops the state of keys with no event inside the window, keeping memory bounded by the
// number of keys active in the last window.
func (l *slidingLimiter) Prune(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked(now)
}

func (l *slidingLimiter) pruneLocked(now time.Time) {
	cutoff := now.Add(-l.window)
	for key, log := range l.logs {
		if log.n == 0 || !log.times[(log.head+log.n-1)%l.limit].After(cutoff) {
			delete(l.logs, key)
		}
	}
	// Still full: every key is active. Forget arbitrary ones rather than grow without bound;
	// this only happens under a flood far beyond maxKeys distinct callers per window.
	for key := range l.logs {
		if len(l.logs) < l.maxKeys {
			break
		}
		delete(l.logs, key)
	}
}

// Len is the number of keys with state.
func (l *slidingLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.logs)
}
