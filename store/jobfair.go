package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrQueueFull is a start refused because the account already has Account.MaxQueued jobs
// queued; the API answers 429 queue_full with Retry-After.
var ErrQueueFull = errors.New("the account's queue is full")

// LimitUpdate is one field of an AccountLimits change: Set false leaves it as it is; Set true
// stores Value, nil meaning unlimited.
type LimitUpdate struct {
	Set   bool
	Value *int64
}

// AccountLimits changes an account's queue limits (Account.MaxRunning, Account.MaxQueued).
type AccountLimits struct {
	MaxRunning, MaxQueued LimitUpdate
}

// ValidateAccountLimits refuses a limit below 1 (null, unlimited, is the way to lift one;
// there is no limit of 0: an account's work is stopped by its spend cap or its keys).
func ValidateAccountLimits(l AccountLimits) error {
	for _, f := range []struct {
		name string
		u    LimitUpdate
	}{{"max_running", l.MaxRunning}, {"max_queued", l.MaxQueued}} {
		if f.u.Set && f.u.Value != nil && *f.u.Value < 1 {
			return fmt.Errorf("%w: %s must be a whole number of at least 1, or null for no limit", ErrInvalidArgument, f.name)
		}
	}
	return nil
}

// Apply sets the limits l changes on a.
func (l AccountLimits) Apply(a *Account) {
	if l.MaxRunning.Set {
		a.MaxRunning = l.MaxRunning.Value
	}
	if l.MaxQueued.Set {
		a.MaxQueued = l.MaxQueued.Value
	}
}

// RoundRobin is a fair claim's walk over the accounts that have queued jobs, shared by both
// stores: the accounts after last in id order (byte order), then from the first up to last
// itself, each once. visit(after) takes the first account whose id is above after (after ""
// is the first account); it returns that account's id ("" when there is none) and whether it
// claimed a job of it (false when the account is at its max_running, or its jobs are all
// being claimed by someone else). RoundRobin returns the account that was served, or "".
func RoundRobin(last string, visit func(after string) (acct string, claimed bool, err error)) (string, error) {
	after, wrapped := last, false
	for {
		acct, claimed, err := visit(after)
		if err != nil || claimed {
			return acct, err
		}
		if acct == "" || (wrapped && acct > last) {
			if wrapped || last == "" {
				return "", nil
			}
			after, wrapped = "", true
			continue
		}
		after = acct
	}
}

// claimTurn is the account whose job this process claimed last: the next claim starts after
// it. It is a hint kept in memory: lost with the process, the walk starts at the first account.
type claimTurn struct {
	sync.Mutex
	last string
}

func (c *claimTurn) get() string {
	c.Lock()
	defer c.Unlock()
	return c.last
}

func (c *claimTurn) set(acct string) {
	c.Lock()
	c.last = acct
	c.Unlock()
}

// bucketQueueByAccount is the queue by account (accountID 0x00 queueKey -> nil): each
// account's queued jobs oldest start first, and the accounts in id order, so a claim finds the
// next account with a queued job, and its oldest one, with one seek. Every queue entry
// (bucketQueue) has its twin here (enqueue, dequeue); Open rebuilds it from the queue.
var bucketQueueByAccount = []byte("queue_by_account")

func fairKey(job Job) []byte {
	k := make([]byte, 0, len(job.AccountID)+1+16+len(job.ID))
	k = append(k, job.AccountID...)
	k = append(k, 0)
	return append(k, queueKey(job)...)
}

// enqueue puts a queued job in both queues, in the caller's transaction.
func enqueue(tx *bolt.Tx, job Job) error {
	if err := tx.Bucket(bucketQueue).Put(queueKey(job), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketQueueByAccount).Put(fairKey(job), nil)
}

// dequeue takes a job out of both queues, in the caller's transaction.
func dequeue(tx *bolt.Tx, job Job) error {
	if err := tx.Bucket(bucketQueue).Delete(queueKey(job)); err != nil {
		return err
	}
	return tx.Bucket(bucketQueueByAccount).Delete(fairKey(job))
}

