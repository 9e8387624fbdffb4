package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// The conversion cache on PostgreSQL: store/cache.go's rules on the tables of migration 0016.
// An entry's row is locked by a hit (UPDATE) and by its eviction, an object's references
// change in one UPSERT, and claims of one key serialise on an advisory lock (flight), so
// hits, stores, evictions and single flight are exact on any node.
//
// The hot paths run as the transition functions of migration 0019 (transitions.go): a create
// answered from the cache (convsvc_cache_take, convsvc_finish_hit), a start that queues with
// the key, a claim's flight and FinishFromCache (convsvc_cache_flight), and a finish that
// stores its entry and evicts (convsvc_finish_job), each one round trip. They are this file's
// Go functions statement for statement; the Go transactions remain for what the functions
// leave to Go (CVFB0: a size or checksum mismatch, an expired job, a batch's last job; an
// Idempotency-Key) and for the previous release's nodes during an upgrade, and the expiry's
// (releaseOutputs) and DropCacheEntry are Go only.
//
// Lock order. Every transaction that touches the cache takes its locks in this order (the
// Go transactions here and in jobs.go, the transition functions of migrations 0015 and 0019
// and 0025's rewrites of the create and start, and 0021's claim walk), so identical jobs
// started, claimed and finished at once on several nodes never deadlock (RunCacheAcrossNodes):
//
//  0. the API key's rate_windows row, when a create or a start carries its request's write
//     gate (migration 0024's convsvc_write_gate, the first statement of the transaction:
//     keycache.go). No transaction takes it after any lock below: AuthenticateWrite and
//     AllowWrite count in transactions of their own, PurgeRateWindows deletes alone, and
//     Import locks rate_windows before the tables below. A revocation (any UPDATE or DELETE
//     of api_keys: migration 0029's trigger) writes it after the key's api_keys row, which
//     no gate locks. Two gated transactions of one key queue on it; they queued on the
//     account's row anyway (a key is one account's);
//  1. the job's row (FOR UPDATE; a claim's FOR UPDATE SKIP LOCKED);
//  2. its account's row (FOR UPDATE; lockAccount, lockAccountSpend), before anything of the
//     cache, even where the account's cents move only on a hit (a claim, FinishFromCache);
//  3. the cache key's advisory lock (lockCacheKey: claims and FinishFromCache only);
//  4. the key's entry row (a hit's UPDATE; an expiry's lockEntriesOf);
//  5. the output's cache_refs row;
//  6. the account's month_spend and event_seqs rows (the status change's trigger), and the
//     key's cache_inflight row;
//  7. cache_totals (storing or dropping an entry; eviction skips locked entries).
//
// Rows of one account after its row (month_spend, event_seqs) cannot close a cycle: whoever
// takes them holds the account's row first, or takes no lock after them. A claim of a job
// without a cache key, and (migration 0028) a start of an account without max_queued, hold
// only the job's row when their status change takes event_seqs, and take nothing after it
// (the start reads its account's cap without a lock; since migration 0033 so does a start
// whose cache key finds no entry, whose lookup of cache_entries locks nothing). A claim's
// status change takes event_seqs (2 < 6)
// only after the account's row when the job has a cache key, and each hit at claim commits
// on its own, so no transaction holds two accounts' rows, except ReapExpiredLeases and
// ExpireJobs: they lock all their jobs (SKIP LOCKED), then their accounts' rows in id order
// (lockAccounts), before any status change. A claim locks an account's row only for the job
// it takes, and tries the claim lock of an account with max_running (passing the account when
// another claim holds it), so a claim that walks on past capped accounts waits for none of
// what it keeps (migration 0022; before, two claims passing two such accounts in opposite
// orders deadlocked). An import (Import) locks whole tables, in this
// order as far as it goes (rate_windows, jobs, accounts, cache_entries, cache_refs, month_spend,
// cache_inflight, cache_totals).

