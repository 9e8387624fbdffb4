// Package httpapi serves the convsvc JSON API: routes, auth, per-key rate limiting, and the one
// place where errors become HTTP statuses.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// Store is what the API needs from the job database (implemented by *store.Store).
type Store interface {
	Authenticate(secret string) (store.APIKey, error)
	// AuthenticateJob is Authenticate and then Job for the key's account in one step (a GET of
	// a job; one round trip on PostgreSQL): err is the key's, as Authenticate answers it; when
	// the key is live, jobErr is the job's, as Job answers it.
	AuthenticateJob(secret, jobID string) (key store.APIKey, job store.Job, jobErr, err error)
	CreateJob(p store.CreateJobParams, render func(store.Job) (store.Response, error)) (store.Job, store.Response, error)
	Job(accountID, jobID string) (store.Job, error)
	ListJobs(accountID string, p store.ListParams) ([]store.Job, bool, error)
	// StartSealedJob starts a job whose upload was sealed as up (size, and ETag or version id
	// where object storage has them), recording up in the same transaction.
	StartSealedJob(accountID, jobID string, up store.Upload) (store.Job, error)
	// CancelJobWith cancels one of the account's unfinished jobs with the request's write gate
	// (store.WriteGate: nil when the server counted the write), which a store that takes one
	// runs in the cancel's own transaction and round trip (pgstore).
	CancelJobWith(accountID, jobID string, g *store.WriteGate) (store.Job, error)
	WaitChange(jobID string) (<-chan struct{}, func())

	CreateAccount(name string, spendCapCents int64) (store.Account, error)
	Account(id string) (store.Account, error)
	AccountsPage(p store.PageParams) ([]store.Account, bool, error)
	UpdateAccount(id string, name *string, spendCapCents *int64) (store.Account, error)
	CreateKey(accountID string) (store.APIKey, string, error)
	KeysPage(accountID string, p store.PageParams) ([]store.APIKey, bool, error)
	RevokeKey(keyID string) (store.APIKey, error)

	Backup(w io.Writer, size func(int64)) (int64, error)
	PresetStore
	LimitStore
	BatchStore
	EventStore
}

// Blobs is what the API needs from object storage (the local blob store or S3, through
// service's adapters).
type Blobs interface {
	UploadURL(jobID string, size int64, expires time.Time) string
	// DownloadURL is the signed URL of a succeeded job's output (job.Output), valid until expires.
	DownloadURL(job store.Job, expires time.Time) string
	// Seal runs start with what the job's upload is (its size, and where object storage has
	// them its ETag and version id) while no upload to the job can land, or, where an upload
	// cannot be stopped (S3), so that the start records exactly which object the job converts.
	Seal(jobID string, start func(store.Upload) error) error
	// OpenOutput opens the output of a job's attempt for streaming, with its size (a batch's
	// archive); ctx bounds the read.
	OpenOutput(ctx context.Context, jobID string, attempt int) (io.ReadCloser, int64, error)
	Check() error
}

// Catalog is what the API needs from the converter registry (implemented by *convert.Catalog).
type Catalog interface {
	Formats() []convert.Format
	Format(id string) (convert.Format, bool)
	Path(from, to string) ([]convert.Step, error)
	Targets(id string) []string
	Sources(id string) []string
	// ValidatePages checks that the pages option applies to converting input to target.
	ValidatePages(input, target string, o convert.Options) error
	// PagesApply reports whether the pages option applies to converting input to target.
	PagesApply(input, target string) bool
	// PathVersion names the converter versions along the path (the conversion cache's key).
	PathVersion(from, to string) (string, bool)
}

// Workers is what the API needs from the worker pool (implemented by *convert.Pool).
type Workers interface {
	Notify()
	Cancel(jobID string) bool
}

