// Package service wires the store, the blob store, the converters and the HTTP API into one
// running convsvc: Run starts it without blocking, Shutdown drains it, Close stops it.
package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/internal/gcfloor"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
	"github.com/convsvc/convsvc/worker"
)

// Config is every setting of a running service; cli fills it from flags and environment.
type Config struct {
	DataDir string
	// Database is the job database: empty for DATA/convsvc.db (bbolt), a file path for a bbolt
	// file elsewhere, or a postgres:// URL shared by any number of nodes (docs/scaling.md).
	Database string
	// Lease is how long a PostgreSQL claim lasts without a heartbeat (default 30s); the worker
	// renews it every third of that, and every node requeues jobs whose lease lapsed.
	Lease time.Duration
	// ObjectStorage is where uploads and outputs live: empty (or "local") for the blob store
	// in DATA/blobs, served on BlobListen; or s3://BUCKET/PREFIX, an S3-compatible bucket
	// that clients reach through presigned URLs (S3 holds the rest of its settings).
	ObjectStorage string
	S3            S3Config
	Listen        string // API address, e.g. 127.0.0.1:8080 (":0" picks a port)
	BlobListen    string // object-storage address (the local blob store only)
	PublicURL     string // API base URL clients see; default from the listener
	BlobPublicURL string // object-storage base URL clients see; default from the listener
	// MetricsListen, when set, serves GET /metrics on this address instead of the API's.
	MetricsListen string
	Workers       int
	// ProgressInterval is how often a running job's progress is sampled and reported, at
	// most (0: convert.DefaultProgressInterval, a second); tests set it shorter.
	ProgressInterval time.Duration
	Retention        time.Duration
	// CacheScope is who shares the conversion cache: httpapi.CacheScopeAccount ("" too) or
	// httpapi.CacheScopeGlobal (docs/cache.md).
	CacheScope string
	// CacheMaxBytes bounds the bytes of the cached outputs (0: DefaultCacheMaxBytes); past it
	// the least recently used entries are evicted. Negative turns the cache off.
	CacheMaxBytes int64
	// CacheHitCents is what a job answered from the conversion cache is charged instead of
	// SPEC's 1 cent (--cache-hit-cents; 0: free); nil: 1 cent.
	CacheHitCents        *int64
	MaxAttempts          int
	DrainTimeout         time.Duration
	ConversionTimeout    time.Duration
	AdminToken           string
	DefaultSpendCapCents int64
	MaxPixels            int64
	// MaxConversionMemory bounds the memory running conversions may hold together, in bytes
	// (0: half of the machine's memory).
	MaxConversionMemory int64
	// MaxOutputRatio and MaxOutputBytes bound what one conversion writes, relative to its
	// input and absolutely (convert.Limits; 0: convert's defaults).
	MaxOutputRatio float64
	MaxOutputBytes int64
	// MemoryTrimDelay is how long the workers stay idle before the memory their conversions
	// left behind goes back to the system (internal/gcfloor.Trimmer): 0 for
	// gcfloor.DefaultTrimDelay, negative for never.
	MemoryTrimDelay time.Duration
	SweepInterval   time.Duration
	// TrustedProxies are the reverse proxies whose Forwarded / X-Forwarded-For header names
	// the client for per-address limits (httpapi.Config.TrustedProxies).
	TrustedProxies []netip.Prefix
	// StorageProgressTimeout cuts an object-storage upload or download that moves less than
	// 64 KiB in this time (default blobstore.DefaultProgressTimeout; negative: never).
	StorageProgressTimeout time.Duration
	// MaxConnections caps each listener's open connections (API, object storage); 0 sizes it
	// from the open-file limit, which serve raises to its hard limit; negative: no cap.
	MaxConnections int
	// MaxConnectionsPerAddress caps one client address's open connections on each listener
	// (0: DefaultMaxConnectionsPerAddress or a quarter of MaxConnections, whichever is
	// smaller, so one address never fills a listener; negative: no cap).
	MaxConnectionsPerAddress int
	// MaxWaitsPerKey bounds the long polls (?wait=) one API key holds at once; one over it is
	// answered at once (0: httpapi.DefaultMaxWaitsPerKey).
	MaxWaitsPerKey int
	// MaxStreamsPerKey bounds the event streams (GET /v1/events, /v1/jobs/{id}/events) one API
	// key holds at once; one over it is 429 (0: httpapi.DefaultMaxStreamsPerKey).
	// StreamHeartbeat is how often an idle stream sends a comment line (0:
	// httpapi.DefaultStreamHeartbeat); StreamWriteTimeout drops a stream whose client stopped
	// reading (0: httpapi.DefaultStreamWriteTimeout).
	MaxStreamsPerKey                    int
	StreamHeartbeat, StreamWriteTimeout time.Duration
	// CORSOrigins are the web origins whose pages may upload to and download from object
	// storage (scheme://host[:port], or "*"); empty means the API's own origin, for its page.
	CORSOrigins []string
	// WriteLimit is each key's job writes (create, start, cancel) per RateWindow (0: the
	// API's default, 120); RateWindow is that window (0: one minute). serve has no flag for
	// either: they are for tests of clients under the limit.
	WriteLimit int
	// ReadLimit is each key's job reads per RateWindow (0: the API's default, 1200). The
	// embedded server of convsvc convert, the user's own process, sets both limits past
	// reach (cli's embeddedNoLimit).
	ReadLimit  int
	RateWindow time.Duration
	Logger     *slog.Logger
	// WebhookAllowPrivate lets webhooks go to loopback, private and link-local destinations
	// (--webhook-allow-private: tests and trusted networks).
	WebhookAllowPrivate bool
	// WebhookSecretOverlap is how long an account's replaced signing secret keeps signing
	// beside the new one after a rotation (--webhook-secret-overlap; 0: webhook.SecretOverlap).
	WebhookSecretOverlap time.Duration
	// WebhookTimeout bounds one delivery attempt (0: webhook.DefaultTimeout); WebhookPoll is
	// how often the dispatcher looks for due retries (0: DefaultWebhookPoll); WebhookBackoff
	// and WebhookPause, when set, replace webhook.Backoff and webhook.DestinationPause (tests).
	// serve has flags for none of them.
	WebhookTimeout time.Duration
	// FetchAllowPrivate lets source_url fetches and deliver_to PUTs reach loopback, private
	// and link-local addresses (--fetch-allow-private: tests and trusted networks).
	FetchAllowPrivate bool
	// DeliveryBackoff, when set, replaces the wait between deliver_to attempts (tests).
	DeliveryBackoff func(attempt int) time.Duration
	WebhookPoll     time.Duration
	WebhookBackoff  func(attempt int) time.Duration
	WebhookPause    func(failures int) time.Duration
	// Isolation is where conversions run: IsolationProcess in worker processes (package
	// worker: killed on cancel, capped in memory, confined), IsolationNone or "" in this
	// process. serve's --isolation defaults to process on Linux.
	Isolation string
	// WorkerCommand starts a worker process (worker.Config.Command); default this executable
	// with the argument "worker". Test binaries point it at themselves (worker.IsChild).
	WorkerCommand []string
	// FontDir is the font directory worker processes read (serve's --font-dir).
	FontDir string
	// OnDefaultKey is called once when serve created account "default" on an empty data dir,
	// with the key that will never be shown again.
	OnDefaultKey func(accountID, key string)
}

