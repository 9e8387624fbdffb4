package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/internal/gcfloor"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/webhook"
)

// serveOptions are the flags of serve.
type serveOptions struct {
	cfg         service.Config
	logFormat   string
	logLevel    string
	gcHeapFloor sizeFlag // see internal/gcfloor
	// memoryTrimDelay is --memory-trim-delay: 0 turns trimming off (cfg gets -1).
	memoryTrimDelay time.Duration
	// trustedProxies are --trusted-proxies as given; validate parses them into cfg.
	trustedProxies []string
	// s3PathStyle is --s3-path-style as given: auto, true or false.
	s3PathStyle string
	fontDir     string // --font-dir, see convert/internal/fonts
	// cacheMaxBytes is --cache-max-bytes: 0 turns the conversion cache off (cfg gets -1).
	cacheMaxBytes sizeFlag
	// cacheHitCents is --cache-hit-cents (cfg gets a pointer to it).
	cacheHitCents int64
}

func newServeCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API, object storage and workers",
		Long: "Run the API, object storage and workers. On an empty data dir it creates account\n" +
			"\"default\" and prints its API key once. SIGTERM or SIGINT drains: running conversions\n" +
			"get --drain-timeout to finish, then fail with worker_shutdown.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	addServeFlags(cmd.Flags(), &o)
	return cmd
}

