package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The conversion cache (docs/cache.md). An entry maps a cache key (CacheKey: the input's
// SHA-256 and the job's CacheBase) to the stored output of the job that converted it. Jobs
// answered from the cache point at that output (Output.Object) instead of holding a copy, so
// outputs are reference-counted: every job pointing at an object holds one reference; the job
// that wrote it holds none. Deleting a job whose own output is still referenced keeps the
// output (OutputHeld); dropping the last reference of an object whose job is gone records it
// as dead (DeadOutputs), and the sweeper deletes it. An entry lives as long as its output: it
// goes with the last job that uses the output, so no file outlives every job's expires_at
// (SPEC.md), and each hit extends it. Entries are also evicted least recently used first once
// their outputs' bytes pass Options.CacheMaxBytes.

var (
	bucketCache     = []byte("cache")         // cache key -> CacheEntry JSON
	bucketCacheLRU  = []byte("cache_lru")     // lastUsed(8) cache key -> nil, least recent first
	bucketCacheRefs = []byte("cache_refs")    // object (job id) -> references (8)
	bucketCacheDead = []byte("cache_dead")    // object (job id) -> nil: no job, no reference, files to delete
	bucketCacheObjs = []byte("cache_objects") // object (job id) -> the cache key of its entry
	metaCacheBytes  = []byte("cache_bytes")
	metaCacheCount  = []byte("cache_entries")
)

// CacheEntry is one cached output: the object (job id) whose stored output holds the bytes,
// what the Job shows of it, and when a job last used it.
type CacheEntry struct {
	Key      string    `json:"key"`
	Object   string    `json:"object"`
	Output   Output    `json:"output"`
	LastUsed time.Time `json:"last_used"`
}

// CacheKey is the cache key of an input (its SHA-256, lowercase hex) converted as base says
// (Job.CacheBase): the hex SHA-256 of both.
func CacheKey(base, inputSHA256 string) string {
	h := sha256.Sum256([]byte(base + "\x00" + inputSHA256))
	return hex.EncodeToString(h[:])
}

// CacheKeyOf is the job's cache key, or "" when it takes no part in the cache or its input's
// hash is not known yet.
func CacheKeyOf(job Job) string {
	if job.CacheBase == "" || job.InputSHA256 == "" {
		return ""
	}
	return CacheKey(job.CacheBase, job.InputSHA256)
}

// takeCached gives job the cached output of its key, when there is one, adding the job's
// reference and marking the entry used. The caller then finishes the job succeeded.
//
// The job is charged price cents instead of 1 (Options.CacheHitCents; Job.HitCents). A price
// above 1 that the account's cap cannot take beside its spend and its other reservations is
// no hit: the job converts, for its 1 cent, as a miss would.
func takeCached(tx *bolt.Tx, job *Job, now time.Time, price int64) (bool, error) {
	key := CacheKeyOf(*job)
	if key == "" {
		return false, nil
	}
	b := tx.Bucket(bucketCache)
	if b == nil {
		return false, nil
	}
	var e CacheEntry
	if err := getJSON(b, []byte(key), &e); err == ErrNotFound {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("cache entry: %w", err)
	}
	if price > 1 {
		acct, err := findAccount(tx, job.AccountID)
		if err != nil {
			return false, err
		}
		if acct.SpentCents(now)+acct.ReservedCents-1+price > acct.SpendCapCents {
			return false, nil
		}
	}
	job.HitCents = &price
	out := e.Output
	out.Cached, out.Object = true, e.Object
	out.Warnings = append([]Warning(nil), e.Output.Warnings...)
	job.Output = &out
	if err := addRef(tx, e.Object, 1); err != nil {
		return false, err
	}
	return true, touchEntry(tx, &e, now)
}

// touchEntry moves the entry to the recent end of the LRU order.
func touchEntry(tx *bolt.Tx, e *CacheEntry, now time.Time) error {
	lru, err := tx.CreateBucketIfNotExists(bucketCacheLRU)
	if err != nil {
		return err
	}
	if !e.LastUsed.IsZero() {
		if err := lru.Delete(timeKey(e.LastUsed, e.Key)); err != nil {
			return err
		}
	}
	e.LastUsed = now
	if err := lru.Put(timeKey(now, e.Key), nil); err != nil {
		return err
	}
	b, err := tx.CreateBucketIfNotExists(bucketCache)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(e.Key), e)
}

