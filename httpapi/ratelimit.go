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

// eventLog is a ring of accepted event times (unix nanoseconds), oldest at head. It grows with
// use up to the limit, so a key that made three requests costs three slots, not limit.
type eventLog struct {
	times []int64
	head  int
	n     int
}

// push appends t; the caller has checked there is room (n < limit).
func (e *eventLog) push(t int64, limit int) {
	if len(e.times) < limit && e.head == 0 && e.n == len(e.times) {
		e.times = append(e.times, t)
		e.n++
		return
	}
	if e.n == len(e.times) { // full ring below the limit: unroll and grow
		grown := make([]int64, 0, min(limit, 2*len(e.times)+1))
		for i := 0; i < e.n; i++ {
			grown = append(grown, e.times[(e.head+i)%len(e.times)])
		}
		e.times, e.head = append(grown, t), 0
		e.n++
		return
	}
	e.times[(e.head+e.n)%len(e.times)] = t
	e.n++
}

// at returns the i-th oldest event.
func (e *eventLog) at(i int) int64 { return e.times[(e.head+i)%len(e.times)] }

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
		log = &eventLog{}
		l.logs[key] = log
	}
	cutoff := now.Add(-l.window).UnixNano()
	for log.n > 0 && log.at(0) <= cutoff {
		log.head = (log.head + 1) % len(log.times)
		log.n--
	}
	if log.n == 0 {
		log.head = 0
	}
	d := rateDecision{Limit: l.limit}
	if log.n < l.limit {
		d.Allowed = true
		if record {
			log.push(now.UnixNano(), l.limit)
		}
	}
	d.Remaining = l.limit - log.n
	if log.n > 0 {
		d.Reset = time.Duration(log.at(0) + int64(l.window) - now.UnixNano())
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
	cutoff := now.Add(-l.window).UnixNano()
	for key, log := range l.logs {
		if log.n == 0 || log.at(log.n-1) <= cutoff {
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
