package gcfloor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/gcfloor"
)

// Jobs finishing one after another give one trim, after the last; a trim that finds a job
// running waits for that job's end.
func TestTrimmer_TrimsOnceWhenIdle(t *testing.T) {
	trimmed := make(chan struct{}, 10)
	busyAsked := make(chan bool, 10)
	var busy atomic.Bool
	busy.Store(true)
	tr := gcfloor.NewTrimmer(50*time.Millisecond, func() bool {
		b := busy.Load()
		busyAsked <- b
		return b
	}).WithTrimFunc(func() { trimmed <- struct{}{} })
	defer tr.Stop()

	tr.JobDone()
	tr.JobDone()
	select { // a job is running when the delay is up: no trim
	case <-busyAsked:
	case <-time.After(30 * time.Second):
		t.Fatal("the trimmer never looked at the workers")
	}
	if n := tr.Trims(); n != 0 {
		t.Fatalf("%d trims while a job was running, want 0", n)
	}
	busy.Store(false)
	tr.JobDone()
	select {
	case <-trimmed:
	case <-time.After(30 * time.Second):
		t.Fatal("no trim after the last job")
	}
	if n := len(busyAsked); n != 1 {
		t.Errorf("the workers were asked %d more times, want 1 (two quick JobDones are one trim)", n)
	}
	if n := tr.Trims(); n != 1 {
		t.Errorf("%d trims, want 1", n)
	}
}

// A delay of 0 turns trimming off, and Stop cancels a pending trim.
func TestTrimmer_OffAndStop(t *testing.T) {
	calls := make(chan struct{}, 10)
	off := gcfloor.NewTrimmer(0, func() bool { calls <- struct{}{}; return false })
	off.JobDone()
	stopped := gcfloor.NewTrimmer(time.Hour, func() bool { calls <- struct{}{}; return false })
	stopped.JobDone()
	stopped.Stop()
	stopped.JobDone()
	if off.Trims() != 0 || stopped.Trims() != 0 || len(calls) != 0 {
		t.Errorf("trims %d and %d, %d looks at the workers; want none", off.Trims(), stopped.Trims(), len(calls))
	}
}
