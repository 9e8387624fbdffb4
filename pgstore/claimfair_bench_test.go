package pgstore_test

import (
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store/storetest"
)

// BenchmarkClaimBacklog is a claim and finish beside a backlog of 590 queued jobs of ten
// accounts (storetest.BenchClaimBacklog), on PostgreSQL.
func BenchmarkClaimBacklog(b *testing.B) {
	storetest.BenchClaimBacklog(b, open(b, testpg.NewDatabase(b), pgstore.Options{}))
}