// Defaults of DESIGN.md.
const (
	DefaultRetention = 24 * time.Hour
	// DefaultCacheMaxBytes bounds the conversion cache's outputs (--cache-max-bytes).
	DefaultCacheMaxBytes     int64 = 1 << 30
	DefaultDrainTimeout            = 30 * time.Second
	DefaultConversionTimeout       = 10 * time.Minute
	DefaultSpendCapCents           = 100_000
	DefaultMaxPixels               = 100_000_000
)

// Defaults fills the zero fields of c with DESIGN.md's defaults.
func (c *Config) Defaults() {
	if c.DataDir == "" {
		c.DataDir = "./convsvc-data"
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.BlobListen == "" {
		c.BlobListen = "127.0.0.1:8081"
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.CacheMaxBytes == 0 {
		c.CacheMaxBytes = DefaultCacheMaxBytes
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.MemoryTrimDelay == 0 {
		c.MemoryTrimDelay = gcfloor.DefaultTrimDelay
	}
	if c.ConversionTimeout <= 0 {
		c.ConversionTimeout = DefaultConversionTimeout
	}
	if c.DefaultSpendCapCents <= 0 {
		c.DefaultSpendCapCents = DefaultSpendCapCents
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Main is a running convsvc.
type Main struct {
	cfg Config
	// cache counts the conversion cache's hits and misses (cache.go).
	cache    cacheCounts
	log      *slog.Logger
	store    JobStore
	blobs    ObjectStorage
	catalog  *convert.Catalog
	pool     *convert.Pool
	workers  *worker.Pool // the worker processes; nil with IsolationNone
	trimmer  *gcfloor.Trimmer
	api      *httpapi.Server
	progress *store.ProgressHub // running jobs' progress (events.go)
	metrics  *metrics
	apiSrv   *http.Server
	blobSrv  *http.Server
	metSrv   *http.Server // nil unless MetricsListen is set
	apiURL   string
	blobURL  string
	metURL   string
	draining atomic.Bool
	// sweepAt is when the sweeper will next look for expired jobs (unix nanoseconds); a job
	// created with an earlier expires_at wakes it through expiryWake.
	sweepAt atomic.Int64
	// apiLimit and blobLimit cap the listeners' connections (nil: no cap).
	apiLimit, blobLimit *connLimiter
	expiryWake          chan struct{}
	// cleaner deletes finished jobs' inputs (the stores' FinishHook queues them).
	cleaner *inputCleaner
	// inputTurn and fileTurn are where the periodic sweep's dead-input and orphan passes
	// stopped in their listings.
	inputTurn, fileTurn fileCursor

	stop   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once

	// metLimit caps the metrics listener's connections (nil: no cap, or no MetricsListen).
	metLimit *connLimiter
}

// Run opens the data dir, recovers jobs a crash left running, and starts serving. It does not block.
func Run(cfg Config) (*Main, error) {
	cfg.Defaults()
	m := &Main{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), expiryWake: make(chan struct{}, 1), cleaner: newInputCleaner()}
	if err := m.open(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Main) open() error {
	cfg := m.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := m.openJobStore(); err != nil {
		return err
	}
	var err error
	if cfg.AdminToken == "" {
		if cfg.AdminToken, err = loadOrCreateSecret(filepath.Join(cfg.DataDir, "admin.token")); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		m.cfg.AdminToken = cfg.AdminToken
	}
	acct, key, err := m.store.EnsureDefaultAccount(cfg.DefaultSpendCapCents)
	if err != nil {
		return fmt.Errorf("create default account: %w", err)
	}
	if key != "" && cfg.OnDefaultKey != nil {
		cfg.OnDefaultKey(acct.ID, key)
	}
	if rec, ok := m.store.(startupRecoverer); ok {
		requeued, failed, err := rec.RecoverRunning(cfg.MaxAttempts)
		if err != nil {
			return fmt.Errorf("recover running jobs: %w", err)
		}
		if len(requeued)+len(failed) > 0 {
			m.log.Warn("recovered jobs left running by a crash", "requeued", len(requeued), "failed", len(failed))
		}
		m.logRequeued(requeued, failed, "requeued_after_crash")
	}

	apiLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (change it with --listen)", cfg.Listen, err)
	}
	m.apiURL = publicURL(cfg.PublicURL, apiLn)
	m.catalog = standard.NewCatalog(convert.Limits{MaxPixels: cfg.MaxPixels, MaxConversionMemory: cfg.MaxConversionMemory,
		MaxOutputRatio: cfg.MaxOutputRatio, MaxOutputBytes: cfg.MaxOutputBytes})
	scratch := filepath.Join(cfg.DataDir, "scratch")
	os.RemoveAll(scratch) // whatever a crash left behind
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		apiLn.Close()
		return fmt.Errorf("create scratch dir: %w", err)
	}

	var blobLn net.Listener
	var local *blobstore.Store
	if s3, err := m.openS3(scratch); err != nil {
		apiLn.Close()
		return err
	} else if s3 != nil {
		m.blobs = s3
		apiLn, _ = m.limitConnections(apiLn, nil)
	} else {
		if blobLn, err = net.Listen("tcp", cfg.BlobListen); err != nil {
			apiLn.Close()
			return fmt.Errorf("listen on %s: %w (change it with --blob-listen)", cfg.BlobListen, err)
		}
		m.blobURL = publicURL(cfg.BlobPublicURL, blobLn)
		apiLn, blobLn = m.limitConnections(apiLn, blobLn)
		// JobState: the job store's start commit is what seals an upload (blobstore.Seal), and a
		// finished job takes none (cleanup.go).
		local, err = blobstore.Open(blobstore.Config{Dir: filepath.Join(cfg.DataDir, "blobs"), PublicURL: m.blobURL, Logger: m.log, JobState: uploadState(m.store)})
		if err != nil {
			apiLn.Close()
			blobLn.Close()
			return fmt.Errorf("open blob store: %w", err)
		}
		m.blobs = localObjects{local}
	}
	var runner convert.Runner
	if m.cfg.Isolation == IsolationProcess {
		if m.workers, err = worker.New(worker.Config{Workers: cfg.Workers, Limits: m.catalog.Limits(), Budget: m.catalog, FontDir: cfg.FontDir,
			ScratchDir: scratch, Command: cfg.WorkerCommand, Logger: m.log}); err == nil {
			err = m.workers.Start()
		}
		if err != nil {
			apiLn.Close()
			if blobLn != nil {
				blobLn.Close()
			}
			return fmt.Errorf("starting the conversion worker processes: %w (--isolation none runs conversions in the server's process)", err)
		}
		runner = m.workers
	}
	m.startInputCleaner()
	// The busy-workers gauge asks the pool, which exists before anything can scrape.
	m.metrics = newMetrics(m.store, cfg.Workers, func() int { return m.pool.Running() }, func() int { return m.pool.Strays() })
	m.metrics.countCache(m.store, &m.cache)
	queue := newJobQueue(m.store, m.blobs, m.log, m.metrics, cfg.MaxAttempts)
	m.pool = convert.NewPool(convert.PoolConfig{
		Workers:          cfg.Workers,
		Timeout:          cfg.ConversionTimeout,
		ScratchDir:       scratch,
		Logger:           m.log,
		StrayReturned:    m.metrics.strayReturned,
		Runner:           runner,
		Progress:         queue.reportProgress(m.newProgressHub()),
		ProgressInterval: cfg.ProgressInterval,
	}, m.catalog, queue, jobFiles{blobs: m.blobs, queue: queue, shared: queue.shared(),
		remote: newRemoteIO(webhook.Guard{AllowPrivate: cfg.FetchAllowPrivate}, cfg.StorageProgressTimeout, scratch, cfg.DeliveryBackoff, m.log)})
	queue.cancel = m.pool.Cancel
	m.trimmer = gcfloor.NewTrimmer(cfg.MemoryTrimDelay, func() bool { return m.pool.Running() > 0 })
	queue.jobDone = m.trimmer.JobDone

	m.metrics.countWorkers(m.workers)
	m.metrics.countMemoryBudget(m.catalog)
	m.metrics.countRefused("api", m.apiLimit)
	m.metrics.countRefused("storage", m.blobLimit)

	var metLn net.Listener
	metricsHandler := m.metrics.handler(m.log)
	if cfg.MetricsListen != "" {
		if metLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			apiLn.Close()
			if blobLn != nil {
				blobLn.Close()
			}
			return fmt.Errorf("listen on %s: %w (change it with --metrics-listen)", cfg.MetricsListen, err)
		}
		m.metURL = "http://" + metLn.Addr().String()
		metLn = m.limitMetrics(metLn)
		m.metrics.countRefused("metrics", m.metLimit)
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsHandler)
		m.metSrv = newHTTPServer(httpapi.Observed(mux, httpapi.Observe{
			Logger: m.log, Metrics: m.metrics.http, Server: "metrics",
			Route: func(r *http.Request) string {
				if r.URL.Path == "/metrics" {
					return "/metrics"
				}
				return httpapi.RouteUnmatched
			},
		}), m.log)
		metricsHandler = nil // not on the API listener too
	}

	var writeLimiter httpapi.WriteLimiter
	if rw, ok := m.store.(rateWindowStore); ok {
		writeLimiter = rw
	}
	m.api = httpapi.New(httpapi.Config{
		WriteLimiter:   writeLimiter,
		Store:          apiStore{JobStore: m.store, created: m.jobCreated},
		Blobs:          m.blobs,
		Catalog:        m.catalog,
		Workers:        m.pool,
		Logger:         m.log,
		AdminToken:     cfg.AdminToken,
		Ready:          m.notReadyReasons,
		ReadyDetails:   m.readyDetails,
		Metrics:        m.metrics.http,
		MetricsHandler: metricsHandler,
		TrustedProxies: cfg.TrustedProxies,
		MaxWaitsPerKey: cfg.MaxWaitsPerKey,
		// Event streams (events.go).
		MaxStreamsPerKey:   cfg.MaxStreamsPerKey,
		StreamHeartbeat:    cfg.StreamHeartbeat,
		StreamWriteTimeout: cfg.StreamWriteTimeout,
		Progress:           m.progress,
		WriteLimit:         cfg.WriteLimit,
		ReadLimit:          cfg.ReadLimit,
		RateWindow:         cfg.RateWindow,
		Webhooks:           webhookAPIStore(m.store),
		WebhookGuard:       webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate},
		ObjectStorage:      objectStorageKind(local),
		Cache:              m.cacheConfig(),

		// The signing secret's rotation overlap (--webhook-secret-overlap).
		WebhookSecretOverlap: cfg.WebhookSecretOverlap,
	})
	m.apiSrv = newHTTPServer(m.api, m.log)
	m.apiSrv.RegisterOnShutdown(m.api.CloseStreams) // a drain ends the event streams
	m.metrics.countLongPolls(m.api.LongPolls)
	m.metrics.countStreams(m.api.Streams)
	corsOrigins := cfg.CORSOrigins
	if len(corsOrigins) == 0 {
		corsOrigins = defaultCORSOrigins(m.apiURL)
	}
	if local != nil {
		blobHandler := countBytes(local.CORS(local.HandlerWith(blobstore.HandlerConfig{ProgressTimeout: cfg.StorageProgressTimeout}), corsOrigins), m.metrics.blobBytes.WithLabelValues("upload"), m.metrics.blobBytes.WithLabelValues("download"))
		m.blobSrv = newHTTPServer(httpapi.Observed(blobHandler, httpapi.Observe{
			Logger: m.log, Metrics: m.metrics.http, Server: "storage", Route: httpapi.StorageRoute,
		}), m.log)
		// Object storage uploads up to 2 GB: no whole-request read timeout there, only the
		// handler's progress deadlines (--storage-progress-timeout) and the idle ones.
		m.blobSrv.ReadTimeout = 0
		m.blobSrv.WriteTimeout = 0
	}

	m.pool.Start()
	m.startSharedStore(queue)
	m.startWebhooks()
	m.serve(m.apiSrv, apiLn)
	if m.blobSrv != nil {
		m.serve(m.blobSrv, blobLn)
	}
	if m.metSrv != nil {
		m.serve(m.metSrv, metLn)
	}
	m.wg.Add(1)
	go m.sweepLoop()
	objects := m.blobURL
	if objects == "" {
		objects = cfg.ObjectStorage
	}
	m.log.Info("convsvc serving", "api", m.apiURL, "object_storage", objects, "metrics", m.MetricsURL(), "data", cfg.DataDir, "workers", cfg.Workers)
	return nil
}