// takeCached gives job the cached output of its key, when there is one, adding the job's
// reference and marking the entry used; the caller then finishes the job succeeded. The job
// is charged price cents instead of 1 (Options.CacheHitCents, store.Job.HitCents): a price
// above 1 that the account's cap cannot take beside its spend and its other reservations is
// no hit (the job converts for its 1 cent). The caller holds the account's row (lock order).
func takeCached(ctx context.Context, tx pgx.Tx, job *store.Job, price int64) (bool, error) {
	key := store.CacheKeyOf(*job)
	if key == "" {
		return false, nil
	}
	if price > 1 {
		capCents, reserved, spent, err := lockAccountSpend(ctx, tx, job.AccountID)
		if err != nil {
			return false, err
		}
		if spent+reserved-1+price > capCents {
			return false, nil
		}
	}
	var out store.Output
	var object string
	var warnings *string
	err := tx.QueryRow(ctx, `UPDATE cache_entries SET last_used = clock_timestamp() WHERE key = $1
		RETURNING object, output_bytes, output_sha256, output_attempt, output_warnings, output_verified`, key).
		Scan(&object, &out.Bytes, &out.SHA256, &out.Attempt, &warnings, &out.Verified)
	if isNoRows(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("cache entry: %w", err)
	}
	if warnings != nil {
		if err := json.Unmarshal([]byte(*warnings), &out.Warnings); err != nil {
			return false, fmt.Errorf("cache entry: output_warnings: %w", err)
		}
	}
	out.Cached, out.Object = true, object
	job.Output, job.HitCents = &out, &price
	return true, addRef(ctx, tx, object, 1)
}

// putCached records a job that just succeeded by converting as its key's entry, unless the
// key has one already, and evicts least recently used entries past maxBytes (0: no bound).
func putCached(ctx context.Context, tx pgx.Tx, job store.Job, maxBytes int64) error {
	key := store.CacheKeyOf(job)
	if key == "" || job.Output == nil || job.Output.Object != "" || (maxBytes > 0 && job.Output.Bytes > maxBytes) {
		return nil
	}
	warnings, err := warningsJSON(job.Output)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt, output_warnings, output_verified, last_used)
		VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) ON CONFLICT (key) DO NOTHING`,
		key, job.ID, job.Output.Bytes, job.Output.SHA256, job.Attempt, nullString(warnings), job.Output.Verified)
	if err != nil || tag.RowsAffected() == 0 {
		return err // an identical job's output is cached already
	}
	var total int64
	if err := tx.QueryRow(ctx, `UPDATE cache_totals SET entries = entries + 1, bytes = bytes + $1 WHERE id = 1 RETURNING bytes`,
		job.Output.Bytes).Scan(&total); err != nil {
		return err
	}
	for maxBytes > 0 && total > maxBytes {
		var old string
		err := tx.QueryRow(ctx, `SELECT key FROM cache_entries WHERE key <> $1 ORDER BY last_used, key LIMIT 1 FOR UPDATE SKIP LOCKED`, key).Scan(&old)
		if isNoRows(err) {
			return nil // the rest is in use by other transactions; the next store evicts
		} else if err != nil {
			return err
		}
		freed, err := dropEntry(ctx, tx, old)
		if err != nil {
			return err
		}
		total -= freed
	}
	return nil
}

// dropEntry removes a cache entry, returning its bytes; no entry is 0.
func dropEntry(ctx context.Context, tx pgx.Tx, key string) (int64, error) {
	var object string
	var bytes int64
	err := tx.QueryRow(ctx, `DELETE FROM cache_entries WHERE key = $1 RETURNING object, output_bytes`, key).Scan(&object, &bytes)
	if isNoRows(err) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE cache_totals SET entries = greatest(entries - 1, 0), bytes = greatest(bytes - $1, 0) WHERE id = 1`, bytes); err != nil {
		return 0, err
	}
	return bytes, nil
}

