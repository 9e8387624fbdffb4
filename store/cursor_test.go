package store

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestListAfterSweptCursor_SameMillisecond: a page after a cursor whose job retention deleted
// continues from the lowest seq of the first millisecond after the cursor's (cursorSeq), not
// from the job whose id sorts first in it: ids of one millisecond sort by their random part,
// so a job created earlier in that millisecond, newer than the cursor, would be listed after
// it. The millisecond holds jobs until one created later sorts first by id, so the case is
// the failing one every run (TestConformance/ListAfterExpiredCursor met it 1 run in 10).
func TestListAfterSweptCursor_SameMillisecond(t *testing.T) {
	// The first job of a millisecond is the smallest of n by id with chance 1/n: a run whose
	// millisecond reaches 64 jobs without a smaller one starts again on a new store.
	for range 8 {
		if sweptCursorSameMillisecond(t) {
			return
		}
	}
	t.Fatal("8 runs of 64 jobs of one millisecond, none sorting before its first")
}

// sweptCursorSameMillisecond is one run of TestListAfterSweptCursor_SameMillisecond; false
// when its millisecond had no job sorting before the first.
func sweptCursorSameMillisecond(t *testing.T) bool {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "convsvc.db")
	open := func(retention time.Duration) *Store {
		t.Helper()
		s, err := Open(path, Options{Now: clk.Now, Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(24 * time.Hour)
	a := mustAccount(t, s, 100)
	older := mustCreate(t, s, a.ID, 1) // outlives the cursor: created under a longer retention
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(time.Hour)
	t.Cleanup(func() {
		if err := s.VerifyLedger(); err != nil {
			t.Errorf("ledger: %v", err)
		}
		s.Close()
	})
	clk.Advance(time.Millisecond)
	cursor := mustCreate(t, s, a.ID, 1)
	clk.Advance(time.Millisecond)
	var next []Job // one millisecond's jobs, in creation order
	for len(next) < 2 || slices.MinFunc(next, func(x, y Job) int { return strings.Compare(x.ID, y.ID) }).ID == next[0].ID {
		if len(next) == 64 {
			return false
		}
		next = append(next, mustCreate(t, s, a.ID, 1))
	}
	clk.Advance(time.Hour - time.Millisecond) // the cursor's expires_at; the next millisecond's jobs live on
	deleted, _, err := s.ExpireJobs(100)
	if err != nil || !slices.Equal(deleted, []string{cursor.ID}) {
		t.Fatalf("ExpireJobs = %v, %v; want [%s]", deleted, err, cursor.ID)
	}
	page, more, err := s.ListJobs(a.ID, ListParams{Limit: 100, StartingAfter: cursor.ID})
	if err != nil || more || len(page) != 1 || page[0].ID != older.ID {
		got := jobIDs(page)
		t.Fatalf("page after the swept cursor: %v more=%v %v; want [%s] (the next millisecond's jobs: %v)",
			got, more, err, older.ID, jobIDs(next))
	}
	return true
}

func jobIDs(jobs []Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}