// limitConnections raises the open-file limit and caps both listeners' connections within it
// (Config.MaxConnections, MaxConnectionsPerAddress), keeping descriptors for the database,
// blob files and conversions.
func (m *Main) limitConnections(apiLn, blobLn net.Listener) (net.Listener, net.Listener) {
	cfg := m.cfg
	fileLimit, err := raiseFileLimit()
	if err != nil {
		m.log.Warn("could not raise the open-file limit to its hard limit", "limit", fileLimit, "error", err)
	}
	limit, perAddr := ConnectionLimits(fileLimit, cfg.Workers, cfg.MaxConnections, cfg.MaxConnectionsPerAddress)
	if budget := connectionBudget(fileLimit, cfg.Workers); cfg.MaxConnections > budget && fileLimit > 0 {
		m.log.Warn("--max-connections leaves too few file descriptors for the database, files and conversions; raise the open-file limit (ulimit -n) or lower it",
			"max_connections", cfg.MaxConnections, "open_file_limit", fileLimit, "suggested", budget)
	}
	m.log.Info("connection limits", "open_file_limit", fileLimit, "max_connections", limit, "max_connections_per_address", perAddr)
	if limit == 0 && perAddr == 0 {
		return apiLn, blobLn
	}
	m.apiLimit = newConnLimiter(apiLn, "api", limit, perAddr, m.log)
	m.apiLimit.trusted = cfg.TrustedProxies
	if blobLn == nil { // object storage is S3's
		return m.apiLimit, nil
	}
	m.blobLimit = newConnLimiter(blobLn, "storage", limit, perAddr, m.log)
	m.blobLimit.trusted = cfg.TrustedProxies
	return m.apiLimit, m.blobLimit
}

