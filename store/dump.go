package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Dump is everything `convsvc admin migrate` copies out of a database, read in one
// transaction: every account (with its monthly spend and purged-success counts), every key
// (hash, never a secret) and every job.
type Dump struct {
	Accounts []Account // oldest first
	Keys     []APIKey  // oldest first
	Jobs     []Job     // in creation order (Seq)
}

// OpenReadOnly opens the database at path for reading only, as `convsvc admin migrate` does:
// nothing in the file changes, and an older schema is read as it is. bbolt takes a shared
// lock, so while a convsvc serves this file (holding the exclusive lock) it fails with
// ErrLocked after opts.LockTimeout. Only read methods (Dump, VerifyLedger) work on it.
func OpenReadOnly(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: true})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w (stop the convsvc serving this data dir first)", path, ErrLocked)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketAccounts, bucketKeys, bucketJobs} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s is missing: not a convsvc database", name)
			}
		}
		v := tx.Bucket(bucketMeta).Get([]byte("schema"))
		if len(v) != 8 {
			return fmt.Errorf("database schema record is %d bytes, not 8", len(v))
		}
		if n := binary.BigEndian.Uint64(v); n > schemaVersion {
			return fmt.Errorf("database schema %d is newer than this binary's %d", n, schemaVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Store{db: db, opts: opts, group: groupCommit{db: db}}, nil
}

// Dump reads every account, key and job in one read transaction, so the three agree.
func (s *Store) Dump() (Dump, error) {
	var d Dump
	err := s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketAccounts).ForEach(func(k, _ []byte) error {
			acct, err := findAccount(tx, string(k))
			if err != nil {
				return err
			}
			d.Accounts = append(d.Accounts, acct)
			return nil
		})
		if err != nil {
			return err
		}
		keys := tx.Bucket(bucketKeys)
		err = keys.ForEach(func(k, _ []byte) error {
			var key APIKey
			if err := getJSON(keys, k, &key); err != nil {
				return err
			}
			d.Keys = append(d.Keys, key)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var job Job
			if err := readJob(v, &job); err != nil {
				return fmt.Errorf("job %s: %w", k, err)
			}
			d.Jobs = append(d.Jobs, job)
			return nil
		})
	})
	if err != nil {
		return Dump{}, fmt.Errorf("dump: %w", err)
	}
	slices.SortStableFunc(d.Accounts, func(a, b Account) int { return a.CreatedAt.Compare(b.CreatedAt) })
	slices.SortStableFunc(d.Keys, func(a, b APIKey) int { return a.CreatedAt.Compare(b.CreatedAt) })
	slices.SortStableFunc(d.Jobs, func(a, b Job) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return d, nil
}
