package service

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/aws"
	"io"
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
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/store"
)

// JobStore is everything the service (API, worker queue, sweeper, metrics) needs from the job
// database. *store.Store (bbolt) and *pgstore.Store (PostgreSQL) implement it; what only one
// of them has is in the optional interfaces below. Both are opened with Main.jobFinished as
// their store.FinishHook (Options.OnFinished), which reports every job that reached a final
// state after its commit (cleanup.go).
type JobStore interface {
	httpapi.Store
	EnsureDefaultAccount(spendCapCents int64) (store.Account, string, error)
	ClaimJob() (store.Job, bool, error)
	FinishJob(jobID string, attempt int, o store.Outcome) (store.Job, error)
	ExpireJobs(limit int) (deleted []string, more bool, err error)
	PurgeIdempotencyKeys() (int, error)
	JobExists(jobID string) (bool, error)
	Unowned(ids []string) ([]string, error)
	JobUploadState(jobID string) (store.UploadState, error)
	ClosedUploads(ids []string) ([]string, error)
	RequeueJob(jobID string, attempt, maxAttempts int, reason string) (job store.Job, requeued bool, err error)
	NextExpiry() (time.Time, bool, error)
	Counts() (store.Counts, error)
	// The conversion cache's references and entries (store/cache.go).
	OutputHeld(jobID string) (bool, error)
	DeadOutputs() ([]string, error)
	ForgetDeadOutputs(ids []string) error
	CachedOutput(key string) (store.CacheEntry, bool, error)
	DropCacheEntry(key string) error
	CacheStats() (store.CacheStats, error)
	FinishFromCache(jobID string, attempt int) (store.Job, bool, error)
	Waiters() int
	Ping() error
	Close() error
}

// ObjectStorage is everything the service needs from object storage: signed URLs and sealing
// for the API, inputs and outputs for the workers, listing and deletion for the sweeper.
// localObjects (the blob store in the data dir) and s3Objects (an S3 bucket) implement it.
type ObjectStorage interface {
	httpapi.Blobs
	// OpenInput opens the input the job's start sealed (job.Upload where it is recorded).
	OpenInput(job store.Job) (*os.File, error)
	// CreateOutput starts the output of one attempt of the job; storage that keeps outputs
	// per attempt (S3) never lets it replace another attempt's.
	CreateOutput(jobID string, attempt int) (convert.OutputFile, error)
	Delete(jobID string) error
	DeleteInput(jobID string) error
	JobIDs() ([]string, error)
	InputIDs() ([]string, error)
	// JobIDsAfter and InputIDsAfter are JobIDs and InputIDs from the first id after after,
	// at most limit ids (fewer: the listing ended), for the periodic sweep's turns.
	JobIDsAfter(after string, limit int) ([]string, error)
	InputIDsAfter(after string, limit int) ([]string, error)
	// ImportInput stores size bytes of r as the job's input, for an input the server fetched
	// itself (source_url); OpenInput then reads it.
	ImportInput(ctx context.Context, jobID string, r io.ReadSeeker, size int64) error
	// OpenOutput streams the output an attempt of the job committed, with its size.
	OpenOutput(ctx context.Context, jobID string, attempt int) (io.ReadCloser, int64, error)
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
	_ JobStore                 = (*store.Store)(nil)
	_ JobStore                 = (*pgstore.Store)(nil)
	_ httpapi.GateWriteLimiter = (*pgstore.Store)(nil)
	_ startupRecoverer         = (*store.Store)(nil)
	_ leasedStore              = (*pgstore.Store)(nil)
	_ rateWindowStore          = (*pgstore.Store)(nil)
	_ ObjectStorage            = localObjects{}
	_ objectHandler            = localObjects{}
	_ ObjectStorage            = s3Objects{}
)

// localObjects is the blob store in the data dir as ObjectStorage.
type localObjects struct{ *blobstore.Store }

// DownloadURL signs the download of the job's output.
func (l localObjects) DownloadURL(job store.Job, expires time.Time) string {
	var size int64
	if job.Output != nil {
		size = job.Output.Bytes
	}
	return l.Store.DownloadURL(job.ObjectID(), size, expires)
}

// Seal runs start with the upload's size and SHA-256 (the hash its PUT took while receiving
// it; for start's input_sha256 check and the conversion cache) while no upload to the job can
// land.
func (l localObjects) Seal(jobID string, start func(store.Upload) error) error {
	return l.Store.Seal(jobID, func(size int64) error {
		sum, err := l.Store.UploadSHA256(jobID)
		if err != nil {
			return err
		}
		return start(store.Upload{Size: size, SHA256: sum})
	})
}

