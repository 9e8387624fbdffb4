// Command writertrace reads an execution trace of convsvc (bench/serveprof's $CONVSVC_TRACE)
// and says how the store's single writer spent the traced time: the goroutine that commits a
// group (store.groupCommit's lead and commit) running, in a system call (bbolt's page writes
// and fdatasyncs), runnable but waiting for a processor, or blocked. A writer busy for nearly
// all of the trace is not by itself the API's limit: run 8 in docs/benchmarks.md found it busy
// ~90% of the time, yet a build without fsyncs was no faster, since the waits are what make
// the groups large.
//
//	CONVSVC_TRACE=/tmp/api.trace CONVSVC_CPUPROFILE=/tmp/api.pprof go run ./bench/apibench -bin /tmp/serveprof -rounds 1
//	go run ./bench/writertrace /tmp/api.trace.3   # the start phase's first second
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: writertrace TRACE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "writertrace:", err)
		os.Exit(1)
	}
}

// goroutine is what the trace last said about one goroutine.
type goroutine struct {
	state   trace.GoState
	since   trace.Time
	writing bool // its last known stack was inside the group commit
}

func run(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return err
	}
	gs := map[trace.GoID]*goroutine{}
	spent := map[trace.GoState]time.Duration{}
	var first, last trace.Time
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		g := gs[st.Resource.Goroutine()]
		if g == nil {
			g = &goroutine{state: from, since: ev.Time()}
			gs[st.Resource.Goroutine()] = g
		}
		if g.writing {
			spent[g.state] += ev.Time().Sub(g.since)
		}
		// The transition's own stack is the goroutine's (when the trace has one): it tells
		// whether the time from here on is the writer's.
		if st.Stack != trace.NoStack {
			g.writing = inGroupCommit(st.Stack)
		}
		g.state, g.since = to, ev.Time()
	}
	span := last.Sub(first)
	var total time.Duration
	for _, d := range spent {
		total += d
	}
	fmt.Printf("trace: %v; the writer (store.groupCommit) was busy %.0f%% of it\n", span.Round(time.Millisecond), pct(total, span))
	states := []trace.GoState{trace.GoRunning, trace.GoSyscall, trace.GoRunnable, trace.GoWaiting}
	for st := range spent {
		if !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	for _, st := range states {
		fmt.Printf("  %-9s %8v  %5.1f%%\n", strings.ToLower(st.String()), spent[st].Round(time.Millisecond), pct(spent[st], span))
	}
	return nil
}

func inGroupCommit(s trace.Stack) bool {
	for fr := range s.Frames() {
		if strings.HasSuffix(fr.Func, "store.(*groupCommit).lead") || strings.HasSuffix(fr.Func, "store.(*groupCommit).commit") {
			return true
		}
	}
	return false
}

func pct(d, of time.Duration) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(d) / float64(of)
}
