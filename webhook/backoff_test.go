package webhook

import (
	"math"
	"testing"
	"time"
)

func TestBackoff_Bounds(t *testing.T) {
	zero := func() float64 { return 0 }
	almostOne := func() float64 { return math.Nextafter(1, 0) }
	ceilings := []time.Duration{
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 32 * time.Minute, 64 * time.Minute, 128 * time.Minute, 256 * time.Minute,
		6 * time.Hour, 6 * time.Hour, 6 * time.Hour,
	}
	for i, ceil := range ceilings {
		attempt := i + 1
		if got := Backoff(attempt, zero); got != ceil/2 {
			t.Errorf("Backoff(%d, 0) = %s, want %s", attempt, got, ceil/2)
		}
		if got := Backoff(attempt, almostOne); got >= ceil || got < ceil-time.Microsecond {
			t.Errorf("Backoff(%d, ~1) = %s, want just under %s", attempt, got, ceil)
		}
		for range 200 {
			if got := Backoff(attempt, nil); got < ceil/2 || got >= ceil {
				t.Fatalf("Backoff(%d, rand) = %s, want in [%s, %s)", attempt, got, ceil/2, ceil)
			}
		}
	}
	for _, attempt := range []int{-5, 0} {
		if got := Backoff(attempt, zero); got != 15*time.Second {
			t.Errorf("Backoff(%d, 0) = %s, want the first attempt's 15s", attempt, got)
		}
	}
	for _, attempt := range []int{21, 64, 65, 1000, math.MaxInt} {
		if got := Backoff(attempt, zero); got != BackoffCap/2 {
			t.Errorf("Backoff(%d, 0) = %s, want %s (no overflow past the cap)", attempt, got, BackoffCap/2)
		}
	}
	// A broken random source cannot push the wait outside its bounds.
	for _, f := range []float64{-1, 1, 2, math.NaN(), math.Inf(1)} {
		if got := Backoff(3, func() float64 { return f }); got != time.Minute {
			t.Errorf("Backoff(3, %v) = %s, want the lower bound 1m", f, got)
		}
	}
}

// TestSchedule_RetriesForAtLeastADay: whatever the jitter, a delivery that always fails is
// retried for at least 24 hours (RetryFor is 72), with its last attempt within one cap of the
// end, and an endpoint is disabled only after a failing delivery has given up.
func TestSchedule_RetriesForAtLeastADay(t *testing.T) {
	if RetryFor < 24*time.Hour {
		t.Fatalf("RetryFor = %s, the issue asks for at least 24 h", RetryFor)
	}
	if DisableAfter <= RetryFor {
		t.Fatalf("DisableAfter %s <= RetryFor %s", DisableAfter, RetryFor)
	}
	for name, rnd := range map[string]func() float64{
		"shortest": func() float64 { return 0 },
		"longest":  func() float64 { return math.Nextafter(1, 0) },
		"random":   nil,
	} {
		at := Schedule(rnd)
		last := at[len(at)-1]
		if at[0] != 0 {
			t.Errorf("%s: first attempt at %s", name, at[0])
		}
		if last < 24*time.Hour || last >= RetryFor || last < RetryFor-BackoffCap {
			t.Errorf("%s: last attempt at %s, want in [max(24h, RetryFor-cap), RetryFor)", name, last)
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < Backoff(i, func() float64 { return 0 }) || gap > BackoffCap {
				t.Errorf("%s: gap %d is %s", name, i, gap)
			}
		}
		t.Logf("%s: %d attempts, the last %s after the first", name, len(at), last)
	}
	if n := len(Schedule(func() float64 { return 0 })); n != 33 {
		t.Errorf("shortest schedule has %d attempts, docs/webhooks.md says 33", n)
	}
	if n := len(Schedule(func() float64 { return math.Nextafter(1, 0) })); n != 21 {
		t.Errorf("longest schedule has %d attempts, docs/webhooks.md says 21", n)
	}
}

// TestDestinationPause: 7.5 to 15 s after the first failure in a row, doubling, then 7.5 to
// 15 minutes for good.
func TestDestinationPause(t *testing.T) {
	for _, tt := range []struct {
		failures int
		lo, hi   time.Duration
	}{
		{0, 7500 * time.Millisecond, 15 * time.Second},
		{1, 7500 * time.Millisecond, 15 * time.Second},
		{2, 15 * time.Second, 30 * time.Second},
		{6, 4 * time.Minute, 8 * time.Minute},
		{7, 7*time.Minute + 30*time.Second, 15 * time.Minute},
		{1000, 7*time.Minute + 30*time.Second, 15 * time.Minute},
	} {
		lo, hi := DestinationPause(tt.failures, func() float64 { return 0 }), DestinationPause(tt.failures, func() float64 { return 0.999999999 })
		if lo != tt.lo || hi > tt.hi || hi < tt.hi-time.Millisecond {
			t.Errorf("DestinationPause(%d) in [%v, %v], want [%v, %v)", tt.failures, lo, hi, tt.lo, tt.hi)
		}
	}
}
