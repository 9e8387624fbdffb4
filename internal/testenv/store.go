package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// openStore reopens a stopped service's database for checks.
func openStore(dataDir string) (*store.Store, error) {
	return store.Open(filepath.Join(dataDir, "convsvc.db"), store.Options{LockTimeout: 5 * time.Second})
}

// OpenStore reopens a stopped service's (or binary's) database for checks.
func OpenStore(dataDir string) (*store.Store, error) { return openStore(dataDir) }

// EnvDatabase names the variable that selects the job database of every Start: "postgres"
// gives each service a fresh PostgreSQL database (internal/testpg; the package's TestMain
// must call testpg.Main or testpg.Run); anything else keeps bbolt in the data dir.
const EnvDatabase = "CONVSVC_TEST_DATABASE"

// Postgres is a Start option that puts the service's jobs in a fresh PostgreSQL database
// (skipping the test when PostgreSQL is not installed, outside CI), with a configured admin
// token as PostgreSQL requires.
func Postgres(t testing.TB) func(*service.Config) {
	t.Helper()
	dbURL := testpg.NewDatabase(t)
	return func(c *service.Config) {
		c.Database = dbURL
		if c.AdminToken == "" {
			c.AdminToken = "cs_admin_testenv_postgres"
		}
	}
}

// verifyPostgres checks the ledger of a stopped service's PostgreSQL database.
func verifyPostgres(t testing.TB, dbURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
	if err != nil {
		t.Errorf("reopen database: %v", err)
		return
	}
	defer st.Close()
	if err := st.VerifyLedger(); err != nil {
		t.Errorf("ledger: %v", err)
	}
}

// BboltOnly skips a test that checks something only the embedded store has (bbolt's
// counters, backup, the database file) when CONVSVC_TEST_DATABASE selects PostgreSQL.
func BboltOnly(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(EnvDatabase) == "postgres" {
		t.Skipf("bbolt only: %s", what)
	}
}
