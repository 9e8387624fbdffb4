// Package pgstore keeps convsvc's accounts, API keys, jobs, spend ledger, job queue and rate
// windows in PostgreSQL, so that any number of stateless nodes can share them. It speaks the
// types and sentinel errors of package store, so httpapi takes either backend.
//
// Every method is one transaction: a job's state change and its spend movement commit
// together, with the row lock of the account serialising spend across nodes. The database's
// clock, not a node's, decides months, expiry, leases and rate windows. Running jobs hold a
// lease (owner and expiry) that the worker renews with Heartbeat; ReapExpiredLeases, run by
// every node, requeues or fails the jobs of a node that stopped. Every state change sends a
// NOTIFY on channel "convsvc"; each Store keeps one listening connection that wakes WaitChange
// callers and Subscribe callbacks, and after a reconnect wakes them all, since notifications
// sent while it was away are lost.
package pgstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convsvc/convsvc/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Advisory lock keys (pg_advisory_lock takes a bigint): arbitrary, fixed, convsvc's own.
const (
	lockMigrate        int64 = 0x636f6e7673760001 // "convsv" 1
	lockDefaultAccount int64 = 0x636f6e7673760002
	lockWebhookClaim   int64 = 0x636f6e7673760003 // ClaimWebhookDeliveries: caps exact across nodes
)

// notifyChannel is the LISTEN/NOTIFY channel of every state change. A payload is a kind
// letter, a colon and a job id: "j" the job changed, "q" it was queued, "c" it was cancelled,
// "w" webhook deliveries of the job were recorded.
const notifyChannel = "convsvc"

// ErrUnavailable wraps every error that is the database's, not the caller's: a lost
// connection, a timeout, a failed statement. httpapi maps it to 503.
var ErrUnavailable = errors.New("database unavailable")

// ErrNotSupported is returned by methods that only the embedded store has (Backup); it is a
// store.ErrNotSupported, which the API answers 501 not_implemented.
var ErrNotSupported = fmt.Errorf("%w (PostgreSQL)", store.ErrNotSupported)

// DefaultMaxConns is the connection pool's size unless the URL's pool_max_conns or
// Options.MaxConns says otherwise. Each transition is one round trip that holds its connection
// through the commit, which with fsync on waits for the WAL flush: the pool bounds how many
// commits share a flush. pgxpool's own default, max(4, CPUs), let 4 requests at a time commit
// (bench/scaleout, 32 clients, fsync on: 259 creates+starts/s with 4, 634 with 16, 632 with 32).
const DefaultMaxConns = 16

// Options configures a Store.
type Options struct {
	// Retention is how long a job and its files live after creation (default 24h).
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24h).
	IdempotencyTTL time.Duration
	// Lease is how long a claimed job stays this node's without a Heartbeat (default 30s).
	Lease time.Duration
	// NodeID names this node as the owner of its leases (default host name, pid and a random part).
	NodeID string
	// MaxConns bounds the connection pool (default: pool_max_conns in the URL, else
	// DefaultMaxConns).
	MaxConns int32
	// Timeout bounds each method's work in the database (default 30s).
	Timeout time.Duration
	// Logger receives the listener's reconnects (default slog.Default()).
	Logger *slog.Logger
	// Tracer, if set, sees every statement the pool sends (pgx.QueryTracer): tests count
	// round trips with it.
	Tracer pgx.QueryTracer
	// OnFinished, if set, is told about each job that reached a final state in this Store's
	// transactions, after the commit (store.FinishHook); other nodes' transitions are theirs.
	OnFinished store.FinishHook
	// CacheMaxBytes bounds the bytes of the outputs the conversion cache holds; past it the
	// least recently used entries are evicted (0: no bound).
	CacheMaxBytes int64
	// CacheHitCents is what a job answered from the conversion cache is charged instead of
	// 1 cent (--cache-hit-cents; 0 allowed); nil: 1 cent, as any job.
	CacheHitCents *int64
	// KeyCache bounds how many API keys this node remembers having authenticated, so that a
	// create's or start's key check and write count go into the transition's own round trip
	// (WriteGate, keycache.go); default DefaultKeyCache, negative: none (every write
	// authenticates in a statement of its own first).
	KeyCache int
	// WriteBatches is how many batches of creates and starts this node sends at once; the
	// writes that arrive while all are out share the next one's round trip and commit
	// (writebatch.go). Default DefaultWriteBatches; negative: none (each write alone).
	WriteBatches int
}

