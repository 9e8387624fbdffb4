package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Many concurrent writes, some failing and some panicking: every successful write commits
// exactly once, every failure gets its own error back, nobody waits forever, and writes share
// transactions.
func TestGroupCommit_FailuresStayTheirOwn(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	g := &groupCommit{db: db}
	errOdd := errors.New("odd writes fail")
	const n = 400
	var wg sync.WaitGroup
	results := make([]error, n)
	var txMu sync.Mutex
	txs := map[int]bool{}
	for i := range n {
		wg.Go(func() {
			results[i] = g.update(func(tx *bolt.Tx) error {
				txMu.Lock()
				txs[int(tx.ID())] = true
				txMu.Unlock()
				if err := tx.Bucket([]byte("b")).Put([]byte(fmt.Sprintf("k%04d", i)), []byte("v")); err != nil {
					return err
				}
				switch {
				case i%50 == 7:
					panic("boom")
				case i%2 == 1:
					return errOdd
				}
				return nil
			})
		})
	}
	wg.Wait()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i := range n {
			got := b.Get([]byte(fmt.Sprintf("k%04d", i))) != nil
			switch {
			case i%50 == 7:
				if results[i] == nil || !strings.Contains(results[i].Error(), "panicked: boom") || got {
					t.Errorf("write %d panicked: error %v, stored %v; want the panic as its error and nothing stored", i, results[i], got)
				}
			case i%2 == 1:
				if !errors.Is(results[i], errOdd) || got {
					t.Errorf("write %d failed: error %v, stored %v; want errOdd and nothing stored", i, results[i], got)
				}
			default:
				if results[i] != nil || !got {
					t.Errorf("write %d: error %v, stored %v; want it committed", i, results[i], got)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) >= n {
		t.Errorf("%d writes ran in %d transactions; want them grouped", n, len(txs))
	}
}