// ConnectionLimits returns the caps serve puts on each listener: its open connections and
// those of one client address (0: no cap), from --max-connections and
// --max-connections-per-address (0: the default, -1: no cap), the open-file limit serve runs
// with (FileLimit; 0: unknown) and the number of workers.
func ConnectionLimits(fileLimit uint64, workers, maxConnections, maxPerAddress int) (limit, perAddr int) {
	limit = maxConnections
	switch {
	case limit == 0:
		limit = connectionBudget(fileLimit, workers)
	case limit < 0:
		limit = 0
	}
	perAddr = maxPerAddress
	switch {
	case perAddr == 0 && limit > 0:
		perAddr = min(DefaultMaxConnectionsPerAddress, max(limit/4, 1))
	case perAddr == 0:
		perAddr = DefaultMaxConnectionsPerAddress
	case perAddr < 0:
		perAddr = 0
	}
	return limit, perAddr
}

// The metrics listener's caps (--metrics-listen): a scraper holds one connection, so a few
// serve any setup, and the caps keep a runaway client from spending descriptors the API,
// object storage and conversions need.
const (
	metricsMaxConnections           = 16
	metricsMaxConnectionsPerAddress = 4
)

// limitMetrics caps the metrics listener's connections with the API's limiter: at most
// metricsMaxConnections, and metricsMaxConnectionsPerAddress from one address, or the
// --max-connections and --max-connections-per-address given if they are smaller; either
// set to -1 (no cap) lifts the matching cap here too.
func (m *Main) limitMetrics(ln net.Listener) net.Listener {
	capOf := func(set, small int) int {
		switch {
		case set < 0:
			return 0
		case set == 0:
			return small
		default:
			return min(set, small)
		}
	}
	limit := capOf(m.cfg.MaxConnections, metricsMaxConnections)
	perAddr := capOf(m.cfg.MaxConnectionsPerAddress, metricsMaxConnectionsPerAddress)
	if limit == 0 && perAddr == 0 {
		return ln
	}
	m.metLimit = newConnLimiter(ln, "metrics", limit, perAddr, m.log)
	return m.metLimit
}

