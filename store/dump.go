package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Dump is everything `convsvc admin migrate` copies out of a database, read in one
// transaction: every account (with its monthly spend and purged-success counts), every key
// (hash, never a secret), every job, the webhook configuration and deliveries, and the presets.
type Dump struct {
	Accounts []Account // oldest first
	Keys     []APIKey  // oldest first
	Jobs     []Job     // in creation order (Seq)
	// WebhookEndpoints are every account's endpoints with their secrets, each account's
	// oldest first.
	WebhookEndpoints []WebhookEndpoint
	// WebhookSigningSecrets are the accounts' signing secrets for jobs' own webhook_url.
	WebhookSigningSecrets []WebhookSigningSecret
	// JobWebhooks maps a job id to the webhook_url it named at create.
	JobWebhooks map[string]string
	// WebhookDeliveries are every delivery (pending, delivered and failed), oldest first.
	WebhookDeliveries []WebhookDelivery
	// Presets are the operator's named jobs, by name.
	Presets []Preset
	// CacheEntries are the conversion cache's entries, by key. Each job's references to a
	// cached output are its Output.Object; the dead objects (files left to delete) are not
	// dumped.
	CacheEntries []CacheEntry
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

// Dump reads every account, key, job and webhook record in one read transaction, so they agree.
func (s *Store) Dump() (Dump, error) {
	var d Dump
	err := s.db.View(func(tx *bolt.Tx) error {
		if err := dumpWebhooks(tx, &d); err != nil {
			return err
		}
		var err error
		if d.Presets, err = dumpPresets(tx); err != nil {
			return err
		}
		if b := tx.Bucket(bucketCache); b != nil {
			err := b.ForEach(func(k, _ []byte) error {
				var e CacheEntry
				if err := getJSON(b, k, &e); err != nil {
					return fmt.Errorf("cache entry %x: %w", k, err)
				}
				d.CacheEntries = append(d.CacheEntries, e)
				return nil
			})
			if err != nil {
				return err
			}
		}
		err = tx.Bucket(bucketAccounts).ForEach(func(k, _ []byte) error {
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

// dumpWebhooks reads the webhook buckets into d; a file from before webhooks has none.
func dumpWebhooks(tx *bolt.Tx, d *Dump) error {
	d.JobWebhooks = map[string]string{}
	if b := tx.Bucket(bucketWebhookEndpoints); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var ep WebhookEndpoint
			if err := json.Unmarshal(v, &ep); err != nil {
				return fmt.Errorf("webhook endpoint %q: %w", k, err)
			}
			d.WebhookEndpoints = append(d.WebhookEndpoints, ep)
			return nil
		})
		if err != nil {
			return err
		}
		// Keys are account id 0x00 endpoint id: adjacent per account; order each account's.
		slices.SortStableFunc(d.WebhookEndpoints, func(a, b WebhookEndpoint) int {
			if a.AccountID != b.AccountID {
				return strings.Compare(a.AccountID, b.AccountID)
			}
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	if b := tx.Bucket(bucketWebhookSecrets); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var rec WebhookSigningSecret
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("webhook signing secret of %s: %w", k, err)
			}
			d.WebhookSigningSecrets = append(d.WebhookSigningSecrets, rec)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketJobWebhooks); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			d.JobWebhooks[string(k)] = string(v)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketWebhookDeliveries); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var del WebhookDelivery
			if err := json.Unmarshal(v, &del); err != nil {
				return fmt.Errorf("webhook delivery %s: %w", k, err)
			}
			d.WebhookDeliveries = append(d.WebhookDeliveries, del)
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortStableFunc(d.WebhookDeliveries, func(a, b WebhookDelivery) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return nil
}