// putCached records a job that just succeeded by converting as its key's entry, unless the
// key has one already (an identical job converted first), and evicts least recently used
// entries past maxBytes (0: no bound).
func putCached(tx *bolt.Tx, job Job, now time.Time, maxBytes int64) error {
	key := CacheKeyOf(job)
	if key == "" || job.Output == nil || job.Output.Object != "" {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketCache)
	if err != nil {
		return err
	}
	if b.Get([]byte(key)) != nil {
		return nil
	}
	if maxBytes > 0 && job.Output.Bytes > maxBytes {
		return nil // it would evict everything and itself
	}
	out := *job.Output
	out.Cached, out.Object = false, ""
	e := CacheEntry{Key: key, Object: job.ID, Output: out}
	if err := touchEntry(tx, &e, now); err != nil {
		return err
	}
	objs, err := tx.CreateBucketIfNotExists(bucketCacheObjs)
	if err != nil {
		return err
	}
	if err := objs.Put([]byte(job.ID), []byte(key)); err != nil {
		return err
	}
	total, err := addCacheBytes(tx, 1, out.Bytes)
	if err != nil {
		return err
	}
	if maxBytes <= 0 {
		return nil
	}
	lru := tx.Bucket(bucketCacheLRU)
	c := lru.Cursor()
	for k, _ := c.First(); k != nil && total > maxBytes; k, _ = c.First() {
		if len(k) < 8 {
			return fmt.Errorf("cache LRU key of %d bytes", len(k))
		}
		old := string(k[8:])
		if old == key {
			break // the newest: nothing older is left
		}
		freed, err := dropEntry(tx, old)
		if err != nil {
			return err
		}
		total -= freed
	}
	return nil
}

// dropEntry removes a cache entry, returning its bytes; no entry is 0.
func dropEntry(tx *bolt.Tx, key string) (int64, error) {
	b := tx.Bucket(bucketCache)
	if b == nil {
		return 0, nil
	}
	var e CacheEntry
	if err := getJSON(b, []byte(key), &e); err == ErrNotFound {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("cache entry: %w", err)
	}
	if err := b.Delete([]byte(key)); err != nil {
		return 0, err
	}
	if lru := tx.Bucket(bucketCacheLRU); lru != nil {
		if err := lru.Delete(timeKey(e.LastUsed, key)); err != nil {
			return 0, err
		}
	}
	if _, err := addCacheBytes(tx, -1, -e.Output.Bytes); err != nil {
		return 0, err
	}
	if objs := tx.Bucket(bucketCacheObjs); objs != nil {
		if err := objs.Delete([]byte(e.Object)); err != nil {
			return 0, err
		}
	}
	return e.Output.Bytes, nil
}

// dropEntryOf removes the cache entry whose output is the object's, if there is one.
func dropEntryOf(tx *bolt.Tx, object string) error {
	objs := tx.Bucket(bucketCacheObjs)
	if objs == nil {
		return nil
	}
	key := objs.Get([]byte(object))
	if key == nil {
		return nil
	}
	_, err := dropEntry(tx, string(key))
	return err
}

// addCacheBytes adds to the count of the cache's entries and the bytes they hold, and
// returns the bytes.
func addCacheBytes(tx *bolt.Tx, entries, bytes int64) (int64, error) {
	meta := tx.Bucket(bucketMeta)
	add := func(key []byte, delta int64) (int64, error) {
		var total int64
		if v := meta.Get(key); len(v) == 8 {
			total = int64(bytesToU64(v))
		}
		total = max(total+delta, 0)
		return total, meta.Put(key, u64(uint64(total)))
	}
	if _, err := add(metaCacheCount, entries); err != nil {
		return 0, err
	}
	return add(metaCacheBytes, bytes)
}

// addRef adds delta to the object's references. When the last one goes and the job that
// wrote the object is gone, the object is recorded dead for the sweeper to delete, and its
// entry goes with it.
func addRef(tx *bolt.Tx, object string, delta int64) error {
	refs, err := tx.CreateBucketIfNotExists(bucketCacheRefs)
	if err != nil {
		return err
	}
	var n int64
	if v := refs.Get([]byte(object)); len(v) == 8 {
		n = int64(bytesToU64(v))
	}
	n += delta
	if n > 0 {
		return refs.Put([]byte(object), u64(uint64(n)))
	}
	if err := refs.Delete([]byte(object)); err != nil {
		return err
	}
	if tx.Bucket(bucketJobs).Get([]byte(object)) != nil {
		return nil // the job's own expiry deletes it
	}
	dead, err := tx.CreateBucketIfNotExists(bucketCacheDead)
	if err != nil {
		return err
	}
	if err := dead.Put([]byte(object), nil); err != nil {
		return err
	}
	return dropEntryOf(tx, object)
}

