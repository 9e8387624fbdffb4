package store

import (
	"bytes"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketJobsByStatus indexes every job by status, account and creation order (schema 4):
// status 0x00 accountID 0x00 seq(8) -> jobID. A page of GET /v1/jobs reads the entries it
// returns and no others: a status filter reads one account's entries of that status, and the
// unfiltered list merges the account's statuses by seq. Every change of a job's status moves
// its entry in the same transaction (setStatus); deleteJob removes it.
//
// The status comes first so that the entries of the passing statuses (created, queued,
// running), which every create, start and claim moves, stay together in a few pages whatever
// the account: keyed by account first, each of those writes dirtied a page of its own account
// (a group commit of 64 accounts' creates dirtied 64 more pages). Only a finish writes where
// the account's history is (its status's run), and a finish writes the account record anyway.
var bucketJobsByStatus = []byte("jobs_by_status")

// indexPrefix is the first part of the index keys of the account's jobs in status.
func indexPrefix(accountID, status string) []byte {
	b := make([]byte, 0, len(status)+len(accountID)+2+8)
	b = append(b, status...)
	b = append(b, 0)
	b = append(b, accountID...)
	return append(b, 0)
}

// indexKey is the index key of a job in status.
func indexKey(accountID, status string, seq uint64) []byte {
	return append(indexPrefix(accountID, status), u64(seq)...)
}

// indexJob adds a new job's index entry, in CreateJob's transaction.
func indexJob(tx *bolt.Tx, job Job) error {
	return tx.Bucket(bucketJobsByStatus).Put(indexKey(job.AccountID, job.Status, job.Seq), []byte(job.ID))
}

// unindexJob removes a job's index entry, in deleteJob's transaction.
func unindexJob(tx *bolt.Tx, job Job) error {
	return tx.Bucket(bucketJobsByStatus).Delete(indexKey(job.AccountID, job.Status, job.Seq))
}

// setStatus changes job's status and moves its index entry, in the caller's transaction; the
// caller writes the record (putJob). Every status change goes through it.
func setStatus(tx *bolt.Tx, job *Job, status string) error {
	if job.Status == status {
		return nil
	}
	b := tx.Bucket(bucketJobsByStatus)
	if err := b.Delete(indexKey(job.AccountID, job.Status, job.Seq)); err != nil {
		return err
	}
	job.Status = status
	return b.Put(indexKey(job.AccountID, job.Status, job.Seq), []byte(job.ID))
}

// buildStatusIndex (re)builds the index from the job records, in Open's transaction that
// marks the file schema 4: a file from before it gets the index with the schema number, or
// neither. Running it again builds the same index.
func buildStatusIndex(tx *bolt.Tx) error {
	if tx.Bucket(bucketJobsByStatus) != nil {
		if err := tx.DeleteBucket(bucketJobsByStatus); err != nil {
			return err
		}
	}
	if _, err := tx.CreateBucket(bucketJobsByStatus); err != nil {
		return err
	}
	return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
		var job Job
		if err := readJob(v, &job); err != nil {
			return fmt.Errorf("job %s: %w", k, err)
		}
		return indexJob(tx, job)
	})
}

// listJobs is ListJobs in the caller's read transaction; visits, when not nil, counts the
// index entries and job records it read (the tests hold a page's cost to the page with it).
func listJobs(tx *bolt.Tx, accountID string, p ListParams, now time.Time, visits *int) (out []Job, hasMore bool, err error) {
	out = []Job{}
	before := uint64(math.MaxUint64)
	if p.StartingAfter != "" {
		if before, err = cursorSeq(tx, accountID, p.StartingAfter, now, visits); err != nil {
			return nil, false, err
		}
	}
	statuses := allStatuses
	if p.Status != "" {
		statuses = []string{p.Status}
	}
	for job, err := range indexedJobs(tx, accountID, statuses, before, visits) {
		if err != nil {
			return nil, false, err
		}
		if !now.Before(job.ExpiresAt) {
			continue // expired, not swept yet
		}
		if len(out) == p.Limit {
			return out, true, nil
		}
		out = append(out, job)
	}
	return out, false, nil
}

