package gcfloor_test

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/gcfloor"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// gcPercent is the collector's current GOGC, read without changing it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// percentAfterGC collects, and waits for the tuning that follows (it runs on the runtime's
// cleanup goroutine and says when it has run), until the percent is one that ok accepts; it
// gives up after 30 s (scaled by testtime).
func percentAfterGC(t *testing.T, ok func(int) bool) int {
	t.Helper()
	tuned := make(chan struct{}, 1)
	gcfloor.OnTuned(t.Cleanup, func() {
		select {
		case tuned <- struct{}{}:
		default:
		}
	})
	timeout := time.After(testtime.Scale(30 * time.Second))
	for {
		runtime.GC()
		select {
		case <-tuned:
		case <-timeout:
			return gcPercent()
		}
		if p := gcPercent(); ok(p) {
			return p
		}
	}
}

// stopTuning puts the process back on GOGC=100 for the tests that follow.
func stopTuning(t *testing.T) {
	t.Cleanup(func() {
		gcfloor.Set(0)
		if p := gcPercent(); p != 100 {
			t.Errorf("GC percent after Set(0) = %d, want 100", p)
		}
	})
}

func TestSet_SmallHeapCollectsLessOften(t *testing.T) {
	t.Setenv("GOGC", "")
	stopTuning(t)
	if !gcfloor.Set(gcfloor.DefaultFloor) {
		t.Fatal("Set = false without GOGC in the environment")
	}
	// The test binary's heap is a few MiB, far under the 32 MiB floor.
	if p := percentAfterGC(t, func(p int) bool { return p > 100 }); p <= 100 {
		t.Fatalf("GC percent = %d with a small heap, want > 100", p)
	}
	// The floor is the goal, not a multiple of it.
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	if goal > gcfloor.DefaultFloor+gcfloor.DefaultFloor/20 || goal < 2*live {
		t.Fatalf("heap goal %d MiB with %d KiB live and a %d MiB floor, want about the floor", goal>>20, live>>10, gcfloor.DefaultFloor>>20)
	}
}

func TestSet_LargeHeapCollectsAsByDefault(t *testing.T) {
	t.Setenv("GOGC", "")
	stopTuning(t)
	runtime.GC() // so that the live heap is measured before Set tunes for it
	if !gcfloor.Set(16 << 20) {
		t.Fatal("Set = false without GOGC in the environment")
	}
	// Only the tuning after a collection can bring the percent back to 100 from here.
	if p := gcPercent(); p <= 100 {
		t.Fatalf("GC percent = %d right after Set with a small heap, want > 100", p)
	}
	live := make([]byte, 64<<20) // four times the floor, kept alive until the check
	for i := range live {
		live[i] = byte(i)
	}
	p := percentAfterGC(t, func(p int) bool { return p == 100 })
	runtime.KeepAlive(live)
	if p != 100 {
		t.Fatalf("GC percent = %d with a live heap over the floor, want 100 (never below GOGC=100's)", p)
	}
}

func TestSet_GOGCInTheEnvironmentWins(t *testing.T) {
	t.Setenv("GOGC", "100")
	if gcfloor.Set(gcfloor.DefaultFloor) {
		t.Fatal("Set = true with GOGC=100 in the environment; the operator's setting must win")
	}
	t.Setenv("GOGC", "")
	if gcfloor.Set(0) {
		t.Fatal("Set(0) = true; a zero floor turns the tuning off")
	}
}

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{10 * mib, 64 * mib, 540}, // goal 64 MiB
		{32 * mib, 64 * mib, 100}, // the default's goal is the floor
		{40 * mib, 64 * mib, 100}, // never below the default
		{1 << 30, 64 * mib, 100},
		{1, 64 * mib, 1600}, // the runtime's minimum goal, 4 MiB x 16, is the floor
		{0, 64 * mib, 100},  // not measured yet
		{1, 2 * mib, 100},   // a floor under the runtime's minimum: the default
	} {
		if got := gcfloor.PercentFor(c.live, c.floor); got != c.want {
			t.Errorf("PercentFor(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}
