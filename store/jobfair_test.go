package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestQueueByAccount_RebuiltAtOpen: a file whose queue by account is missing (written by a
// binary without it) or stale gets it rebuilt from the queue at Open, so no queued job is lost
// to the fair claim; a stale entry of a job no longer queued is left out.
func TestQueueByAccount_RebuiltAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateAccount("a", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		j, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender)
		if err == nil {
			_, err = s.StartJob(a.ID, j.ID, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if _, err := s.CancelJob(a.ID, ids[1]); err != nil {
		t.Fatal(err)
	}
	// As an older binary leaves it: no queue by account, and the cancelled job's queue entry
	// still there.
	err = s.db.Update(func(tx *bolt.Tx) error {
		j, err := findJob(tx, ids[1])
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketQueue).Put(queueKey(j), nil); err != nil {
			return err
		}
		return tx.DeleteBucket(bucketQueueByAccount)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range []string{ids[0], ids[2]} {
		j, ok, err := s.ClaimJob()
		if err != nil || !ok || j.ID != want {
			t.Fatalf("claim after reopening: %s ok=%v err=%v, want %s", j.ID, ok, err, want)
		}
	}
	if j, ok, err := s.ClaimJob(); err != nil || ok {
		t.Fatalf("a third claim took %s (ok=%v err=%v): the cancelled job's stale entry", j.ID, ok, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