// cursorSeq is where a page after the job with id starts: the account's jobs with a lower seq
// follow it. A job that still has its record (expired or not) gives its seq; one that
// retention deleted gives the position its id records, its creation time: the page continues
// with the jobs created in an earlier millisecond (JobIDBound). Another account's job, and an
// id that is no job's, are ErrNotFound.
func cursorSeq(tx *bolt.Tx, accountID, id string, now time.Time, visits *int) (uint64, error) {
	count(visits)
	job, err := findJob(tx, id)
	switch {
	case err == nil && job.AccountID == accountID:
		return job.Seq, nil
	case err != ErrNotFound:
		if err == nil {
			err = ErrNotFound // another account's job
		}
		return 0, err
	}
	bound, ok := JobIDBound(id, now)
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a job id", ErrNotFound, id)
	}
	// The first job created after that millisecond, of any account: seq counts every
	// account's jobs in creation order, so the account's older jobs have a lower seq. Ids of one
	// millisecond sort by their random part, not by creation, so the first is the lowest seq of
	// that millisecond's run (a later millisecond's jobs were created later).
	c := tx.Bucket(bucketJobs).Cursor()
	k, v := c.Seek([]byte(bound))
	if k == nil {
		return math.MaxUint64, nil
	}
	ms := string(k[:min(len(k), len(bound))])
	first := uint64(math.MaxUint64)
	for ; k != nil && len(k) >= len(ms) && string(k[:len(ms)]) == ms; k, v = c.Next() {
		count(visits)
		var next Job
		if err := readJob(v, &next); err != nil {
			return 0, fmt.Errorf("job %s: %w", k, err)
		}
		first = min(first, next.Seq)
	}
	return first, nil
}

// JobIDBound returns the smallest id a job created in a millisecond after the job with id
// could have, for continuing a page after a job that no longer exists. ok is false when id is
// not a time-ordered job id ("job_", 8 base62 digits of milliseconds, 16 random base62
// characters) of a time up to now.
func JobIDBound(id string, now time.Time) (bound string, ok bool) {
	const digits = 8
	if len(id) != 4+digits+16 || id[:4] != "job_" {
		return "", false
	}
	var ms uint64
	for i := 4; i < len(id); i++ {
		d := strings.IndexByte(base62Alphabet, id[i])
		if d < 0 {
			return "", false
		}
		if i < 4+digits {
			ms = ms*62 + uint64(d)
		}
	}
	if ms > uint64(max(now.UnixMilli(), 0)) {
		return "", false // not a job of this database: ids of the future do not exist yet
	}
	return jobIDPrefix(ms + 1), true
}

// indexedJobs yields the account's jobs in the statuses whose seq is below before, newest
// (highest seq) first, reading one index entry and one record per job: with several
// statuses it merges their runs of the index. A record that does not match its entry is
// yielded as an error, last.
func indexedJobs(tx *bolt.Tx, accountID string, statuses []string, before uint64, visits *int) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		type run struct {
			c      *bolt.Cursor
			prefix []byte
			k, v   []byte
		}
		b, jobs := tx.Bucket(bucketJobsByStatus), tx.Bucket(bucketJobs)
		runs := make([]run, 0, len(statuses))
		for _, st := range statuses {
			r := run{c: b.Cursor(), prefix: indexPrefix(accountID, st)}
			// The last entry below prefix+before: Seek finds the first at or after it.
			if k, _ := r.c.Seek(append(r.prefix, u64(before)...)); k != nil {
				r.k, r.v = r.c.Prev()
			} else {
				r.k, r.v = r.c.Last()
			}
			if r.k != nil && bytes.HasPrefix(r.k, r.prefix) {
				count(visits)
				runs = append(runs, r)
			}
		}
		for len(runs) > 0 {
			top := 0
			for i := range runs {
				if bytes.Compare(runs[i].k[len(runs[i].prefix):], runs[top].k[len(runs[top].prefix):]) > 0 {
					top = i
				}
			}
			r := &runs[top]
			count(visits)
			var job Job
			err := readJob(jobs.Get(r.v), &job)
			if err == nil && (job.AccountID != accountID || job.Seq != bytesToU64(r.k[len(r.prefix):]) || !runOf(r.prefix, job.Status)) {
				err = fmt.Errorf("index entry %q names job %s of account %s in status %s (seq %d)", r.k, job.ID, job.AccountID, job.Status, job.Seq)
			} else if err == ErrNotFound {
				err = fmt.Errorf("index entry %q names job %s, which does not exist", r.k, r.v)
			}
			if !yield(job, err) || err != nil {
				return
			}
			if r.k, r.v = r.c.Prev(); r.k != nil && bytes.HasPrefix(r.k, r.prefix) {
				count(visits)
			} else {
				runs = append(runs[:top], runs[top+1:]...)
			}
		}
	}
}

// runOf reports whether prefix (indexPrefix) is of a run of status.
func runOf(prefix []byte, status string) bool {
	return len(prefix) > len(status) && string(prefix[:len(status)]) == status && prefix[len(status)] == 0
}

// count adds one to *visits when the caller counts.
func count(visits *int) {
	if visits != nil {
		*visits++
	}
}
