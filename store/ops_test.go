package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestStore_Counts(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 100)
	b := mustAccount(t, s, 100)

	created := mustCreate(t, s, a.ID, 10)
	_ = created
	queued1 := mustCreate(t, s, a.ID, 10)
	if _, err := s.StartJob(a.ID, queued1.ID, 10); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	queued2 := mustCreate(t, s, b.ID, 10)
	if _, err := s.StartJob(b.ID, queued2.ID, 10); err != nil {
		t.Fatal(err)
	}
	cancelled := mustCreate(t, s, b.ID, 10)
	if _, err := s.CancelJob(b.ID, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	// Claim one of the queued jobs (the accounts take turns, the first in id order first) and
	// let it succeed; the other stays queued.
	job, ok, err := s.ClaimJob()
	if err != nil || !ok || (job.ID != queued1.ID && job.ID != queued2.ID) {
		t.Fatalf("claim %v %v %v", job.ID, ok, err)
	}
	left := queued2
	if job.ID == queued2.ID {
		left = queued1
	}
	if _, err := s.FinishJob(job.ID, job.Attempt, Outcome{Output: &Output{Bytes: 1, SHA256: "x"}}); err != nil {
		t.Fatal(err)
	}

	c, err := s.Counts()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{StatusCreated: 1, StatusQueued: 1, StatusSucceeded: 1, StatusCancelled: 1}
	if fmt.Sprint(c.Jobs) != fmt.Sprint(want) {
		t.Errorf("jobs %v, want %v", c.Jobs, want)
	}
	if c.QueueDepth != 1 || !c.OldestQueued.Equal(*mustJob(t, s, left.AccountID, left.ID).StartedAt) {
		t.Errorf("queue %d oldest %v", c.QueueDepth, c.OldestQueued)
	}
	if c.Accounts != 2 || c.ReservedCents != 2 || c.SpentCentsMonth != 1 || c.SpentCentsAllTime != 1 {
		t.Errorf("ledger %+v", c)
	}
	if c.DBBytes <= 0 {
		t.Errorf("db size %d", c.DBBytes)
	}
	// Next month the month's spend starts again; the all-time total stays.
	clk.Advance(40 * 24 * time.Hour)
	if c, err = s.Counts(); err != nil || c.SpentCentsMonth != 0 || c.SpentCentsAllTime != 1 {
		t.Errorf("next month %+v %v", c, err)
	}
	if st := s.DBStats(); st.TxN == 0 {
		t.Errorf("bolt stats %+v", st)
	}
}

func mustJob(t *testing.T, s *Store, acct, id string) Job {
	t.Helper()
	j, err := s.Job(acct, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestStatusOf(t *testing.T) {
	job := Job{ID: "job_1", AccountID: "acct_1", Status: StatusRunning, ErrorMessage: `"status":"failed"`}
	rec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := statusOf(rec); !ok || got != StatusRunning {
		t.Fatalf("statusOf = %q %v", got, ok)
	}
	for _, bad := range []string{`{}`, `{"id":"x","status":"bogus"}`, `{"id":"x","status":"unterminated`} {
		if _, ok := statusOf([]byte(bad)); ok {
			t.Errorf("statusOf(%s) ok", bad)
		}
	}
}

func TestStore_Backup(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 100)
	job := mustCreate(t, s, a.ID, 10)

	var buf bytes.Buffer
	var announced int64 = -1
	n, err := s.Backup(&buf, func(size int64) { announced = size })
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || announced != n {
		t.Fatalf("wrote %d, buffer %d, announced %d", n, buf.Len(), announced)
	}
	// A write after the backup is not in it.
	mustCreate(t, s, a.ID, 10)

	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	if err := b.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	if got := mustJob(t, b, a.ID, job.ID); got.Status != StatusCreated {
		t.Fatalf("job in backup %+v", got)
	}
	if c, _ := b.Counts(); c.Jobs[StatusCreated] != 1 {
		t.Fatalf("backup has %v jobs, want the one before the backup", c.Jobs)
	}
}

// BenchmarkStore_Counts measures a metrics scrape's database read with many jobs stored.
func BenchmarkStore_Counts(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s, a := benchStore(b)
			fillJobs(b, s, a.ID, n)
			b.ReportAllocs()
			for b.Loop() {
				c, err := s.Counts()
				if err != nil || c.Jobs[StatusCreated] != n {
					b.Fatal(c, err)
				}
			}
		})
	}
}

// fillJobs writes n created jobs straight into the jobs bucket, ten thousand per transaction
// (the ledger is not the point here, and CreateJob's fsync per job would take minutes).
func fillJobs(b *testing.B, s *Store, accountID string, n int) {
	b.Helper()
	now := time.Now().UTC()
	for i := 0; i < n; {
		batch := min(10_000, n-i)
		err := s.update(func(tx *bolt.Tx) error {
			for j := 0; j < batch; j++ {
				job := Job{ID: "job_" + randomBase62(24), AccountID: accountID, Seq: uint64(i + j), Status: StatusCreated,
					InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := putJob(tx, job); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		i += batch
	}
}
