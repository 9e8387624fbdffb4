package webhook

import (
	"math/rand/v2"
	"time"
)

// The retry schedule. A dispatcher retries a failed delivery after Backoff(attempt, ...) until
// RetryFor has passed since its first attempt, and disables an endpoint whose deliveries have
// all failed for DisableAfter. docs/webhooks.md has the table.
const (
	// BackoffBase is the ceiling of the wait after the first failure; it doubles per failure.
	BackoffBase = 30 * time.Second
	// BackoffCap is the largest ceiling: from the 11th failure on, attempts are 3 to 6 hours apart.
	BackoffCap = 6 * time.Hour
	// RetryFor is how long a delivery is retried after its first attempt: three days, so a
	// receiver that is down over a weekend still gets its events.
	RetryFor = 72 * time.Hour
	// DisableAfter is how long an endpoint may fail every delivery before it is disabled.
	DisableAfter = 5 * 24 * time.Hour
)

// Backoff returns the wait before the next attempt after attempt failed ones (1 after the
// first failure): an exponential ceiling d = min(BackoffBase*2^(attempt-1), BackoffCap) with
// equal jitter, d/2 + rnd()*d/2. Equal jitter (not full) keeps a lower bound, so a receiver
// that is down is not hammered and the schedule's length is predictable. rnd returns a value
// in [0,1); nil uses math/rand/v2. An attempt below 1 counts as 1.
func Backoff(attempt int, rnd func() float64) time.Duration {
	return equalJitter(attempt, BackoffBase, BackoffCap, rnd)
}

// equalJitter is d/2 + rnd()*d/2 with d = min(base*2^(n-1), ceiling); n below 1 counts as 1,
// and a nil rnd is math/rand/v2's.
func equalJitter(n int, base, ceiling time.Duration, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	if n < 1 {
		n = 1
	}
	d := ceiling
	if n <= 20 { // base << 19 is far above both ceilings; avoid shifting into overflow
		if e := base << (n - 1); e < ceiling {
			d = e
		}
	}
	f := rnd()
	if f < 0 || f >= 1 || f != f {
		f = 0
	}
	half := d / 2
	return half + time.Duration(f*float64(d-half))
}

// Schedule returns when each attempt of a delivery happens, as offsets from the first (0),
// for a delivery that always fails: attempts continue while the offset is below RetryFor.
// rnd is passed to Backoff.
func Schedule(rnd func() float64) []time.Duration {
	at := []time.Duration{0}
	t := time.Duration(0)
	for n := 1; ; n++ {
		t += Backoff(n, rnd)
		if t >= RetryFor {
			return at
		}
		at = append(at, t)
	}
}

// The pause of a destination found down. A dispatcher sends a destination nothing more until
// the pause ends, then tries again (a few attempts at most, its per-destination cap); each
// time it is found down again the pause doubles, from PauseBase up to PauseCap.
const (
	// PauseBase is the ceiling of the first pause.
	PauseBase = 15 * time.Second
	// PauseCap is the largest ceiling: a destination down for long is tried every 7.5 to 15 minutes.
	PauseCap = 15 * time.Minute
)

// DestinationPause returns how long a destination found down failures times in a row (1 the
// first time) takes no attempts: min(PauseBase*2^(failures-1), PauseCap) with equal jitter,
// as Backoff. rnd is as for Backoff.
func DestinationPause(failures int, rnd func() float64) time.Duration {
	return equalJitter(failures, PauseBase, PauseCap, rnd)
}
