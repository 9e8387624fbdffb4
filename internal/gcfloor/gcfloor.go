// Package gcfloor lets a long-running server's heap grow to a floor before the garbage
// collector runs more often than Go's default (GOGC=100) would: the minimum heap goal
// golang.org/issue/23044 asks the runtime for.
//
// convsvc serve keeps little alive between requests (about 10 MiB) but allocates quickly
// under load (about 18 KiB per API request), so with GOGC=100 it collects every few MiB,
// around 20 times a second at 12,000 requests/s. With a floor the collector's goal is the
// floor while the live heap is under half of it, and twice the live heap, as by default,
// once it is larger (a big conversion): the floor bounds what it costs in memory.
//
// After each collection (a cleanup on a sentinel object says when), the tuning reads the
// live heap from runtime/metrics and sets the GC percent that puts the next goal at the
// floor.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap serve lets grow before collecting more often than GOGC=100
// would.
const DefaultFloor = 32 << 20

var (
	mu    sync.Mutex
	floor uint64 // 0: off
	armed bool   // a sentinel is waiting for the next collection
	// afterTune, when set (by tests), runs under mu after each collection's tuning.
	afterTune func()
)

// Set makes the collector let the heap grow to floor bytes before collecting, and never
// collect more often than GOGC=100 would. It is process-wide. When the environment sets
// GOGC it does nothing and returns false: the operator's choice wins. Set(0) turns the
// floor off again (GOGC=100) and returns false. GOMEMLIMIT applies either way.
func Set(bytes uint64) bool {
	if OverriddenByGOGC() {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	floor = bytes
	if floor == 0 {
		debug.SetGCPercent(100) // GOGC is unset, so 100 is the runtime's own default
		return false
	}
	tuneLocked()
	if !armed {
		armed = true
		arm()
	}
	return true
}

// OverriddenByGOGC reports whether GOGC in the environment turns the floor off.
func OverriddenByGOGC() bool { return os.Getenv("GOGC") != "" }

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales with the percent
// (4 MiB at 100, 400 MiB at 10000), so it caps the percent a small floor can use.
const heapMinimum = 4 << 20

// PercentFor is the GC percent whose goal, live*(1+percent/100), is the floor, or 100 when
// that would collect more often than the default. The percent also keeps the runtime's
// minimum goal, heapMinimum*percent/100, within the floor. A live heap of 0 means no
// collection has measured it yet: 100 until one has.
func PercentFor(live, floor uint64) int {
	if live == 0 || floor <= 2*live {
		return 100
	}
	return int(max(100, min((floor-live)*100/live, floor*100/heapMinimum)))
}

// sentinel is allocated for nothing but its cleanup, which runs after the collection that
// finds it unreachable. Its pointer keeps it out of the tiny allocator, where a cleanup
// may never run.
type sentinel struct{ _ *byte }

// arm runs tune after the next collection, and arms again then, while the floor is on.
func arm() {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		mu.Lock()
		defer mu.Unlock()
		if floor == 0 {
			armed = false
			return
		}
		tuneLocked()
		if afterTune != nil {
			afterTune()
		}
		arm()
	}, struct{}{})
}

// tuneLocked sets the percent for the live heap the last collection marked, unless it is
// the percent already in force.
func tuneLocked() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return // a runtime without the metrics: leave the default
	}
	if p := PercentFor(s[0].Value.Uint64(), floor); uint64(p) != s[1].Value.Uint64() {
		debug.SetGCPercent(p)
	}
}