func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // /v1/jobs/{id}?wait=60 needs less
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func (m *Main) serve(srv *http.Server, ln net.Listener) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("server stopped", "error", err)
		}
	}()
}

// URL is the API's base URL.
func (m *Main) URL() string { return m.apiURL }

// BlobURL is the local blob store's base URL ("" when object storage is S3).
func (m *Main) BlobURL() string { return m.blobURL }

// MetricsURL is where GET /metrics is served: on the API, or on --metrics-listen.
func (m *Main) MetricsURL() string {
	if m.metURL != "" {
		return m.metURL + "/metrics"
	}
	return m.apiURL + "/metrics"
}

// Handler is the API's handler, request log and metrics included: tests can ask it while the
// listener is closed (for instance /readyz during a drain).
func (m *Main) Handler() http.Handler { return m.api }

// AdminToken is the token that authorises /v1/admin/....
func (m *Main) AdminToken() string { return m.cfg.AdminToken }

// Store gives tests and admin commands the bbolt database; nil when the job store is
// PostgreSQL (see JobStore).
func (m *Main) Store() *store.Store {
	st, _ := m.store.(*store.Store)
	return st
}

// JobStore is the job database in use, whichever backend it is.
func (m *Main) JobStore() JobStore { return m.store }

// Catalog is the format registry in use.
func (m *Main) Catalog() *convert.Catalog { return m.catalog }

