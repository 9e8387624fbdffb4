package testenv

import (
	"path/filepath"
	"time"

	"github.com/convsvc/convsvc/store"
)

// openStore reopens a stopped service's database for checks.
func openStore(dataDir string) (*store.Store, error) {
	return store.Open(filepath.Join(dataDir, "convsvc.db"), store.Options{LockTimeout: 5 * time.Second})
}

// OpenStore reopens a stopped service's (or binary's) database for checks.
func OpenStore(dataDir string) (*store.Store, error) { return openStore(dataDir) }
