package store_test

import (
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/store/storetest"
)

// BenchmarkClaimBacklog is a claim and finish beside a backlog of 590 queued jobs of ten
// accounts (storetest.BenchClaimBacklog), on bbolt.
func BenchmarkClaimBacklog(b *testing.B) {
	s, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	storetest.BenchClaimBacklog(b, s)
}