// Limits of the API, from SPEC.md and DESIGN.md.
const (
	UploadURLTTL       = 900 * time.Second
	DownloadURLTTL     = 900 * time.Second
	maxBodyBytes       = 64 << 10
	maxWait            = 60 * time.Second
	defaultWriteLimit  = 120
	defaultReadLimit   = 1200
	defaultAnonLimit   = 60
	rateWindow         = time.Minute
	maxLimiterKeys     = 100_000
	storageCheckPeriod = 2 * time.Second
)

// Config wires a Server to its parts.
type Config struct {
	Store   Store
	Blobs   Blobs
	Catalog Catalog
	Workers Workers
	Logger  *slog.Logger
	// AdminToken authorises /v1/admin/...; empty disables the admin API.
	AdminToken string
	// Ready returns the reasons the service is not ready; nil or empty means ready.
	Ready func() []string
	// ReadyDetails, when set, returns what /readyz shows beside the status (the conversion
	// isolation and its confinement).
	ReadyDetails func() map[string]any
	// WriteLimit, ReadLimit and AnonLimit are requests per minute: per key for job writes
	// (create, start, cancel) and reads, and per client address for requests without a valid key.
	WriteLimit, ReadLimit, AnonLimit int
	// WriteLimiter, when set, counts job writes per key across nodes instead of in process.
	WriteLimiter WriteLimiter
	// RateWindow is the window of the per-key WriteLimit and ReadLimit (default one minute;
	// tests shorten it to see a batch wait out the limit in seconds).
	RateWindow time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics, when set, counts requests, latency and 429s.
	Metrics *Metrics
	// MetricsHandler, when set, serves GET /metrics (Prometheus text); nil leaves /metrics to
	// another listener (--metrics-listen).
	MetricsHandler http.Handler
	// Webhooks, when set, serves the admin API's webhook endpoints and lets a job name a
	// webhook_url; WebhookGuard checks their destinations.
	Webhooks     WebhookStore
	WebhookGuard webhook.Guard
	// WebhookSecretOverlap is how long a replaced signing secret keeps signing after a
	// rotation (0: webhook.SecretOverlap).
	WebhookSecretOverlap time.Duration
	// TrustedProxies are the peers whose Forwarded or X-Forwarded-For header names the client
	// address the per-address limits use (clientKey); from any other peer those headers are
	// ignored.
	TrustedProxies []netip.Prefix
	// ObjectStorage is the kind of object storage, ObjectStorageLocal (default) or
	// ObjectStorageS3: the web page names where uploads' CORS is set (--cors-origins, or the
	// bucket's CORS rule) when one fails.
	ObjectStorage string
	// MaxWaitsPerKey bounds the long polls one key holds at once (default
	// DefaultMaxWaitsPerKey); one over it is answered at once.
	MaxWaitsPerKey int
	// Cache configures the conversion cache (httpapi/cache.go); its zero value is the cache on,
	// per account.
	Cache CacheConfig
	// MaxStreamsPerKey bounds the event streams one key holds at once (default
	// DefaultMaxStreamsPerKey); one over it is 429 rate_limited.
	MaxStreamsPerKey int
	// StreamHeartbeat is how often an idle event stream sends a comment line (default
	// DefaultStreamHeartbeat); StreamWriteTimeout bounds one write to a stream (default
	// DefaultStreamWriteTimeout).
	StreamHeartbeat, StreamWriteTimeout time.Duration
	// Progress, when set, reports running jobs' progress (Job.progress, job.progress events).
	Progress ProgressSource
}

// Server is the API's http.Handler.
type Server struct {
	cfg     Config
	log     *slog.Logger
	router  *httprouter.Router
	handler http.Handler
	now     func() time.Time
	writes  *slidingLimiter
	reads   *slidingLimiter
	anon    *slidingLimiter
	// adminFails counts failed admin authentication per address, apart from anon.
	adminFails *slidingLimiter
	storage    storageProbe
	waits      *waitSlots // long polls held, per key
	streams    *waitSlots // event streams held, per key
	closing    streamCloser
	// progressReads shares the job read behind each progress change among the streams
	// (events.go).
	progressReads progressReads
	// afterLogRead, when set (by tests only: export_test.go), is called by a job stream
	// between its read of the log and its read of the job (events.go).
	afterLogRead atomic.Pointer[func(jobID string)]
	// afterProgressValue, when set (by tests only), is called by a stream between taking a
	// job's progress value and reading the job for its event (events.go).
	afterProgressValue atomic.Pointer[func(jobID, value string)]
	csp                string // the web page's Content-Security-Policy
	web                map[string]webAsset
}

