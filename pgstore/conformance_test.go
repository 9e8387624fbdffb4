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
			CacheMaxBytes: o.CacheMaxBytes})
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