// hitCents is the price of a cache hit (Options.CacheHitCents).
func (o Options) hitCents() int64 {
	if o.CacheHitCents == nil {
		return 1
	}
	return *o.CacheHitCents
}

// Store is the PostgreSQL-backed state of the service. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	log  *slog.Logger

	mu          sync.Mutex
	changes     store.ChangeWaiters
	events      store.ChangeWaiters // the event streams' wake-ups, by account (events.go)
	subscribers map[int]func(Event)
	onProgress  func(payload string) // OnProgress's handler (progress.go)
	nextSub     int
	listenerPID uint32

	stop       context.CancelFunc
	listenDone chan struct{}
	// notes sends the transition calls' notifications after their commits (notifier.go).
	notes *notifier

	wakeOnce sync.Once
	wake     chan struct{} // WebhookWake's
	// webhookRR is the account whose delivery this node's claim took last; its next claim
	// starts after it.
	webhookRR struct {
		sync.Mutex
		last string
	}
	// claimTurn is the account whose job this node claimed last; its next claim starts
	// after it (jobfair.go).
	claimTurn struct {
		sync.Mutex
		last string
	}
	// goTransitions turns the transition functions off (transitions.go), for the test that
	// counts both paths' round trips.
	goTransitions bool
	// retried counts transactions run again after a deadlock or a serialization failure
	// (tx, callJob), for the tests that hold the lock order (cache.go).
	retried atomic.Int64
	// keys are the API keys this node authenticated (keycache.go).
	keys keyCache
	// writes batches the creates and starts with a pending write gate (writebatch.go); nil:
	// each goes alone.
	writes *writeBatcher
}

// Open connects to the database at url (a postgres:// URL or key=value string), applies the
// migrations it lacks under an advisory lock (so nodes starting together apply each once),
// and starts listening for changes.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Retention <= 0 {
		opts.Retention = 24 * time.Hour
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = 24 * time.Hour
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.NodeID == "" {
		host, _ := os.Hostname()
		opts.NodeID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(4))
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: database URL: %w", err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w: %w", ErrUnavailable, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w: %w", ErrUnavailable, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	s := &Store{
		pool: pool, opts: opts, log: opts.Logger,
		subscribers: map[int]func(Event){},
		stop:        stop,
		listenDone:  make(chan struct{}),
		notes:       newNotifier(pool, opts.Logger, opts.Timeout),
	}
	s.keys.max = opts.KeyCache
	if s.keys.max == 0 {
		s.keys.max = DefaultKeyCache
	}
	if opts.WriteBatches >= 0 {
		s.writes = &writeBatcher{max: cmp.Or(opts.WriteBatches, DefaultWriteBatches)}
	}
	ready := make(chan error, 1)
	go s.listen(lctx, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("pgstore: listen: %w: %w", ErrUnavailable, err)
	}
	return s, nil
}

// Close sends the notifications still pending, stops the listener and closes the pool.
func (s *Store) Close() error {
	s.notes.flush()
	s.stop()
	<-s.listenDone
	s.pool.Close()
	return nil
}

// Retention is how long jobs live after creation.
func (s *Store) Retention() time.Duration { return s.opts.Retention }

// NodeID is this Store's lease owner name.
func (s *Store) NodeID() string { return s.opts.NodeID }

// Lease is how long a claim lasts without a Heartbeat.
func (s *Store) Lease() time.Duration { return s.opts.Lease }

// Pool is the connection pool, for tests and tools.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Backup is not supported: back up PostgreSQL with its own tools (pg_dump).
func (s *Store) Backup(io.Writer, func(int64)) (int64, error) {
	return 0, fmt.Errorf("backup: %w: back the database up with pg_dump", ErrNotSupported)
}