// New builds a Server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteLimit <= 0 {
		cfg.WriteLimit = defaultWriteLimit
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = defaultReadLimit
	}
	if cfg.AnonLimit <= 0 {
		cfg.AnonLimit = defaultAnonLimit
	}
	if cfg.RateWindow <= 0 {
		cfg.RateWindow = rateWindow
	}
	if cfg.MaxWaitsPerKey <= 0 {
		cfg.MaxWaitsPerKey = DefaultMaxWaitsPerKey
	}
	if cfg.MaxStreamsPerKey <= 0 {
		cfg.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	if cfg.StreamHeartbeat <= 0 {
		cfg.StreamHeartbeat = DefaultStreamHeartbeat
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		now:    cfg.Now,
		writes: newSlidingLimiter(cfg.WriteLimit, cfg.RateWindow, maxLimiterKeys),
		reads:  newSlidingLimiter(cfg.ReadLimit, cfg.RateWindow, maxLimiterKeys),
		anon:   newSlidingLimiter(cfg.AnonLimit, rateWindow, maxLimiterKeys),
		// The admin API's failed-authentication budget: the same size, its own window.
		adminFails: newSlidingLimiter(cfg.AnonLimit, rateWindow, maxLimiterKeys),
		waits:      newWaitSlots(cfg.MaxWaitsPerKey),
		streams:    newWaitSlots(cfg.MaxStreamsPerKey),
		closing:    streamCloser{ch: make(chan struct{})},
	}
	s.storage.check = cfg.Blobs.Check
	// The page uploads to and downloads from object storage: its origin joins connect-src.
	s.csp = pageCSP(originOf(cfg.Blobs.UploadURL("job_0", 1, cfg.Now().Add(UploadURLTTL))))
	s.web = webAssetsFor(cfg.ObjectStorage)
	s.routes()
	return s
}