// Values of Config.Isolation.
const (
	IsolationProcess = "process"
	IsolationNone    = "none"
)

// Isolation describes where conversions run and what confines them, for logs, /readyz and
// `convsvc config`.
func (m *Main) Isolation() (mode string, confinement []string) {
	if m.workers == nil {
		return IsolationNone, []string{"none: conversions run in the server's process"}
	}
	return IsolationProcess, m.workers.Confinement()
}

// readyDetails are /readyz's details: the isolation and what it applies.
func (m *Main) readyDetails() map[string]any {
	mode, conf := m.Isolation()
	return map[string]any{"isolation": mode, "confinement": conf}
}

// notReadyReasons says why the service should not get traffic, if it should not.
func (m *Main) notReadyReasons() []string {
	var reasons []string
	if m.draining.Load() {
		reasons = append(reasons, "draining: shutting down")
	}
	if err := m.store.Ping(); err != nil {
		reasons = append(reasons, "database not writable: "+err.Error())
	}
	if err := m.blobs.Check(); err != nil {
		reasons = append(reasons, "object storage not writable: "+err.Error())
	}
	return reasons
}

// Shutdown drains: readiness turns 503, workers stop claiming, running conversions get until
// ctx is done (then fail worker_shutdown), in-flight HTTP requests get the same time and at
// least httpGrace; then everything closes. Reaching the deadline is the normal end of a drain,
// not an error.
func (m *Main) Shutdown(ctx context.Context) error {
	m.draining.Store(true)
	m.log.Info("draining", "running", m.pool.Running())
	var wg sync.WaitGroup
	var errs [3]error
	httpCtx, cancel := context.WithTimeout(context.Background(), httpGrace)
	defer cancel()
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) > httpGrace {
		httpCtx = ctx
	}
	wg.Add(3)
	go func() { defer wg.Done(); errs[0] = m.pool.Shutdown(ctx) }()
	go func() { defer wg.Done(); errs[1] = shutdownHTTP(httpCtx, m.apiSrv) }()
	go func() {
		defer wg.Done()
		if m.blobSrv != nil {
			errs[2] = shutdownHTTP(httpCtx, m.blobSrv)
		}
	}()
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			errs[i] = nil
		}
	}
	// Close also stops the metrics listener: it stayed scrapeable until the end of the drain.
	return errors.Join(errs[0], errs[1], errs[2], m.Close())
}

// httpGrace is the least time in-flight HTTP requests get on shutdown.
const httpGrace = 5 * time.Second

// shutdownHTTP lets in-flight requests finish until ctx is done, then cuts the rest.
func shutdownHTTP(ctx context.Context, srv *http.Server) error {
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
		return err
	}
	return nil
}

// Close stops everything at once: the crash-like path, for tests and after Shutdown.
func (m *Main) Close() error {
	var err error
	m.closed.Do(func() {
		close(m.stop)
		if m.apiSrv != nil {
			m.apiSrv.Close()
			if m.blobSrv != nil {
				m.blobSrv.Close()
			}
		}
		if m.metSrv != nil {
			m.metSrv.Close()
		}
		if m.pool != nil {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			m.pool.Shutdown(ctx)
		}
		if m.workers != nil {
			m.workers.Close()
		}
		m.trimmer.Stop()
		m.wg.Wait()
		if m.store != nil {
			err = m.store.Close()
		}
	})
	return err
}