// outputHeld reports whether an object has references.
func outputHeld(tx *bolt.Tx, object string) bool {
	refs := tx.Bucket(bucketCacheRefs)
	return refs != nil && refs.Get([]byte(object)) != nil
}

// releaseOutput is a job's deletion in the cache: it drops the reference the job held on
// another job's output, and when no job uses its own output any more, the entry of that
// output (the caller deletes the job's record first).
func releaseOutput(tx *bolt.Tx, job Job) error {
	if job.Output != nil && job.Output.Object != "" && job.Output.Object != job.ID {
		if err := addRef(tx, job.Output.Object, -1); err != nil {
			return err
		}
	}
	if outputHeld(tx, job.ID) {
		return nil
	}
	return dropEntryOf(tx, job.ID)
}

// OutputHeld reports whether the stored output of the job with this id is still used by
// another job: deleting the job (retention) must then keep its output.
func (s *Store) OutputHeld(jobID string) (bool, error) {
	var held bool
	err := s.db.View(func(tx *bolt.Tx) error {
		held = outputHeld(tx, jobID)
		return nil
	})
	return held, err
}

// DeadOutputs lists objects whose job is gone and whose last reference was dropped: their
// files are to be deleted, then ForgetDeadOutputs called.
func (s *Store) DeadOutputs() ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCacheDead)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	return ids, err
}

// ForgetDeadOutputs removes objects from DeadOutputs once their files are deleted.
func (s *Store) ForgetDeadOutputs(ids []string) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCacheDead)
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// CachedOutput returns the cache entry of key, if there is one.
func (s *Store) CachedOutput(key string) (CacheEntry, bool, error) {
	var e CacheEntry
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCache)
		if b == nil {
			return nil
		}
		err := getJSON(b, []byte(key), &e)
		if err == ErrNotFound {
			return nil
		}
		found = err == nil
		return err
	})
	return e, found, err
}

// DropCacheEntry removes the cache entry of key (its output was found missing from object
// storage), so the next identical job converts again.
func (s *Store) DropCacheEntry(key string) error {
	return s.update(func(tx *bolt.Tx) error {
		_, err := dropEntry(tx, key)
		return err
	})
}

// CacheStats is what the cache holds.
type CacheStats struct {
	Entries int64
	Bytes   int64
}

// CacheStats counts the cache's entries and the bytes of their outputs.
func (s *Store) CacheStats() (CacheStats, error) {
	var st CacheStats
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(metaCacheCount); len(v) == 8 {
			st.Entries = int64(bytesToU64(v))
		}
		if v := tx.Bucket(bucketMeta).Get(metaCacheBytes); len(v) == 8 {
			st.Bytes = int64(bytesToU64(v))
		}
		return nil
	})
	return st, err
}

// ChecksumMismatch checks an upload's SHA-256 (sum, "" when object storage did not say)
// against the job's input_sha256, at start. Without one the upload's hash becomes the job's,
// for the cache; a difference sets the message of the job the start cancels and reports true.
func ChecksumMismatch(job *Job, sum string) bool {
	switch {
	case sum == "":
		// Object storage did not say: a client's input_sha256 stays unchecked, so the job
		// leaves the cache rather than store an output under a hash nobody verified.
		if job.InputSHA256 != "" {
			job.CacheBase = ""
		}
		return false
	case job.InputSHA256 == "":
		job.InputSHA256 = sum
		return false
	case job.InputSHA256 != sum:
		job.ErrorMessage = fmt.Sprintf("the uploaded bytes have SHA-256 %s, not input_sha256 %s", sum, job.InputSHA256)
		return true
	}
	return false
}