// rebuildQueueByAccount makes bucketQueueByAccount from bucketQueue, in Open's transaction:
// a file written by a binary without it (or by one that did not keep it) gets it right, and
// the cost is one read of each queued job.
func rebuildQueueByAccount(tx *bolt.Tx) error {
	if tx.Bucket(bucketQueueByAccount) != nil {
		if err := tx.DeleteBucket(bucketQueueByAccount); err != nil {
			return err
		}
	}
	b, err := tx.CreateBucket(bucketQueueByAccount)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketQueue).ForEach(func(k, _ []byte) error {
		if len(k) < 16 {
			return nil
		}
		job, err := findJob(tx, string(k[16:]))
		if err == ErrNotFound || (err == nil && job.Status != StatusQueued) {
			return nil // a stale entry: the claim drops it
		} else if err != nil {
			return err
		}
		return b.Put(fairKey(job), nil)
	})
}

// countPrefix counts the status index's entries of the account's jobs in status.
func countStatus(tx *bolt.Tx, accountID, status string) int64 {
	prefix := indexPrefix(accountID, status)
	c := tx.Bucket(bucketJobsByStatus).Cursor()
	var n int64
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// checkQueueRoom refuses a start with ErrQueueFull when the account has MaxQueued jobs queued.
func checkQueueRoom(tx *bolt.Tx, acct Account) error {
	if acct.MaxQueued == nil {
		return nil
	}
	if n := countStatus(tx, acct.ID, StatusQueued); n >= *acct.MaxQueued {
		return fmt.Errorf("%w: %d jobs queued, max_queued is %d", ErrQueueFull, n, *acct.MaxQueued)
	}
	return nil
}

// UpdateAccountLimits changes the account's max_running and max_queued as l says.
func (s *Store) UpdateAccountLimits(id string, l AccountLimits) (Account, error) {
	if err := ValidateAccountLimits(l); err != nil {
		return Account{}, err
	}
	var acct Account
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		if acct, err = findAccount(tx, id); err != nil {
			return err
		}
		l.Apply(&acct)
		return putAccount(tx, acct)
	})
	return acct, err
}

// claimFair claims the oldest queued job of the next account in turn (RoundRobin) that is
// under its max_running, in the caller's transaction. Stale queue entries are dropped and
// jobs past expires_at fail (appended to expired) on the way.
func (s *Store) claimFair(tx *bolt.Tx, fin *finished, now time.Time, expired *[]string) (job Job, ok bool, err error) {
	fq := tx.Bucket(bucketQueueByAccount)
	served, err := RoundRobin(s.claimTurn.get(), func(after string) (string, bool, error) {
		c := fq.Cursor()
		var k []byte
		if after == "" {
			k, _ = c.First()
		} else {
			k, _ = c.Seek(append([]byte(after), 1))
		}
		if k == nil {
			return "", false, nil
		}
		acctID := string(k[:bytes.IndexByte(k, 0)])
		prefix := append([]byte(acctID), 0)
		acct, err := findAccount(tx, acctID)
		if err != nil {
			return "", false, err
		}
		if acct.MaxRunning != nil && countStatus(tx, acctID, StatusRunning) >= *acct.MaxRunning {
			return acctID, false, nil
		}
		for k, _ = c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			qk := bytes.Clone(k[len(prefix):])
			j, err := findJob(tx, string(qk[16:]))
			if err == ErrNotFound || (err == nil && j.Status != StatusQueued) {
				// a stale entry (the job was cancelled or expired): drop it
				if err := c.Delete(); err != nil {
					return "", false, err
				}
				if err := tx.Bucket(bucketQueue).Delete(qk); err != nil {
					return "", false, err
				}
				continue
			}
			if err != nil {
				return "", false, err
			}
			if err := dequeue(tx, j); err != nil {
				return "", false, err
			}
			if !now.Before(j.ExpiresAt) {
				// Past expires_at before a worker got to it: it fails now, whatever the sweep's
				// schedule, and is never converted.
				if err := s.expire(tx, fin, &j, now); err != nil {
					return "", false, err
				}
				*expired = append(*expired, j.ID)
				continue
			}
			if err := setStatus(tx, &j, StatusRunning); err != nil {
				return "", false, err
			}
			j.Attempt++
			if err := tx.Bucket(bucketRunning).Put([]byte(j.ID), nil); err != nil {
				return "", false, err
			}
			job, ok = j, true
			if err := putJob(tx, j); err != nil {
				return "", false, err
			}
			return acctID, true, s.recordJobEvent(tx, j, now)
		}
		return acctID, false, nil
	})
	if ok {
		s.claimTurn.set(served)
	}
	return job, ok, err
}