// dropEntriesOf removes the cache entries whose outputs are the objects' and no job uses.
func dropEntriesOf(ctx context.Context, tx pgx.Tx, objects []string) error {
	var n, bytes int64
	err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM cache_entries e WHERE e.object = ANY($1)
			AND NOT EXISTS (SELECT 1 FROM cache_refs r WHERE r.object = e.object) RETURNING output_bytes)
		SELECT count(*), coalesce(sum(output_bytes), 0) FROM gone`, objects).Scan(&n, &bytes)
	if err != nil || n == 0 {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE cache_totals SET entries = greatest(entries - $1, 0), bytes = greatest(bytes - $2, 0) WHERE id = 1`, n, bytes)
	return err
}

// addRef adds delta to the object's references. When the last one goes and the job that
// wrote the object is gone, the object is recorded dead for the sweeper. The job's row is read
// FOR SHARE, so a concurrent deletion of the job is either seen whole or waited for.
func addRef(ctx context.Context, tx pgx.Tx, object string, delta int64) error {
	if delta > 0 {
		_, err := tx.Exec(ctx, `INSERT INTO cache_refs (object, refs) VALUES ($1, $2)
			ON CONFLICT (object) DO UPDATE SET refs = cache_refs.refs + excluded.refs`, object, delta)
		return err
	}
	var left int64
	err := tx.QueryRow(ctx, `UPDATE cache_refs SET refs = refs + $2 WHERE object = $1 AND refs + $2 > 0 RETURNING refs`, object, delta).Scan(&left)
	if err == nil {
		return nil
	} else if !isNoRows(err) {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM cache_refs WHERE object = $1`, object); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1 FOR SHARE)`, object).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil // the job's own expiry deletes it
	}
	if _, err = tx.Exec(ctx, `INSERT INTO cache_dead (object) VALUES ($1) ON CONFLICT DO NOTHING`, object); err != nil {
		return err
	}
	return dropEntriesOf(ctx, tx, []string{object})
}