// migrate applies the embedded migrations the database lacks (whatever their number), in order, each in its own
// transaction, while holding a session advisory lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockMigrate); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockMigrate)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("schema_migrations: %w", err)
	}
	// Every embedded migration not yet recorded is applied, not only those above the newest
	// recorded: migrations written side by side may land in another order than their numbers.
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return err
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return err
	}
	current := 0
	if len(applied) > 0 {
		current = slices.Max(applied)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(files)
	latest := 0
	for _, file := range files {
		name := strings.TrimPrefix(file, "migrations/")
		version, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with its number", name)
		}
		latest = max(latest, version)
		if slices.Contains(applied, version) {
			continue
		}
		sql, err := migrations.ReadFile(file)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, version, name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	if current > latest {
		return fmt.Errorf("database schema %d is newer than this binary's %d", current, latest)
	}
	return nil
}

// ctx bounds one method's work.
func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// tx runs fn in a transaction, again (up to 5 times) when PostgreSQL aborts it for a
// serialization failure or a deadlock; fn must set every result it returns afresh. The
// transaction defers its notifications (migration 0020: notify and the event trigger queue
// them), which leave after its COMMIT in the same round trip (txOnce).
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.txOnce(ctx, fn)
		if attempt < 5 && retryable(err) {
			s.retried.Add(1)
			continue
		}
		return err
	}
}

// beginDeferred begins a transaction that queues its notifications instead of sending them
// (convsvc.defer_notify, migration 0020), in one round trip; commitDeferred commits it and
// sends them, in another. Between the two, no statement of the transaction takes NOTIFY's
// commit lock, which a notifying transaction holds through its WAL flush (0020's comment).
const (
	beginDeferred  = `BEGIN; SELECT set_config('convsvc.defer_notify', 'on', true)`
	commitDeferred = `COMMIT; SELECT convsvc_send_notifies()`
)

// txOnce is pgx.BeginFunc with beginDeferred and commitDeferred: the same round trips (each
// is one simple-protocol message), the notifications leaving after the commit.
func (s *Store) txOnce(ctx context.Context, fn func(tx pgx.Tx) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pc := conn.Conn().PgConn()
	defer func() {
		if err != nil {
			rollbackOpen(conn.Conn())
		}
	}()
	if _, err = conn.Exec(ctx, beginDeferred); err != nil {
		return err
	}
	if err = fn(connTx{conn.Conn()}); err != nil {
		return err
	}
	if pc.TxStatus() == 'E' {
		return pgx.ErrTxCommitRollback // a statement failed and fn went on: COMMIT would roll back
	}
	_, err = conn.Exec(ctx, commitDeferred)
	return err
}

// rollbackOpen ends the transaction a failed statement or a Go error left open on c (begun
// with its own BEGIN by txOnce or callOnce), so the connection goes back to the pool usable:
// the pool drops one left in a transaction.
func rollbackOpen(c *pgx.Conn) {
	if pc := c.PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.Exec(rctx, `ROLLBACK`)
		cancel()
	}
}

// readTx runs fn in one read-only repeatable-read transaction: a consistent snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// callerErrors are the sentinels that are the caller's doing; anything else from the
// database is wrapped in ErrUnavailable.
var callerErrors = []error{store.ErrNotFound, store.ErrUnauthorized, store.ErrLimitReached, store.ErrSizeMismatch,
	store.ErrInvalidState, store.ErrIdempotencyMismatch, store.ErrInvalidArgument, store.ErrRateLimited}

// wrap names the operation and marks a database failure ErrUnavailable; nil stays nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, target := range callerErrors {
		if errors.Is(err, target) {
			return err
		}
	}
	return fmt.Errorf("pgstore: %s: %w: %w", op, ErrUnavailable, err)
}

// notify sends the payloads with the commit of tx: after it when tx defers its
// notifications (Store.tx's transactions, migration 0020), else at its commit.
func notify(ctx context.Context, tx pgx.Tx, payloads ...string) error {
	if len(payloads) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT convsvc_notify(p) FROM unnest($1::text[]) AS p`, payloads)
	return err
}

// Ping proves the database takes writes by committing a small one.
func (s *Store) Ping() error {
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.pool.Exec(ctx, `INSERT INTO ping (id, at) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = excluded.at`)
	return wrap("ping", err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// micros is d for SQL: `$n * interval '1 microsecond'`.
func micros(d time.Duration) int64 { return d.Microseconds() }
