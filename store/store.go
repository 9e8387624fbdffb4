// Package store keeps accounts, API keys, jobs, the spend ledger and the job queue in bbolt.
//
// Every method is one transaction: a job's state change and its spend movement commit together,
// so the ledger invariant (reserved = unfinished jobs, monthly spend = successes) holds across crashes.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketMeta        = []byte("meta")
	bucketAccounts    = []byte("accounts")
	bucketKeys        = []byte("keys")
	bucketKeyHashes   = []byte("key_hashes")
	bucketJobs        = []byte("jobs")
	bucketQueue       = []byte("queue")       // queuedAt(8) jobID -> nil, oldest first
	bucketRunning     = []byte("running")     // jobID -> nil
	bucketExpiry      = []byte("expiry")      // expiresAt(8) jobID -> nil
	bucketIdempotency = []byte("idempotency") // accountID 0x00 key -> idempotencyRecord

	// bucketAccountJobs (accountID 0x00 seq(8) -> jobID) listed an account's jobs until
	// schema 3, which links them instead (Job.PrevJobID); Open moves it into the links.
	bucketAccountJobs = []byte("account_jobs")

	allBuckets = [][]byte{bucketMeta, bucketAccounts, bucketKeys, bucketKeyHashes, bucketJobs,
		bucketQueue, bucketRunning, bucketExpiry, bucketIdempotency}
)

// schemaVersion 2 writes job and account records as protobuf messages (record.go); it reads
// schema 1's JSON records. Schema 3 lists an account's jobs by linking each to the one before
// (Job.PrevJobID) instead of the account_jobs index. Schema 4 adds the status index
// (jobs_by_status, jobindex.go), which every status change keeps, so an older binary must not
// write the file. Open upgrades an older file's number first, in the transaction that builds
// the status index, so an older binary refuses it, then moves its account_jobs index into
// links (migrateAccountJobs).
const schemaVersion = 4

// Options configures a Store.
type Options struct {
	// Retention is how long a job and its files live after creation (default 24h).
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24h).
	IdempotencyTTL time.Duration
	// LockTimeout bounds the wait for another process's lock on the file (default 2s).
	LockTimeout time.Duration
	// Now is the clock; tests inject one (default time.Now).
	Now func() time.Time
	// OnFinished, if set, is told about each job that reached a final state, after the
	// commit (FinishHook).
	OnFinished FinishHook
	// CacheMaxBytes bounds the bytes of the outputs the conversion cache holds; past it the
	// least recently used entries are evicted (0: no bound).
	CacheMaxBytes int64
	// CacheHitCents is what a job answered from the conversion cache is charged instead of
	// 1 cent (--cache-hit-cents; 0 allowed); nil: 1 cent, as any job.
	CacheHitCents *int64
}

// hitCents is the price of a cache hit (Options.CacheHitCents).
func (o Options) hitCents() int64 {
	if o.CacheHitCents == nil {
		return 1
	}
	return *o.CacheHitCents
}

// Store is the bbolt-backed state of the service. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	opts Options

	changes ChangeWaiters
	// events wakes the event streams of an account (events.go), apart from changes, whose
	// count is the long polls'.
	events   ChangeWaiters
	group    groupCommit
	keys     keyCache
	webhooks webhookWake
	// claimTurn is where the next job claim's round robin starts (jobfair.go).
	claimTurn claimTurn

	writeCalls atomic.Uint64 // write functions run (each store write method is one)
	writeTxs   atomic.Uint64 // bbolt write transactions they ran in (group commit shares one)
	lastTxID   atomic.Uint64
}

// WriteStats counts the store's writes and the bbolt write transactions that carried them:
// Writes/Transactions is the group commit's average group size.
type WriteStats struct {
	Writes       uint64 // write functions run, a retried one counted again
	Transactions uint64 // write transactions (each one commit and its fsyncs, unless rolled back)
}

// WriteStats returns the counts since Open.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{Writes: s.writeCalls.Load(), Transactions: s.writeTxs.Load()}
}

// ErrLocked means another process holds the database file.
var ErrLocked = errors.New("database is locked by another process")

// Open opens (creating if needed) the database at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Retention <= 0 {
		opts.Retention = 24 * time.Hour
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = 24 * time.Hour
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w (is another convsvc serving this data dir?)", path, ErrLocked)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	legacyIndex := false
	err = db.Update(func(tx *bolt.Tx) error {
		legacyIndex = tx.Bucket(bucketAccountJobs) != nil
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		v := meta.Get([]byte("schema"))
		if len(v) != 0 && len(v) != 8 {
			return fmt.Errorf("database schema record is %d bytes, not 8", len(v))
		} else if v != nil && binary.BigEndian.Uint64(v) > schemaVersion {
			return fmt.Errorf("database schema %d is newer than this binary's %d", binary.BigEndian.Uint64(v), schemaVersion)
		}
		if v == nil || binary.BigEndian.Uint64(v) < 4 || tx.Bucket(bucketJobsByStatus) == nil {
			if err := buildStatusIndex(tx); err != nil {
				return fmt.Errorf("build the status index: %w", err)
			}
		}
		if err := rebuildQueueByAccount(tx); err != nil {
			return fmt.Errorf("build the queue by account: %w", err)
		}
		return meta.Put([]byte("schema"), u64(schemaVersion))
	})
	if err == nil && legacyIndex {
		err = migrateAccountJobs(db)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise %s: %w", path, err)
	}
	return &Store{db: db, opts: opts, group: groupCommit{db: db}}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file's path.