func (s *Server) routes() {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.writeError(w, req, errorf(CodeNotFound, "no such endpoint; see /v1/openapi.json"))
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setRoute(req, s.allowedTemplate(req.URL.Path))
		s.writeError(w, req, errorf(CodeMethodNotAllowed, "method "+req.Method+" is not allowed here"))
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		if v == http.ErrAbortHandler {
			panic(v) // a deliberate abort: net/http cuts the connection quietly
		}
		s.log.ErrorContext(req.Context(), "panic", "request_id", requestID(req), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		s.writeError(w, req, errorf(CodeInternal, "internal error; the request id identifies it in the server log"))
	}
	// handle registers a route whose template names the request in logs and metrics.
	handle := func(method, path string, h httprouter.Handle) {
		r.Handle(method, path, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			setRoute(req, path)
			h(w, req, ps)
		})
	}

	for _, method := range []string{"GET", "HEAD"} {
		handle(method, "/", s.handleWeb)
		handle(method, "/web/:file", s.handleWeb)
		handle(method, "/favicon.ico", s.handleWeb)
	}
	handle("GET", "/healthz", s.handleHealth)
	handle("GET", "/readyz", s.handleReady)
	if s.cfg.MetricsHandler != nil {
		handle("GET", "/metrics", func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
			s.cfg.MetricsHandler.ServeHTTP(w, req)
		})
	}
	handle("GET", "/v1/openapi.json", s.handleOpenAPI)
	handle("GET", "/v1/formats", s.handleFormats)
	handle("GET", "/v1/formats/:id", s.handleFormat)

	handle("POST", "/v1/jobs", s.withGatedKey(s.handleCreateJob))
	handle("GET", "/v1/jobs", s.withKey(false, s.handleListJobs))
	handle("GET", "/v1/jobs/:id", s.withJobKey(s.handleGetJob))
	handle("POST", "/v1/jobs/:id/start", s.withGatedKey(s.handleStartJob))
	handle("POST", "/v1/jobs/:id/cancel", s.withGatedKey(s.handleCancelJob))

	handle("POST", "/v1/admin/accounts", s.withAdmin(s.handleCreateAccount))
	handle("GET", "/v1/admin/accounts", s.withAdmin(s.handleListAccounts))
	handle("GET", "/v1/admin/accounts/:id", s.withAdmin(s.handleGetAccount))
	handle("PATCH", "/v1/admin/accounts/:id", s.withAdmin(s.handleUpdateAccount))
	handle("POST", "/v1/admin/accounts/:id/keys", s.withAdmin(s.handleCreateKey))
	handle("GET", "/v1/admin/accounts/:id/keys", s.withAdmin(s.handleListKeys))
	handle("DELETE", "/v1/admin/keys/:id", s.withAdmin(s.handleRevokeKey))
	handle("GET", "/v1/admin/backup", s.withAdmin(s.handleBackup))
	handle("GET", "/v1/admin/presets", s.withAdmin(s.handleListPresets))
	handle("PUT", "/v1/admin/presets/:name", s.withAdmin(s.handlePutPreset))
	handle("GET", "/v1/admin/presets/:name", s.withAdmin(s.handleGetPreset))
	handle("DELETE", "/v1/admin/presets/:name", s.withAdmin(s.handleDeletePreset))
	s.routeWebhooks(handle)
	s.routeSelfWebhooks(handle)
	s.routeBatches(handle)
	s.routeEvents(handle)
	s.router = r
	s.handler = Observed(r, Observe{Logger: s.log, Metrics: s.cfg.Metrics, Server: "api"})
}

// allowedTemplate is the route template of a path that some other method serves, for the
// label of a 405.
func (s *Server) allowedTemplate(path string) string {
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
		if h, ps, _ := s.router.Lookup(m, path); h != nil {
			kv := make([]paramKV, len(ps))
			for i, p := range ps {
				kv[i] = paramKV{p.Key, p.Value}
			}
			return templateOf(path, kv)
		}
	}
	return RouteUnmatched
}

// ServeHTTP serves the routes behind the request log and metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Prune drops rate-limiter state of idle keys; call it periodically.
func (s *Server) Prune() {
	now := s.now()
	s.writes.Prune(now)
	s.reads.Prune(now)
	s.anon.Prune(now)
	s.adminFails.Prune(now)
}

type requestInfoKey struct{}

// requestInfo carries per-request facts the access log wants (set by handlers).
type requestInfo struct {
	id        string
	route     string // set by the router's handler, read after it returned
	accountID atomic.Pointer[string]
}

func requestID(r *http.Request) string {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

func setAccount(r *http.Request, accountID string) {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		info.accountID.Store(&accountID)
	}
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	id := [4 + 2*len(b)]byte{'r', 'e', 'q', '_'}
	hex.Encode(id[4:], b[:])
	return string(id[:])
}

// validRequestID accepts a caller's id only if it is short and plain, so logs stay clean.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

// WriteHeader records the first status.
func (r *statusRecorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

// Write counts the body bytes.
func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// storageProbe caches a healthy answer of the blob store for storageCheckPeriod, so create
// does not fsync on every request; a failing store is asked again on every request, so
// recovery shows at once.
type storageProbe struct {
	check   func() error
	okUntil atomic.Int64 // unix nanos until which the last healthy answer stands
}

func (p *storageProbe) err(now time.Time) error {
	if now.UnixNano() < p.okUntil.Load() {
		return nil
	}
	if err := p.check(); err != nil {
		return err
	}
	p.okUntil.Store(now.Add(storageCheckPeriod).UnixNano())
	return nil
}

// ReadFrom keeps sendfile working for downloads behind the recorder.
func (r *statusRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.wrote = true
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