// addServeFlags defines serve's flags; convsvc config defines the same to show their values.
func addServeFlags(f *pflag.FlagSet, o *serveOptions) {
	f.StringVar(&o.cfg.DataDir, "data", "./convsvc-data", "data directory (database, files, secrets)")
	f.StringVar(&o.cfg.Database, "database", "", "job database: a bbolt file (default DATA/convsvc.db) or a postgres:// URL that several nodes share; the password may also come from $CONVSVC_DATABASE_PASSWORD_FILE")
	f.StringVar(&o.cfg.ObjectStorage, "object-storage", "", "where uploads and outputs live: the blob store in DATA/blobs served on --blob-listen (default), or s3://BUCKET/PREFIX on any S3-compatible server; credentials from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, optional $AWS_SESSION_TOKEN (each also as _FILE), else the AWS SDK's default chain (AWS_PROFILE and the shared files, web identity, ECS container and EC2 instance roles)")
	f.StringVar(&o.cfg.S3.Endpoint, "s3-endpoint", "", "S3 API base URL for --object-storage s3://..., e.g. http://minio:9000 (default: AWS for --s3-region)")
	f.StringVar(&o.cfg.S3.Region, "s3-region", "", "S3 region for --object-storage s3://... (default: $AWS_REGION; us-east-1 suits most self-hosted servers)")
	f.StringVar(&o.s3PathStyle, "s3-path-style", "auto", "address the bucket in the URL path (ENDPOINT/BUCKET/KEY) rather than the host name: true, false, or auto (on when --s3-endpoint is set, as MinIO and most self-hosted servers need)")
	f.StringVar(&o.cfg.Listen, "listen", "127.0.0.1:8080", "API listen address")
	f.StringVar(&o.cfg.BlobListen, "blob-listen", "127.0.0.1:8081", "object storage listen address")
	f.StringVar(&o.cfg.PublicURL, "public-url", "", "API base URL clients see (default http://LISTEN)")
	f.StringVar(&o.cfg.BlobPublicURL, "blob-public-url", "", "object storage base URL in signed URLs (default http://BLOB-LISTEN)")
	f.StringSliceVar(&o.cfg.CORSOrigins, "cors-origins", nil, "web origins (scheme://host[:port], comma-separated, or *) whose pages may upload to and download from object storage (default: the origin of --public-url)")
	f.StringVar(&o.cfg.MetricsListen, "metrics-listen", "", "serve GET /metrics on this address instead of the API's")
	f.DurationVar(&o.cfg.WebhookSecretOverlap, "webhook-secret-overlap", webhook.SecretOverlap, "how long an account's replaced webhook signing secret keeps signing beside the new one after a rotation (both v1= values are sent meanwhile; docs/webhooks.md); 1m to 720h")
	f.BoolVar(&o.cfg.WebhookAllowPrivate, "webhook-allow-private", false, "let webhooks go to loopback, private, link-local and metadata addresses (tests and trusted networks; docs/webhooks.md)")
	f.BoolVar(&o.cfg.FetchAllowPrivate, "fetch-allow-private", false, "let source_url fetches and deliver_to uploads reach loopback, private, link-local and metadata addresses (tests and trusted networks; docs/remote.md)")
	f.IntVar(&o.cfg.Workers, "workers", 0, "conversion workers (default: number of CPUs)")
	f.DurationVar(&o.cfg.Retention, "retention", service.DefaultRetention, "how long jobs and their files are kept")
	f.StringVar(&o.cfg.CacheScope, "cache-scope", service.CacheScopeAccount, "who shares the conversion cache (docs/cache.md): account (a job is answered from outputs of its own account's jobs) or global (of every account's: an operator's opt-in, since a hit tells a caller that someone converted the same file)")
	o.cacheMaxBytes = sizeFlag(service.DefaultCacheMaxBytes)
	f.Var(&o.cacheMaxBytes, "cache-max-bytes", "bytes of outputs the conversion cache keeps, e.g. 10GiB; past it the least recently used entries are evicted; 0 turns the cache off")
	f.Int64Var(&o.cacheHitCents, "cache-hit-cents", 1, "cents a job answered from the conversion cache is charged instead of the 1 cent every job costs (0: free); a hit above 1 cent that the account's spend cap cannot take converts for 1 cent instead")
	f.DurationVar(&o.cfg.Lease, "lease", defaultLease, "with a postgres:// --database, how long a running job stays this node's without a heartbeat (renewed every third of it): a node that dies has its jobs taken over by the others after about this long plus half of it; at least 1s")
	f.IntVar(&o.cfg.MaxAttempts, "max-attempts", 3, "pickups before a job interrupted by crashes fails expired_or_exhausted")
	f.DurationVar(&o.cfg.DrainTimeout, "drain-timeout", service.DefaultDrainTimeout, "time running conversions get on shutdown")
	f.StringVar(&o.cfg.Isolation, "isolation", defaultIsolation(), "where conversions run: process (worker processes of this binary: killed on cancel and timeout, capped in memory, confined where Linux allows; Linux only) or none (in the server's process)")
	f.DurationVar(&o.cfg.ConversionTimeout, "conversion-timeout", service.DefaultConversionTimeout, "longest one conversion may run")
	f.StringVar(&o.cfg.AdminToken, "admin-token", "", "admin API token (default: generated into DATA/admin.token)")
	f.Int64Var(&o.cfg.DefaultSpendCapCents, "default-spend-cap-cents", service.DefaultSpendCapCents, "monthly spend cap of the default account")
	f.Int64Var(&o.cfg.MaxPixels, "max-pixels", service.DefaultMaxPixels, "largest image accepted, in pixels (width x height)")
	f.Var((*sizeFlag)(&o.cfg.MaxConversionMemory), "max-conversion-memory", "memory running conversions may hold together, e.g. 4GiB (default: half of the machine's memory); conversions beyond it wait")
	f.Float64Var(&o.cfg.MaxOutputRatio, "max-output-ratio", convert.DefaultMaxOutputRatio, "most a conversion may write per input byte, above a floor of 64MiB (outputs to raster images are bounded by --max-pixels instead); beyond it the job fails conversion_failed")
	o.cfg.MaxOutputBytes = convert.DefaultMaxOutputBytes
	f.Var((*sizeFlag)(&o.cfg.MaxOutputBytes), "max-output-bytes", "largest output one conversion step may write, e.g. 4GiB; beyond it the job fails conversion_failed")
	o.gcHeapFloor = gcfloor.DefaultFloor
	f.Var(&o.gcHeapFloor, "gc-heap-floor", "heap the Go collector lets grow before collecting more often than GOGC=100 would; 0 turns it off, and so does GOGC in the environment")
	f.DurationVar(&o.memoryTrimDelay, "memory-trim-delay", gcfloor.DefaultTrimDelay, "idle time of the workers after which the memory their conversions left behind goes back to the system (two collections and debug.FreeOSMemory); 0 turns it off")
	f.StringSliceVar(&o.trustedProxies, "trusted-proxies", nil, "CIDRs or addresses of reverse proxies whose Forwarded / X-Forwarded-For header names the client (default: none; the peer address is the client)")
	f.DurationVar(&o.cfg.StorageProgressTimeout, "storage-progress-timeout", blobstore.DefaultProgressTimeout, "cut an object-storage upload or download that moves less than 64 KiB in this time (a stalled client); its temporary file goes and a retry can proceed")
	f.IntVar(&o.cfg.MaxConnections, "max-connections", 0, "open connections each listener takes; more are answered 503 and closed (default: sized from the open-file limit, at most 10000; -1: no cap)")
	f.IntVar(&o.cfg.MaxConnectionsPerAddress, "max-connections-per-address", 0, "open connections one client address may hold on each listener (default: 256 or a quarter of --max-connections, whichever is smaller; raise it behind a reverse proxy; -1: no cap)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.fontDir, "font-dir", standard.DefaultFontDir, "directory searched for fonts that documents and SVG text name, and for characters the embedded fonts lack; empty: embedded fonts only")
	withEnvHelp(f)
}

func newLogger(format, level string, w *os.File) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
	}
}

