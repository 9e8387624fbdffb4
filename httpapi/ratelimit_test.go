package httpapi

import (
	"fmt"
	"net/http/httptest"
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

func TestSlidingLimiter_MemoryFollowsUse(t *testing.T) {
	l := newSlidingLimiter(1200, time.Minute, 1000)
	now := time.Now()
	for i := 0; i < 3; i++ {
		l.Allow("light", now)
	}
	if got := cap(l.logs["light"].times); got > 8 {
		t.Fatalf("a key with 3 requests holds %d slots", got)
	}
	// Wrap-around keeps order: fill, expire some, refill past the ring's end.
	l2 := newSlidingLimiter(4, time.Minute, 10)
	for i := 0; i < 4; i++ {
		l2.Allow("k", now.Add(time.Duration(i)*time.Second))
	}
	later := now.Add(time.Minute + 1500*time.Millisecond) // the first two expired
	if d := l2.Allow("k", later); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after expiry: %+v", d)
	}
	if d := l2.Allow("k", later); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("fourth in window: %+v", d)
	}
	if d := l2.Allow("k", later); d.Allowed || d.Reset != 500*time.Millisecond {
		t.Fatalf("over: %+v", d)
	}
}

// BenchmarkSetRateHeaders is the three RateLimit headers every keyed request carries.
func BenchmarkSetRateHeaders(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		setRateHeaders(httptest.NewRecorder(), rateDecision{Limit: 120, Remaining: 3, Reset: 59 * time.Second})
	}
}