func (s *Store) Path() string { return s.db.Path() }

// Retention is how long jobs live after creation.
func (s *Store) Retention() time.Duration { return s.opts.Retention }

// Check runs bbolt's consistency check and returns the first problem found.
func (s *Store) Check() error {
	return s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
}

// Ping proves the database is writable by committing a small write.
func (s *Store) Ping() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("ping"), u64(uint64(s.opts.Now().UnixNano())))
	})
}

// Waiters is how many WaitChange channels are open now (long-polls parked on a job).
func (s *Store) Waiters() int { return s.changes.Waiters() }

// WaitChange returns a channel closed at the next committed change of the job, and a function
// that releases it when the caller stops waiting.
func (s *Store) WaitChange(jobID string) (<-chan struct{}, func()) {
	return s.changes.WaitChange(jobID)
}

// signal wakes everyone waiting on the given jobs; call it only after the transaction committed.
func (s *Store) signal(jobIDs ...string) { s.changes.Signal(jobIDs...) }

// update runs fn in a read-write transaction. Nothing outside the transaction may change in fn,
// and fn must set every result it returns afresh: concurrent writes share one transaction
// and its fsyncs (groupCommit), and fn may run more than once when another write of its
// group fails.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	return s.group.update(func(tx *bolt.Tx) error {
		s.writeCalls.Add(1)
		// The functions of one group run one after another in the same transaction, whose id
		// is new for each write transaction.
		if id := uint64(tx.ID()); s.lastTxID.Swap(id) != id {
			s.writeTxs.Add(1)
		}
		return fn(tx)
	})
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// timeKey orders by time, then id: 8-byte big-endian unix nanoseconds followed by the id.
func timeKey(t time.Time, id string) []byte {
	b := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(b, uint64(t.UnixNano()))
	return append(b, id...)
}

// migrateChunk is how many account_jobs entries one migration transaction moves.
var migrateChunk = 10_000

// migrateAccountJobs turns the account_jobs index of a schema 1 or 2 file into the links of
// schema 3: in key order (each account's jobs oldest first) every job is linked to the
// account's newest job so far and becomes it, and its entry is deleted in the same
// transaction. A run cut short resumes where it stopped; the emptied bucket goes last. An
// entry whose job is gone (schema 2 deleted both together, so none should be) is dropped.
func migrateAccountJobs(db *bolt.DB) error {
	for {
		done, err := migrateAccountJobsChunk(db)
		if err != nil {
			return fmt.Errorf("link jobs from account_jobs: %w", err)
		}
		if done {
			return nil
		}
	}
}

// migrateAccountJobsChunk moves up to migrateChunk entries in one transaction and reports
// whether the index is gone.
func migrateAccountJobsChunk(db *bolt.DB) (done bool, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		index := tx.Bucket(bucketAccountJobs)
		if index == nil {
			done = true
			return nil
		}
		accounts := map[string]*Account{}
		c := index.Cursor()
		n := 0
		for k, v := c.First(); k != nil && n < migrateChunk; k, v = c.First() {
			n++
			if len(k) < 9 {
				return fmt.Errorf("account_jobs key %q is too short", k)
			}
			accountID := string(k[:len(k)-9])
			acct := accounts[accountID]
			if acct == nil {
				a, err := findAccount(tx, accountID)
				if err != nil {
					return fmt.Errorf("account of job %s: %w", v, err)
				}
				acct = &a
				accounts[accountID] = acct
			}
			switch job, err := findJob(tx, string(v)); {
			case err == ErrNotFound: // dropped with its entry
			case err != nil:
				return err
			default:
				if acct.LastJobID != "" {
					job.PrevJobID = acct.LastJobID
					if err := putJob(tx, job); err != nil {
						return err
					}
				}
				acct.LastJobID = job.ID
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		for _, acct := range accounts {
			if err := putAccount(tx, *acct); err != nil {
				return err
			}
		}
		if k, _ := c.First(); k == nil {
			done = true
			return tx.DeleteBucket(bucketAccountJobs)
		}
		return nil
	})
	return done, err
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	// json.Unmarshal copies, so v stays valid after the transaction.
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode record %q: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return b.Put(key, data)
}

func bytesToU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
