package store

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestStore_Backup_WritesContinueWhileStalled: a backup whose reader has stopped reading holds
// no transaction, so a write that must grow the database file (bbolt remaps it, which waits
// for every read transaction) completes meanwhile. Before, the backup streamed from its read
// transaction and the write waited for the reader.
func TestStore_Backup_WritesContinueWhileStalled(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 100)
	job := mustCreate(t, s, a.ID, 10)

	pr, pw := io.Pipe()
	announced := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		_, err := s.Backup(pw, func(n int64) { announced <- n })
		pw.CloseWithError(err)
		done <- err
	}()
	var size int64
	select {
	case size = <-announced:
	case <-time.After(60 * time.Second):
		t.Fatal("backup did not start")
	}
	// Nobody reads pr yet: the backup is stalled on its first write. Grow the file well past
	// its mapping (64 MiB against a database of a few pages).
	wrote := make(chan error, 1)
	go func() {
		wrote <- s.update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put([]byte("ballast"), make([]byte, 64<<20))
		})
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		pr.Close()
		t.Fatal("a write that grows the file did not complete while the backup download was stalled")
	}
	mustCreate(t, s, a.ID, 10)

	got, err := io.ReadAll(pr)
	if err != nil || <-done != nil {
		t.Fatalf("read backup: %v", err)
	}
	if int64(len(got)) != size {
		t.Fatalf("backup is %d bytes, announced %d", len(got), size)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, got, 0o600); err != nil {
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
	if got := mustJob(t, b, a.ID, job.ID); got.Status != StatusCreated {
		t.Fatalf("job in backup %+v", got)
	}
	if c, _ := b.Counts(); c.Jobs[StatusCreated] != 1 || c.DBBytes >= 64<<20 {
		t.Fatalf("backup has %v jobs and %d bytes, want the state before the backup", c.Jobs, c.DBBytes)
	}
	// Nothing of the temporary copy is left beside the database.
	entries, err := os.ReadDir(filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(s.Path()) {
			t.Errorf("left beside the database: %s", e.Name())
		}
	}
}
