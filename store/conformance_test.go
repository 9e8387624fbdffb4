package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/store/storetest"
)

var _ storetest.Backend = (*store.Store)(nil)

// TestConformance runs the store conformance suite against the bbolt store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Backend {
		s, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{Retention: o.Retention, IdempotencyTTL: o.IdempotencyTTL, OnFinished: o.OnFinished,
			CacheMaxBytes: o.CacheMaxBytes, CacheHitCents: o.CacheHitCents})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Check(); err != nil {
				t.Errorf("bbolt check: %v", err)
			}
			s.Close()
		})
		return s
	})
}

// TestCursorAcrossRetention reopens one bbolt file with a shorter, then a longer retention.
func TestCursorAcrossRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	var cur *store.Store
	t.Cleanup(func() {
		if cur != nil {
			cur.Close()
		}
	})
	storetest.RunCursorAcrossRetention(t, func(t *testing.T, retention time.Duration) storetest.Backend {
		if cur != nil {
			if err := cur.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s, err := store.Open(path, store.Options{Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		cur = s
		return s
	})
}

// TestCacheAcrossNodes runs the suite's identical jobs across nodes on bbolt's one store (a
// bbolt file has one process: every "node" is that store).
func TestCacheAcrossNodes(t *testing.T) {
	storetest.RunCacheAcrossNodes(t, func(t *testing.T, n int, o storetest.Options) []storetest.Backend {
		s, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{Retention: o.Retention, CacheMaxBytes: o.CacheMaxBytes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out := make([]storetest.Backend, n)
		for i := range out {
			out[i] = s
		}
		return out
	})
}
