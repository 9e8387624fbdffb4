package httpapi

import (
	"fmt"
	"testing"
	"time"
)

func TestSlidingLimiter_NeverMoreThanLimitInAnyWindow(t *testing.T) {
	l := newSlidingLimiter(120, time.Minute, 1000)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var accepted []time.Time
	// 120 at once, then one request every 250ms for 3 minutes: a token bucket of burst 120
	// refilled at 2/s would accept about 240 in the first minute.
	for i := 0; i < 120; i++ {
		if !l.Allow("k", start).Allowed {
			t.Fatalf("request %d refused", i)
		}
		accepted = append(accepted, start)
	}
	if d := l.Allow("k", start.Add(time.Second)); d.Allowed || d.Remaining != 0 || d.Reset != 59*time.Second {
		t.Fatalf("121st: %+v", d)
	}
	for now := start.Add(time.Second); now.Before(start.Add(3 * time.Minute)); now = now.Add(250 * time.Millisecond) {
		if l.Allow("k", now).Allowed {
			accepted = append(accepted, now)
		}
	}
	for i := range accepted {
		n := 0
		for j := i; j < len(accepted) && accepted[j].Sub(accepted[i]) < time.Minute; j++ {
			n++
		}
		if n > 120 {
			t.Fatalf("%d accepted in the minute from %v", n, accepted[i])
		}
	}
	if len(accepted) < 360 {
		t.Fatalf("only %d accepted in 3 minutes, want 360", len(accepted))
	}
}

func TestSlidingLimiter_PruneBoundsMemory(t *testing.T) {
	l := newSlidingLimiter(5, time.Minute, 100)
	now := time.Now()
	for i := 0; i < 1000; i++ {
		l.Allow(fmt.Sprint("key", i), now)
	}
	if l.Len() > 100 {
		t.Fatalf("%d keys kept, max 100", l.Len())
	}
	l.Prune(now.Add(2 * time.Minute))
	if l.Len() != 0 {
		t.Fatalf("%d idle keys kept", l.Len())
	}
}