// verifyCacheRefs checks the cache's bookkeeping: each object's references are the jobs
// that use it, every entry's output has a job, the totals are the entries', and a dead object has no job and no
// reference.
func verifyCacheRefs(tx *bolt.Tx, problems *[]error) error {
	want := map[string]int64{}
	var entries, bytes int64
	var objects []string
	if b := tx.Bucket(bucketCache); b != nil {
		err := b.ForEach(func(k, _ []byte) error {
			var e CacheEntry
			if err := getJSON(b, k, &e); err != nil {
				return err
			}
			objects = append(objects, e.Object)
			entries++
			bytes += e.Output.Bytes
			return nil
		})
		if err != nil {
			return err
		}
	}
	err := tx.Bucket(bucketJobs).ForEach(func(k, _ []byte) error {
		job, err := findJob(tx, string(k))
		if err != nil {
			return err
		}
		if job.Output != nil && job.Output.Object != "" {
			want[job.Output.Object]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	got := map[string]int64{}
	if refs := tx.Bucket(bucketCacheRefs); refs != nil {
		if err := refs.ForEach(func(k, v []byte) error {
			got[string(k)] = int64(bytesToU64(v))
			return nil
		}); err != nil {
			return err
		}
	}
	for object, n := range want {
		if got[object] != n {
			*problems = append(*problems, fmt.Errorf("output %s has %d references, %d jobs use it", object, got[object], n))
		}
	}
	for object, n := range got {
		if _, ok := want[object]; !ok {
			*problems = append(*problems, fmt.Errorf("output %s has %d references, nothing uses it", object, n))
		}
	}
	for _, object := range objects {
		if tx.Bucket(bucketJobs).Get([]byte(object)) == nil && got[object] == 0 {
			*problems = append(*problems, fmt.Errorf("cache entry of output %s outlived every job that uses it", object))
		}
	}
	var st CacheStats
	if v := tx.Bucket(bucketMeta).Get(metaCacheCount); len(v) == 8 {
		st.Entries = int64(bytesToU64(v))
	}
	if v := tx.Bucket(bucketMeta).Get(metaCacheBytes); len(v) == 8 {
		st.Bytes = int64(bytesToU64(v))
	}
	if st.Entries != entries || st.Bytes != bytes {
		*problems = append(*problems, fmt.Errorf("cache totals %d entries, %d bytes; the entries hold %d, %d", st.Entries, st.Bytes, entries, bytes))
	}
	if dead := tx.Bucket(bucketCacheDead); dead != nil {
		return dead.ForEach(func(k, _ []byte) error {
			if tx.Bucket(bucketJobs).Get(k) != nil || got[string(k)] > 0 {
				*problems = append(*problems, fmt.Errorf("output %s is recorded dead but its job or a reference remains", k))
			}
			return nil
		})
	}
	return nil
}

// bucketCacheInflight names, per cache key, the job converting it (single flight): a claim of
// another job with the key while that one runs waits for it (Job.WaitFor).
var bucketCacheInflight = []byte("cache_inflight") // cache key -> job id

// claimFlight makes a job just claimed the one converting its key, or, when another job of the
// key is running, sets job.WaitFor to it.
func claimFlight(tx *bolt.Tx, job *Job) error {
	key := CacheKeyOf(*job)
	if key == "" {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketCacheInflight)
	if err != nil {
		return err
	}
	if v := b.Get([]byte(key)); v != nil && string(v) != job.ID {
		other, err := findJob(tx, string(v))
		if err != nil && err != ErrNotFound {
			return err
		}
		if err == nil && other.Status == StatusRunning {
			job.WaitFor = other.ID
			return nil
		}
	}
	return b.Put([]byte(key), []byte(job.ID))
}

// endFlight forgets a job that finished as the one converting its key.
func endFlight(tx *bolt.Tx, job Job) error {
	key := CacheKeyOf(job)
	b := tx.Bucket(bucketCacheInflight)
	if key == "" || b == nil || string(b.Get([]byte(key))) != job.ID {
		return nil
	}
	return b.Delete([]byte(key))
}

// FinishFromCache is called for a running attempt that waited (Job.WaitFor) for another job
// converting the same input: when that job's output is cached, the attempt succeeds with it
// (hit, its cent charged, in one transaction); otherwise the attempt becomes the one that
// converts, or, when another job of the key is still converting, job.WaitFor names it again.
// A job no longer running that attempt is ErrInvalidState.
func (s *Store) FinishFromCache(jobID string, attempt int) (job Job, hit bool, err error) {
	now := s.opts.Now().UTC()
	err = s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		hit = false
		if job, err = findJob(tx, jobID); err != nil {
			return err
		}
		if job.Status != StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		if hit, err = takeCached(tx, &job, now, s.opts.hitCents()); err != nil {
			return err
		} else if hit {
			return s.finish(tx, fin, &job, StatusSucceeded, now)
		}
		return claimFlight(tx, &job)
	})
	if err != nil {
		return Job{}, false, err
	}
	s.signal(job.ID)
	return job, hit, nil
}
