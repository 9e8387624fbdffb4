package store

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestFinishHook_OnceWhenGroupReruns: a cancel that shares a group commit with a write that
// fails runs twice (the group is rolled back and run again without the failing write), and
// the FinishHook still fires once, after the commit that kept it.
func TestFinishHook_OnceWhenGroupReruns(t *testing.T) {
	var mu sync.Mutex
	var calls []Job
	s, err := Open(filepath.Join(t.TempDir(), "convsvc.db"), Options{OnFinished: func(j Job) {
		mu.Lock()
		calls = append(calls, j)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 1)

	// A write holds the lead inside its transaction while the next two queue up behind it.
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocker := make(chan error, 1)
	go func() {
		blocker <- s.update(func(*bolt.Tx) error {
			once.Do(func() { close(inside) })
			<-release
			return nil
		})
	}()
	<-inside
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			s.group.mu.Lock()
			got := len(s.group.queue)
			s.group.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writes queued, want %d", got, n)
			}
		}
	}
	before := s.writeCalls.Load()
	cancelled := make(chan error, 1)
	go func() { _, err := s.CancelJob(a.ID, job.ID); cancelled <- err }()
	queued(1)
	errFail := errors.New("this write fails")
	failed := make(chan error, 1)
	go func() { failed <- s.update(func(*bolt.Tx) error { return errFail }) }()
	queued(2)
	close(release)
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if err := <-failed; !errors.Is(err, errFail) {
		t.Fatalf("failing write: %v", err)
	}
	// cancel, fail (rolled back), cancel again (committed), fail alone.
	if runs := s.writeCalls.Load() - before; runs != 4 {
		t.Fatalf("%d write runs, want 4: the cancel did not share a group with the failing write", runs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0].ID != job.ID || calls[0].Status != StatusCancelled {
		t.Fatalf("hook calls %+v, want the cancelled job once", calls)
	}
}
