package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store/storetest"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// The PostgreSQL store is a drop-in store for the API and for the suite.
var (
	_ httpapi.Store     = (*pgstore.Store)(nil)
	_ storetest.Backend = (*pgstore.Store)(nil)
)

// open opens a Store on url, closed at t's cleanup.
func open(t testing.TB, url string, o pgstore.Options) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store conformance suite against PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Backend {
		return open(t, testpg.NewDatabase(t), pgstore.Options{Retention: o.Retention, IdempotencyTTL: o.IdempotencyTTL, OnFinished: o.OnFinished, Lease: o.Lease,
			CacheMaxBytes: o.CacheMaxBytes, CacheHitCents: o.CacheHitCents})
	})
}

// TestCursorAcrossRetention opens stores with a shorter, then a longer retention on one
// database, as nodes restarted with another --retention would.
func TestCursorAcrossRetention(t *testing.T) {
	url := testpg.NewDatabase(t)
	storetest.RunCursorAcrossRetention(t, func(t *testing.T, retention time.Duration) storetest.Backend {
		return open(t, url, pgstore.Options{Retention: retention})
	})
}

// TestCacheAcrossNodes runs the suite's identical jobs across three nodes on one database,
// the first running every transition as its Go transaction and the others the transition
// functions (as during an upgrade), and holds the cache's lock order (cache.go): no node ran
// a transaction again after a deadlock (which the retries would otherwise hide).
func TestCacheAcrossNodes(t *testing.T) {
	var ns []*pgstore.Store
	storetest.RunCacheAcrossNodes(t, func(t *testing.T, n int, o storetest.Options) []storetest.Backend {
		ns = nodes(t, n, pgstore.Options{Retention: o.Retention, CacheMaxBytes: o.CacheMaxBytes})
		ns[0].UseGoTransitions()
		out := []storetest.Backend{}
		for _, s := range ns {
			out = append(out, s)
		}
		return out
	})
	for i, s := range ns {
		if n := s.Retried(); n != 0 {
			t.Errorf("node %d ran %d transactions again after a deadlock", i, n)
		}
	}
}