// minExpiryGap is the least time between two expiry passes, so that jobs expiring one after
// another are deleted in groups, not each in its own write transaction.
const minExpiryGap = 100 * time.Millisecond

// sweepLoop deletes expired jobs and their files when they expire: it sleeps until the
// earliest expires_at in the store (or a job created with an earlier one wakes it). At start
// it runs one whole pass (Sweep); every SweepInterval after that it forgets old idempotency
// keys, lets the rate limiter forget idle keys, and checks the next turn of the blob files
// (sweepTurn).
func (m *Main) sweepLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(m.cfg.SweepInterval)
	defer tick.Stop()
	due := time.NewTimer(m.cfg.SweepInterval)
	defer due.Stop()
	m.Sweep()
	for {
		m.armExpiry(due)
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.sweepTurn()
		case <-due.C:
			m.expireDue()
		case <-m.expiryWake:
		}
	}
}

// armExpiry sets t to fire at the store's earliest expiry, at least minExpiryGap from now,
// and at most SweepInterval from now.
func (m *Main) armExpiry(t *time.Timer) {
	wait := m.cfg.SweepInterval
	at, ok, err := m.store.NextExpiry()
	if err != nil {
		m.log.Error("read next expiry", "error", err)
	} else if ok {
		wait = min(max(time.Until(at), minExpiryGap), m.cfg.SweepInterval)
	}
	m.sweepAt.Store(time.Now().Add(wait).UnixNano())
	t.Reset(wait)
}

// jobCreated wakes the sweeper when a new job expires before its next pass.
func (m *Main) jobCreated(expiresAt time.Time) {
	if expiresAt.UnixNano() >= m.sweepAt.Load() {
		return
	}
	select {
	case m.expiryWake <- struct{}{}:
	default:
	}
}

// orphanBatch is how many blob files' ids the sweep's file passes check in one store call:
// a round trip per file made a pass over a large store a burst of queries (32,000 files,
// 32,000 statements every SweepInterval).
const orphanBatch = 1000

// inBatches asks pick about ids orphanBatch at a time and calls act for each id it picks; a
// batch that pick fails is logged with what and left for the next pass.
func (m *Main) inBatches(ids []string, pick func([]string) ([]string, error), what string, act func(id string)) {
	for len(ids) > 0 {
		batch := ids[:min(len(ids), orphanBatch)]
		ids = ids[len(batch):]
		picked, err := pick(batch)
		if err != nil {
			m.log.Warn(what, "error", err)
			continue
		}
		for _, id := range picked {
			act(id)
		}
	}
}

// filesPerTurn is the fewest files one periodic pass checks in each file pass (dead inputs,
// files no job owns); a pass takes a tenth of the listing when that is more, so each file is
// checked at least every ten passes (5 minutes at the default SweepInterval). Checking every
// file every pass cost one statement per 1,000 files, so on PostgreSQL a pass over 36,000
// files took about a second of the database's time every 30 s, and a million files a
// thousand statements; and on S3 each pass listed the whole bucket, five listings of a
// thousand keys a request (at a million objects about 2.9 million LIST requests a day). The
// files a turn leaves only wait longer: inputs of finished jobs and files of vanished jobs
// come from crashes, full queues and late S3 PUTs, and the cleaners take the common case at
// once.
const filesPerTurn = 5000

// fileCursor is where a file pass stopped in its listing, and how long the listing was.
type fileCursor struct {
	mu    sync.Mutex
	after string // the last id the pass checked; "" for the listing's start
	total int    // the listing's length: the last whole pass's, or the last cycle of turns'
	seen  int    // the ids this cycle of turns has checked so far
}

// next returns the ids this turn checks, as page lists them (sorted, from the first after
// its after argument, at most limit: ObjectStorage.JobIDsAfter): filesPerTurn or a tenth of
// the listing's last known length, whichever is more, after the cursor, which moves to the
// last of them. After the listing's end the next turn starts again from the first id; a
// listing that fits in one turn is checked whole every time. Only a turn's ids are listed
// where the storage can list from an id (S3).
func (c *fileCursor) next(page func(after string, limit int) ([]string, error)) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := max(filesPerTurn, (c.total+9)/10)
	ids, err := page(c.after, n)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 && c.after != "" { // the last turn ended on the listing's last id
		c.endCycle()
		if ids, err = page("", n); err != nil {
			return nil, err
		}
	}
	c.seen += len(ids)
	if len(ids) < n {
		c.endCycle()
	} else {
		c.after = ids[len(ids)-1]
	}
	return ids, nil
}

