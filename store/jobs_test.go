package store

import (
	"regexp"
	"testing"
	"time"
)

// Job ids keep the shape clients and the blob store know, and sort by creation time so the
// jobs bucket grows at its right edge.
func TestNewJobID_ShapeAndOrder(t *testing.T) {
	shape := regexp.MustCompile(`^job_[0-9A-Za-z]{24}$`)
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i, step := range []time.Duration{0, time.Millisecond, time.Second, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour, 100 * 365 * 24 * time.Hour} {
		id := newJobID(base.Add(step))
		if !shape.MatchString(id) {
			t.Fatalf("id %q does not match %s", id, shape)
		}
		if i > 0 && id <= prev {
			t.Fatalf("id %q at +%v does not sort after %q", id, step, prev)
		}
		prev = id
	}
	a, b := newJobID(base), newJobID(base)
	if a == b || a[:12] != b[:12] {
		t.Fatalf("two ids in the same millisecond: %q and %q; want the same time prefix and different random parts", a, b)
	}
	if got := newJobID(time.Unix(0, 0)); got[:12] != "job_00000000" {
		t.Fatalf("epoch id %q, want prefix job_00000000", got)
	}
}

// Waiters counts the WaitChange channels open now: released ones and ones a change closed
// leave the count.
func TestStore_Waiters(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 10)
	job := mustCreate(t, s, a.ID, 100)
	if n := s.Waiters(); n != 0 {
		t.Fatalf("Waiters = %d before any wait", n)
	}
	ch1, release1 := s.WaitChange(job.ID)
	_, release2 := s.WaitChange(job.ID)
	_, release3 := s.WaitChange("job_other")
	if n := s.Waiters(); n != 3 {
		t.Fatalf("Waiters = %d with three waits, want 3", n)
	}
	release3()
	if _, err := s.StartJob(a.ID, job.ID, 100); err != nil {
		t.Fatal(err)
	}
	<-ch1
	if n := s.Waiters(); n != 0 {
		t.Fatalf("Waiters = %d after the job changed and the other wait was released, want 0", n)
	}
	release1()
	release2()
}