// releaseOutputs is the deletion of jobs (their rows already deleted) in the cache: it drops
// the references they held on other jobs' outputs, and the entries of their own outputs that no
// job uses any more. The entries of every output concerned are locked first, before their
// references (lock order above), as a hit locks its entry before it adds a reference.
func releaseOutputs(ctx context.Context, tx pgx.Tx, jobs []store.Job) error {
	ids := make([]string, 0, len(jobs))
	objects := make([]string, 0, len(jobs))
	for _, job := range jobs {
		ids = append(ids, job.ID)
		objects = append(objects, job.ID)
		if job.Output != nil && job.Output.Object != "" && job.Output.Object != job.ID {
			objects = append(objects, job.Output.Object)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cache_entries WHERE object = ANY($1) ORDER BY key FOR UPDATE`, objects); err != nil {
		return err
	}
	for _, job := range jobs {
		if job.Output == nil || job.Output.Object == "" || job.Output.Object == job.ID {
			continue
		}
		if err := addRef(ctx, tx, job.Output.Object, -1); err != nil {
			return err
		}
	}
	return dropEntriesOf(ctx, tx, ids)
}

// OutputHeld reports whether the stored output of the job with this id is still used by
// another job (store.Store.OutputHeld).
func (s *Store) OutputHeld(jobID string) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cache_refs WHERE object = $1)`, jobID).Scan(&held)
	return held, wrap("output held", err)
}

// DeadOutputs lists objects whose files are to be deleted (store.Store.DeadOutputs).
func (s *Store) DeadOutputs() ([]string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT object FROM cache_dead ORDER BY object LIMIT 1000`)
	if err != nil {
		return nil, wrap("dead outputs", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, wrap("dead outputs", err)
}

// ForgetDeadOutputs removes objects from DeadOutputs once their files are deleted.
func (s *Store) ForgetDeadOutputs(ids []string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.pool.Exec(ctx, `DELETE FROM cache_dead WHERE object = ANY($1)`, ids)
	return wrap("forget dead outputs", err)
}

// CachedOutput returns the cache entry of key, if there is one.
func (s *Store) CachedOutput(key string) (store.CacheEntry, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	e := store.CacheEntry{Key: key}
	err := s.pool.QueryRow(ctx, `SELECT object, output_bytes, output_sha256, output_attempt, output_verified, last_used FROM cache_entries WHERE key = $1`, key).
		Scan(&e.Object, &e.Output.Bytes, &e.Output.SHA256, &e.Output.Attempt, &e.Output.Verified, &e.LastUsed)
	if isNoRows(err) {
		return store.CacheEntry{}, false, nil
	} else if err != nil {
		return store.CacheEntry{}, false, wrap("cached output", err)
	}
	return e, true, nil
}

// DropCacheEntry removes the cache entry of key (its output was found missing).
func (s *Store) DropCacheEntry(key string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return wrap("drop cache entry", s.tx(ctx, func(tx pgx.Tx) error {
		_, err := dropEntry(ctx, tx, key)
		return err
	}))
}

// CacheStats counts the cache's entries and the bytes of their outputs.
func (s *Store) CacheStats() (store.CacheStats, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var st store.CacheStats
	err := s.pool.QueryRow(ctx, `SELECT entries, bytes FROM cache_totals WHERE id = 1`).Scan(&st.Entries, &st.Bytes)
	return st, wrap("cache stats", err)
}

// lockCacheKey is the first key of the transaction-scoped advisory lock a claim takes on a
// cache key (the second is hashtext of the key) before it reads who converts it.
const lockCacheKey int32 = 0x63760016

// flight answers a job just claimed from the cache (hit), or makes it the one converting its
// key, or, when another job of the key is running, sets job.WaitFor to it (single flight).
// Claimers of one key on every node take the key's advisory lock first, and one statement
// then reads both the entry and who converts (one snapshot, after the lock was granted): a
// twin's finish is seen either whole (its entry) or not at all (it still runs), so two claims
// of twins never both convert.
func flight(ctx context.Context, tx pgx.Tx, job *store.Job, price int64) (hit bool, err error) {
	key := store.CacheKeyOf(*job)
	if key == "" {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockCacheKey, key); err != nil {
		return false, err
	}
	var cached bool
	var holder *string
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cache_entries WHERE key = $1),
			(SELECT i.job_id FROM cache_inflight i JOIN jobs j ON j.id = i.job_id
				WHERE i.key = $1 AND j.status = 'running' AND i.job_id <> $2)`, key, job.ID).Scan(&cached, &holder)
	if err != nil {
		return false, err
	}
	if cached {
		if hit, err := takeCached(ctx, tx, job, price); err != nil || hit {
			return hit, err
		}
	}
	if holder != nil {
		job.WaitFor = *holder
		return false, nil
	}
	_, err = tx.Exec(ctx, `INSERT INTO cache_inflight (key, job_id) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id`, key, job.ID)
	return false, err
}

// endFlight forgets a job that finished as the one converting its key.
func endFlight(ctx context.Context, tx pgx.Tx, job store.Job) error {
	key := store.CacheKeyOf(job)
	if key == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM cache_inflight WHERE key = $1 AND job_id = $2`, key, job.ID)
	return err
}

// FinishFromCache is store.Store.FinishFromCache on PostgreSQL.
func (s *Store) FinishFromCache(jobID string, attempt int) (job store.Job, hit bool, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if job, err := s.finishFromCacheCall(ctx, jobID, attempt); !errors.Is(err, errFallback) {
		if err != nil {
			return store.Job{}, false, wrap("finish from cache", err)
		}
		if hit = job.Status == store.StatusSucceeded; hit {
			s.reportFinished([]store.Job{job})
		}
		s.signal(job.ID)
		return job, hit, nil
	}
	err = s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		hit = false
		if job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, jobID)); err != nil {
			return err
		}
		if job.Status != store.StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", store.ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		if err := lockAccount(ctx, tx, job.AccountID); err != nil { // before the key's locks (lock order above)
			return err
		}
		if hit, err = flight(ctx, tx, &job, s.opts.hitCents()); err != nil || !hit {
			return err
		}
		return s.finish(ctx, tx, fin, &job, store.StatusSucceeded, "", "", job.Output)
	})
	if err != nil {
		return store.Job{}, false, wrap("finish from cache", err)
	}
	s.signal(job.ID)
	return job, hit, nil
}
