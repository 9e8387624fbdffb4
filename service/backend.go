package service

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// JobStore is everything the service (API, worker queue, sweeper, metrics) needs from the job
// database. *store.Store (bbolt) and *pgstore.Store (PostgreSQL) implement it; what only one
// of them has is in the optional interfaces below.
type JobStore interface {
	httpapi.Store
	EnsureDefaultAccount(spendCapCents int64) (store.Account, string, error)
	ClaimJob() (store.Job, bool, error)
	FinishJob(jobID string, attempt int, o store.Outcome) (store.Job, error)
	ExpireJobs(limit int) (deleted []string, more bool, err error)
	PurgeIdempotencyKeys() (int, error)
	JobExists(jobID string) (bool, error)
	JobUploadState(jobID string) (store.UploadState, error)
	RequeueJob(jobID string, attempt, maxAttempts int, reason string) (job store.Job, requeued bool, err error)
	NextExpiry() (time.Time, bool, error)
	Counts() (store.Counts, error)
	Waiters() int
	Ping() error
	Close() error
}

// ObjectStorage is everything the service needs from object storage: signed URLs and sealing
// for the API, inputs and outputs for the workers, listing and deletion for the sweeper.
// localObjects (the blob store in the data dir) implements it.
type ObjectStorage interface {
	httpapi.Blobs
	OpenInput(jobID string) (*os.File, error)
	CreateOutput(jobID string) (convert.OutputFile, error)
	Delete(jobID string) error
	DeleteInput(jobID string) error
	JobIDs() ([]string, error)
	InputIDs() ([]string, error)
}

// objectHandler is implemented by object storage that serves its own URLs on this node's
// --blob-listen (the local blob store); S3 serves them itself.
type objectHandler interface {
	HandlerWith(blobstore.HandlerConfig) http.Handler
}

// startupRecoverer is a store whose running jobs can only be this process's, so that whatever
// is running at start was left by a crash (bbolt).
type startupRecoverer interface {
	RecoverRunning(maxAttempts int) (requeued, failed []string, err error)
}

// leasedStore is a store shared by several nodes (PostgreSQL): a running job holds a lease
// that its worker renews, and every node requeues the jobs whose lease lapsed.
type leasedStore interface {
	Heartbeat(jobID string, attempt int) (bool, error)
	ReapExpiredLeases(maxAttempts int) (requeued, failed []string, err error)
	Lease() time.Duration
}

// rateWindowStore keeps the per-key write windows shared by every node (PostgreSQL).
type rateWindowStore interface {
	httpapi.WriteLimiter
	PurgeRateWindows(window time.Duration) (int, error)
}

// Compile-time checks that both backends fit the seams.
var (
	_ JobStore         = (*store.Store)(nil)
	_ JobStore         = (*pgstore.Store)(nil)
	_ startupRecoverer = (*store.Store)(nil)
	_ leasedStore      = (*pgstore.Store)(nil)
	_ rateWindowStore  = (*pgstore.Store)(nil)
	_ ObjectStorage    = localObjects{}
	_ objectHandler    = localObjects{}
)

// localObjects is the blob store in the data dir as ObjectStorage.
type localObjects struct{ *blobstore.Store }

// CreateOutput starts a job's output in the blob store; the blob store's faults are
// convert.StorageErrors, so the job is retried instead of failed.
func (l localObjects) CreateOutput(jobID string) (convert.OutputFile, error) {
	p, err := l.Store.CreateOutput(jobID)
	if err != nil {
		return nil, storageError(err)
	}
	return &pendingOutput{p: p}, nil
}

// IsPostgresURL reports whether a --database value names a PostgreSQL server rather than a
// bbolt file.
func IsPostgresURL(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// DatabaseURLWithPassword puts password into a postgres:// URL that has none; a URL that
// carries a password keeps it.
func DatabaseURLWithPassword(database, password string) (string, error) {
	if password == "" {
		return database, nil
	}
	u, err := url.Parse(database)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	if u.User == nil {
		return "", fmt.Errorf("database URL: a password needs a user name in the URL (postgres://USER@HOST/DB)")
	}
	if _, set := u.User.Password(); set {
		return database, nil
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String(), nil
}

// MaskDatabaseURL hides the password of a postgres:// URL, for convsvc config and logs.
func MaskDatabaseURL(database string) string {
	if !IsPostgresURL(database) {
		return database
	}
	u, err := url.Parse(database)
	if err != nil {
		return "(unparsable postgres URL)"
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// openJobStore opens the configured database: the bbolt file (default DATA/convsvc.db, or a
// path) or PostgreSQL.
func (m *Main) openJobStore() error {
	cfg := m.cfg
	if IsPostgresURL(cfg.Database) {
		if cfg.AdminToken == "" {
			return fmt.Errorf("with a PostgreSQL --database every node needs the same admin token: set --admin-token, CONVSVC_ADMIN_TOKEN or CONVSVC_ADMIN_TOKEN_FILE")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pg, err := pgstore.Open(ctx, cfg.Database, pgstore.Options{Retention: cfg.Retention, Lease: cfg.Lease, Logger: m.log})
		if err != nil {
			return fmt.Errorf("open database %s: %w", MaskDatabaseURL(cfg.Database), err)
		}
		m.store = pg
		return nil
	}
	path := cfg.Database
	if path == "" {
		path = filepath.Join(cfg.DataDir, "convsvc.db")
	}
	st, err := store.Open(path, store.Options{Retention: cfg.Retention})
	if err != nil {
		return err
	}
	m.store = st
	return nil
}