// OpenInput opens the job's sealed input: once sealed, the blob store's file cannot change.
func (l localObjects) OpenInput(job store.Job) (*os.File, error) { return l.Store.OpenInput(job.ID) }

// CreateOutput starts a job's output in the blob store (one output per job, whatever the
// attempt); the blob store's faults are convert.StorageErrors, so the job is retried instead
// of failed.
func (l localObjects) CreateOutput(jobID string, _ int) (convert.OutputFile, error) {
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
		pg, err := pgstore.Open(ctx, cfg.Database, pgstore.Options{Retention: cfg.Retention, Lease: cfg.Lease, Logger: m.log, OnFinished: m.jobFinished,
			CacheMaxBytes: max(cfg.CacheMaxBytes, 0), CacheHitCents: cfg.CacheHitCents})
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
	st, err := store.Open(path, store.Options{Retention: cfg.Retention, OnFinished: m.jobFinished, CacheMaxBytes: max(cfg.CacheMaxBytes, 0),
		CacheHitCents: cfg.CacheHitCents})
	if err != nil {
		return err
	}
	m.store = st
	return nil
}

// S3Config is how to reach the bucket of an s3:// ObjectStorage.
type S3Config struct {
	// Endpoint is the S3 API's base URL (MinIO, Ceph, versitygw, ...); empty for AWS.
	Endpoint string
	// Region signs the requests (required; us-east-1 suits most self-hosted servers).
	Region string
	// PathStyle addresses ENDPOINT/BUCKET/KEY rather than BUCKET.ENDPOINT/KEY; nil means
	// on when an Endpoint is given and off for AWS.
	PathStyle *bool
	// AccessKey, SecretKey and SessionToken are static credentials; when AccessKey is empty
	// Credentials provides them, and without it the AWS SDK's default chain (variables,
	// shared profiles, web identity, ECS container and EC2 instance roles).
	AccessKey, SecretKey, SessionToken string
	// Credentials is used when AccessKey is empty (for embedders with their own provider).
	Credentials aws.CredentialsProvider
}

// UsesPathStyle is whether requests address the bucket in the path.
func (c S3Config) UsesPathStyle() bool {
	if c.PathStyle != nil {
		return *c.PathStyle
	}
	return c.Endpoint != ""
}

// S3StoreOptions are the s3store options for the s3:// objectStorage reached as c says: its
// region is required, and without static keys or c.Credentials the AWS SDK's default chain is
// asked for credentials at once (so a missing source fails here, naming those it tried). serve
// and admin migrate both open their buckets through it.
func S3StoreOptions(objectStorage string, c S3Config) (s3store.Options, error) {
	bucket, prefix, ok, err := ParseObjectStorage(objectStorage)
	if err != nil {
		return s3store.Options{}, err
	}
	if !ok {
		return s3store.Options{}, fmt.Errorf("object storage %q is not an s3:// URL", objectStorage)
	}
	if c.Region == "" {
		return s3store.Options{}, fmt.Errorf("object storage %s needs a region: set --s3-region or CONVSVC_S3_REGION", objectStorage)
	}
	opts := s3store.Options{
		Endpoint: c.Endpoint, Region: c.Region, Bucket: bucket, Prefix: prefix,
		AccessKey: c.AccessKey, SecretKey: c.SecretKey, SessionToken: c.SessionToken,
		PathStyle: c.UsesPathStyle(),
	}
	if opts.AccessKey == "" {
		opts.Credentials = c.Credentials
	}
	if opts.AccessKey == "" && opts.Credentials == nil {
		if opts.Credentials, err = defaultS3Credentials(objectStorage, c.Region); err != nil {
			return s3store.Options{}, err
		}
	}
	return opts, nil
}

// openS3 opens the bucket of an s3:// ObjectStorage, or returns nil for the local blob store.
// Inputs are downloaded to scratch and outputs written there before their upload.
func (m *Main) openS3(scratch string) (ObjectStorage, error) {
	cfg := m.cfg
	if _, _, ok, err := ParseObjectStorage(cfg.ObjectStorage); err != nil || !ok {
		return nil, err
	}
	opts, err := S3StoreOptions(cfg.ObjectStorage, cfg.S3)
	if err != nil {
		return nil, err
	}
	opts.ScratchDir = scratch
	s, err := s3store.New(opts)
	if err != nil {
		return nil, fmt.Errorf("object storage %s: %w", cfg.ObjectStorage, err)
	}
	return s3Objects{s: s, extension: func(job store.Job) string {
		var opts convert.Options
		if len(job.Options) > 0 {
			_ = json.Unmarshal(job.Options, &opts) // validated at create
		}
		if f := m.catalog.OutputFormat(job.TargetFormat, opts); len(f.Extensions) > 0 {
			return f.Extensions[0]
		}
		return ""
	}}, nil
}