// databasePassword puts the password from $CONVSVC_DATABASE_PASSWORD_FILE into a postgres://
// --database that has none.
func (o *serveOptions) databasePassword() (err error) {
	o.cfg.Database, err = withDatabasePassword(o.cfg.Database)
	return err
}

// withDatabasePassword is database with the password from $CONVSVC_DATABASE_PASSWORD_FILE
// when it is a postgres:// URL carrying none (serve and admin migrate read it alike).
func withDatabasePassword(database string) (string, error) {
	path, ok := os.LookupEnv(databasePasswordFileEnv)
	if !ok || !service.IsPostgresURL(database) {
		return database, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", databasePasswordFileEnv, err)
	}
	return service.DatabaseURLWithPassword(database, strings.TrimSpace(string(b)))
}

// The AWS variables serve reads the S3 credentials from (and their _FILE twins).
const (
	awsAccessKeyEnv    = "AWS_ACCESS_KEY_ID"
	awsSecretKeyEnv    = "AWS_SECRET_ACCESS_KEY"
	awsSessionTokenEnv = "AWS_SESSION_TOKEN"
	awsRegionEnv       = "AWS_REGION"
)

// s3Settings completes the S3 settings of an s3:// --object-storage (see completeS3Config).
func (o *serveOptions) s3Settings() error {
	if _, _, ok, err := service.ParseObjectStorage(o.cfg.ObjectStorage); err != nil || !ok {
		return err
	}
	return completeS3Config(o.cfg.ObjectStorage, &o.cfg.S3)
}

// completeS3Config fills in what the flags left to the environment, for serve and admin
// migrate alike: the region from $AWS_REGION when --s3-region is unset, and static
// credentials from the AWS variables or the files their _FILE twins name (without them the
// SDK's default chain is asked when the bucket is opened: service.S3StoreOptions).
func completeS3Config(storage string, c *service.S3Config) error {
	if c.Region == "" {
		c.Region = os.Getenv(awsRegionEnv)
	}
	var err error
	if c.AccessKey, err = envOrFile(awsAccessKeyEnv); err != nil {
		return err
	}
	if c.SecretKey, err = envOrFile(awsSecretKeyEnv); err != nil {
		return err
	}
	if c.SessionToken, err = envOrFile(awsSessionTokenEnv); err != nil {
		return err
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return fmt.Errorf("--object-storage %s: set both %s and %s (or their _FILE twins), or neither", storage, awsAccessKeyEnv, awsSecretKeyEnv)
	}
	return nil
}