// endCycle starts the next cycle of turns at the listing's start, its length now known.
func (c *fileCursor) endCycle() { c.total, c.seen, c.after = c.seen, 0, "" }

// ids returns what a file pass checks: with whole, the listing (all), whose length the
// cursor then knows for its turns' size (the whole pass at start comes before the first
// turn); else the next turn (next, listing with page).
func (c *fileCursor) ids(whole bool, all func() ([]string, error), page func(after string, limit int) ([]string, error)) ([]string, error) {
	if !whole {
		return c.next(page)
	}
	ids, err := all()
	if err == nil {
		c.mu.Lock()
		c.total = len(ids)
		c.mu.Unlock()
	}
	return ids, err
}

// Sweep runs one whole retention pass: expired jobs, idempotency keys, every orphaned file
// and input of a finished job, and idle rate-limiter state.
func (m *Main) Sweep() { m.sweep(true) }

// sweepTurn is the periodic pass: Sweep, with each file pass checking the next turn of its
// listing (fileCursor) instead of every file.
func (m *Main) sweepTurn() { m.sweep(false) }

// sweep runs a retention pass whose dead-input and orphan passes check every file when whole,
// else the next turn of their listings.
func (m *Main) sweep(whole bool) {
	m.expireDue()
	m.sweepDeadInputs(whole)
	m.sweepDeadOutputs()
	if _, err := m.store.PurgeIdempotencyKeys(); err != nil {
		m.log.Error("purge idempotency keys", "error", err)
	}
	ids, err := m.fileTurn.ids(whole, m.blobs.JobIDs, m.blobs.JobIDsAfter)
	if err != nil {
		m.log.Warn("list blob files", "error", err)
	}
	m.inBatches(ids, m.store.Unowned, "check blob files' jobs", func(id string) { m.blobs.Delete(id) })
	m.api.Prune()
	if rw, ok := m.store.(rateWindowStore); ok {
		if _, err := rw.PurgeRateWindows(time.Minute); err != nil {
			m.log.Warn("purge rate windows", "error", err)
		}
	}
}

// expireDue deletes every job whose expires_at has passed, and its files; an unfinished one
// fails expired_or_exhausted first and its reservation is released.
func (m *Main) expireDue() {
	for {
		ids, more, err := m.store.ExpireJobs(500)
		if err != nil {
			m.log.Error("expire jobs", "error", err)
			return
		}
		for _, id := range ids {
			m.log.Info("job transition", "job_id", id, "status", "expired", "reason", "retention")
			m.pool.Cancel(id)
			if err := m.deleteJobFiles(id); err != nil {
				m.log.Warn("delete expired job files", "job_id", id, "error", err)
			}
		}
		if len(ids) > 0 {
			m.log.Info("expired jobs deleted", "count", len(ids))
		}
		if len(ids) < 500 && !more {
			return
		}
	}
}

// publicURL is the configured URL, or http://ADDR of the listener.
func publicURL(configured string, ln net.Listener) string {
	if configured != "" {
		return strings.TrimRight(configured, "/")
	}
	return "http://" + ln.Addr().String()
}

// originOf is the scheme://host[:port] of a base URL, the form browsers send in Origin.
func originOf(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return base
	}
	return u.Scheme + "://" + u.Host
}

// objectStorageKind is what the web page is told of object storage: the local blob store, or
// S3 (local is nil).
func objectStorageKind(local *blobstore.Store) string {
	if local == nil {
		return httpapi.ObjectStorageS3
	}
	return httpapi.ObjectStorageLocal
}

// defaultCORSOrigins are the origins object storage lets upload without --cors-origins: the
// origin of the API's public URL, where the web page is. A public URL on an unspecified
// address (--listen 0.0.0.0:8080 without --public-url) is no origin a browser ever sends, so
// then the page is allowed from this machine's loopback names on the same port only (serve
// warns, naming --public-url).
func defaultCORSOrigins(apiURL string) []string {
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return []string{originOf(apiURL)}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); host != "" && (err != nil || !ip.IsUnspecified()) {
		return []string{originOf(apiURL)}
	}
	port := u.Port()
	if port == "" {
		return []string{u.Scheme + "://127.0.0.1", u.Scheme + "://localhost", u.Scheme + "://[::1]"}
	}
	return []string{u.Scheme + "://127.0.0.1:" + port, u.Scheme + "://localhost:" + port, u.Scheme + "://[::1]:" + port}
}

// loadOrCreateSecret reads a token file, or creates one (0600) with a random token.
func loadOrCreateSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 24)
	rand.Read(raw)
	tok := "cs_admin_" + hex.EncodeToString(raw)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tok, nil
}