// parsePathStyle reads --s3-path-style: true, false, or auto (nil: on when an endpoint is set).
func parsePathStyle(v string) (*bool, error) {
	switch v {
	case "", "auto":
		return nil, nil
	case "true", "false":
		b := v == "true"
		return &b, nil
	default:
		return nil, fmt.Errorf("is %q: want true, false or auto", v)
	}
}

// defaultLease is --lease's default, service's own default for an unset Config.Lease.
const defaultLease = 30 * time.Second

// databasePasswordFileEnv names the file holding the PostgreSQL password, for a --database URL
// that carries none.
const databasePasswordFileEnv = "CONVSVC_DATABASE_PASSWORD_FILE"

func (o *serveOptions) run(cmd *cobra.Command) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	standard.SetFontDir(o.fontDir)
	o.cfg.FontDir = o.fontDir
	log, err := newLogger(o.logFormat, o.logLevel, os.Stderr)
	if err != nil {
		return err
	}
	o.cfg.Logger = log
	for _, w := range o.warnings() {
		log.Warn(w)
	}
	if err := o.databasePassword(); err != nil {
		return err
	}
	if err := o.s3Settings(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	o.cfg.OnDefaultKey = func(accountID, key string) {
		fmt.Fprintf(out, "Created account \"default\" (%s) with API key:\n\n    %s\n\nIt is shown only this once; keep it.\n\n", accountID, key)
	}
	serving := func(api, blob string) {
		if blob == "" {
			blob = o.cfg.ObjectStorage
		}
		fmt.Fprintf(out, "convsvc serving the API on %s and object storage on %s\n", api, blob)
	}
	if o.logFormat == "json" {
		// Everything serve writes is then JSON, one object per line: the notices go to stdout
		// as they do in text, and a failure is logged rather than printed.
		notice := slog.New(slog.NewJSONHandler(out, nil))
		o.cfg.OnDefaultKey = func(accountID, key string) {
			notice.Warn("created account \"default\"; its API key is shown only this once, keep it", "account_id", accountID, "api_key", key)
		}
		serving = func(api, blob string) { notice.Info("convsvc serving", "api_url", api, "blob_url", blob) }
		defer func() {
			if err != nil {
				log.Error("serve failed", "error", err.Error())
				err = reportedError{err}
			}
		}()
	}
	gcfloor.Set(uint64(o.gcHeapFloor))
	o.cfg.MemoryTrimDelay = o.memoryTrimDelay
	o.cfg.CacheMaxBytes = int64(o.cacheMaxBytes)
	o.cfg.CacheHitCents = &o.cacheHitCents
	if o.cacheMaxBytes == 0 {
		o.cfg.CacheMaxBytes = -1 // off
	}
	if o.memoryTrimDelay == 0 {
		o.cfg.MemoryTrimDelay = -1 // service's 0 means its default
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	m, err := service.Run(o.cfg)
	if err != nil {
		return err
	}
	serving(m.URL(), m.BlobURL())
	go fillWasmCache(log)
	<-ctx.Done()
	stop()
	log.Info("shutting down", "drain_timeout", o.cfg.DrainTimeout.String())
	drain, cancel := context.WithTimeout(context.Background(), o.cfg.DrainTimeout)
	defer cancel()
	return m.Shutdown(drain)
}

// fillWasmCache compiles the WebAssembly codecs into the shared compilation cache in the
// background once a server has started (only on its first start with a new binary), so its
// workers and one-shot conversions load them instead of compiling them at their first use.
func fillWasmCache(log *slog.Logger) {
	start := time.Now()
	if err := standard.FillWasmCache(); err != nil {
		log.Warn("WebAssembly codecs not compiled ahead of use", "cache_dir", standard.WasmCacheDir(), "err", err)
		return
	}
	log.Debug("WebAssembly compilation cache ready", "cache_dir", standard.WasmCacheDir(), "duration", time.Since(start).String())
}
