package store

import (
	"encoding/binary"
	"fmt"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MaxInputBytes is the largest reservation SPEC.md allows.
const MaxInputBytes = 2_000_000_000

// idempotencyRecord remembers the first response to a create with an Idempotency-Key.
type idempotencyRecord struct {
	RequestHash string    `json:"request_hash"`
	JobID       string    `json:"job_id"`
	Response    Response  `json:"response"`
	CreatedAt   time.Time `json:"created_at"`
}

// CreateJob reserves one cent and creates a job in state created. render builds the HTTP
// response for the new job: with an Idempotency-Key inside the same transaction, so that the
// key, the job and its reservation commit together, and otherwise after the commit; render must
// be pure. A repeat with the same key and request returns the first response and reserves nothing.
func (s *Store) CreateJob(p CreateJobParams, render func(Job) (Response, error)) (Job, Response, error) {
	if p.InputBytes < 1 || p.InputBytes > MaxInputBytes {
		return Job{}, Response{}, fmt.Errorf("%w: input_bytes %d out of range", ErrInvalidArgument, p.InputBytes)
	}
	var job Job
	var resp Response
	now := s.opts.Now().UTC()
	err := s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		acct, err := findAccount(tx, p.AccountID)
		if err != nil {
			return err
		}
		var idemKey []byte
		if p.IdempotencyKey != "" {
			idemKey = append(append([]byte(p.AccountID), 0), p.IdempotencyKey...)
			rec, found, err := s.idempotencyRecord(tx, idemKey, p.RequestHash, now)
			if err != nil {
				return err
			} else if found {
				resp = rec.Response
				job, err = findJob(tx, rec.JobID)
				if err == ErrNotFound {
					err = nil // the job expired since; the replayed response still stands
				}
				return err
			}
		}
		if acct.SpentCents(now)+acct.ReservedCents+1 > acct.SpendCapCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month",
				ErrLimitReached, acct.SpentCents(now), acct.ReservedCents, acct.SpendCapCents)
		}
		if job, err = insertJob(tx, &acct, p, now, s.opts.Retention); err != nil {
			return err
		}
		if job.Status == StatusQueued {
			if err := s.recordJobEvent(tx, job, now); err != nil {
				return err
			}
		}
		if err := putAccount(tx, acct); err != nil {
			return err
		}
		if job.Status == StatusCreated {
			// A cache hit is answered succeeded at once (store/cache.go).
			if hit, err := takeCached(tx, &job, now, s.opts.hitCents()); err != nil {
				return err
			} else if hit {
				if err := s.finish(tx, fin, &job, StatusSucceeded, now); err != nil {
					return err
				}
			}
		}
		if idemKey == nil {
			return nil // rendered after the commit, outside the transaction every write waits for
		}
		if resp, err = render(job); err != nil {
			return fmt.Errorf("render response: %w", err)
		}
		rec := idempotencyRecord{RequestHash: p.RequestHash, JobID: job.ID, Response: resp, CreatedAt: now}
		return putJSON(tx.Bucket(bucketIdempotency), idemKey, rec)
	})
	if err != nil {
		return Job{}, Response{}, err
	}
	if p.IdempotencyKey == "" {
		if resp, err = render(job); err != nil {
			return Job{}, Response{}, fmt.Errorf("render response: %w", err)
		}
	}
	if job.SourceURL != "" {
		s.signal(job.ID)
	}
	return job, resp, nil
}

// insertJob records a new created job of p in tx and reserves its cent on acct, which the
// caller writes back (putAccount) once it has added every job it creates.
func insertJob(tx *bolt.Tx, acct *Account, p CreateJobParams, now time.Time, retention time.Duration) (Job, error) {
	if p.InputBytes < 1 || p.InputBytes > MaxInputBytes {
		return Job{}, fmt.Errorf("%w: input_bytes %d out of range", ErrInvalidArgument, p.InputBytes)
	}
	seq, err := tx.Bucket(bucketJobs).NextSequence()
	if err != nil {
		return Job{}, err
	}
	job := Job{
		ID:           newJobID(now),
		AccountID:    acct.ID,
		Seq:          seq,
		Status:       StatusCreated,
		InputFormat:  p.InputFormat,
		TargetFormat: p.TargetFormat,
		InputBytes:   p.InputBytes,
		Options:      p.Options,
		CreatedAt:    now,
		ExpiresAt:    now.Add(retention),
		PrevJobID:    acct.LastJobID,
		SourceURL:    p.SourceURL,
		DeliverTo:    p.DeliverTo,
		InputSHA256:  p.InputSHA256,
		CacheBase:    p.CacheBase,
	}
	if p.SourceURL != "" {
		// Nothing to upload: queued at once, and a worker fetches the input. max_queued holds
		// as for a start.
		if err := checkQueueRoom(tx, *acct); err != nil {
			return Job{}, err
		}
		job.Status, job.StartedAt = StatusQueued, &now
		if err := enqueue(tx, job); err != nil {
			return Job{}, err
		}
	}
	acct.ReservedCents++
	acct.LastJobID = job.ID
	if err := putJob(tx, job); err != nil {
		return Job{}, err
	}
	if err := indexJob(tx, job); err != nil {
		return Job{}, err
	}
	if err := putJobWebhook(tx, job, p.WebhookURL); err != nil {
		return Job{}, err
	}
	if err := tx.Bucket(bucketExpiry).Put(timeKey(job.ExpiresAt, job.ID), nil); err != nil {
		return Job{}, err
	}
	return job, nil
}

// idempotencyRecord returns the first response under an Idempotency-Key (key is the account
// id, 0 and the key) while the key lives: found is false when there is none or it outlived
// IdempotencyTTL, and a request other than hash's is ErrIdempotencyMismatch.
func (s *Store) idempotencyRecord(tx *bolt.Tx, key []byte, hash string, now time.Time) (idempotencyRecord, bool, error) {
	var rec idempotencyRecord
	err := getJSON(tx.Bucket(bucketIdempotency), key, &rec)
	switch {
	case err == ErrNotFound || (err == nil && now.Sub(rec.CreatedAt) >= s.opts.IdempotencyTTL):
		return idempotencyRecord{}, false, nil
	case err != nil:
		return idempotencyRecord{}, false, err
	case rec.RequestHash != hash:
		return idempotencyRecord{}, false, ErrIdempotencyMismatch
	}
	return rec, true, nil
}

// Job returns one of the account's jobs. Another account's job, or an expired one, is ErrNotFound.
func (s *Store) Job(accountID, jobID string) (Job, error) {
	var job Job
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		job, err = findOwnJob(tx, accountID, jobID, s.opts.Now())
		return err
	})
	return job, err
}

// ListJobs returns a page of the account's live jobs, newest first, and whether more follow.
// It reads the account's entries of the status index (jobindex.go), so a page costs what it
// returns, with or without a status filter. A StartingAfter job that has expired since, or
// was deleted, still marks where the page starts (cursorSeq).
func (s *Store) ListJobs(accountID string, p ListParams) ([]Job, bool, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	now := s.opts.Now()
	var out []Job
	var hasMore bool
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, hasMore, err = listJobs(tx, accountID, p, now, nil)
		return err
	})
	return out, hasMore, err
}

// StartJob moves a created job whose upload was sealed with uploadedSize bytes to queued.
// A job already started is returned unchanged. A size other than input_bytes cancels the job,
// releases its reservation and returns the cancelled job with ErrSizeMismatch.
func (s *Store) StartJob(accountID, jobID string, uploadedSize int64) (Job, error) {
	return s.startJob(accountID, jobID, uploadedSize, nil, "")
}

// StartSealedJob is StartJob that also records which object was sealed (Job.Upload), in the
// same transaction, when up names more than a size.
// Where up carries the upload's SHA-256, a job created with input_sha256 is checked against
// it (a difference cancels the job, releases its reservation and returns the cancelled job
// with ErrChecksumMismatch), and a job in the conversion cache whose output is cached is
// answered succeeded from the cache instead of queued.
func (s *Store) StartSealedJob(accountID, jobID string, up Upload) (Job, error) {
	if up.ETag == "" && up.VersionID == "" {
		return s.startJob(accountID, jobID, up.Size, nil, up.SHA256)
	}
	return s.startJob(accountID, jobID, up.Size, &up, up.SHA256)
}

func (s *Store) startJob(accountID, jobID string, uploadedSize int64, up *Upload, sha string) (Job, error) {
	var job Job
	var mismatch, badSum bool
	now := s.opts.Now().UTC()
	err := s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		mismatch, badSum = false, false
		if job, err = findOwnJob(tx, accountID, jobID, now); err != nil {
			return err
		}
		if job.Status != StatusCreated {
			return nil
		}
		if uploadedSize != job.InputBytes {
			mismatch = true
			job.ErrorMessage = fmt.Sprintf("uploaded %d bytes, reserved %d", uploadedSize, job.InputBytes)
			return s.finish(tx, fin, &job, StatusCancelled, now)
		}
		if badSum = ChecksumMismatch(&job, sha); badSum {
			return s.finish(tx, fin, &job, StatusCancelled, now)
		}
		acct, err := findAccount(tx, accountID)
		if err != nil {
			return err
		}
		if spent := acct.SpentCents(now); spent+acct.ReservedCents > acct.SpendCapCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month",
				ErrLimitReached, spent, acct.ReservedCents, acct.SpendCapCents)
		}
		job.StartedAt = &now
		job.Upload = up
		if hit, err := takeCached(tx, &job, now, s.opts.hitCents()); err != nil {
			return err
		} else if hit {
			return s.finish(tx, fin, &job, StatusSucceeded, now)
		}
		if err := checkQueueRoom(tx, acct); err != nil {
			return err
		}
		if err := setStatus(tx, &job, StatusQueued); err != nil {
			return err
		}
		if err := enqueue(tx, job); err != nil {
			return err
		}
		if err := putJob(tx, job); err != nil {
			return err
		}
		return s.recordJobEvent(tx, job, now)
	})
	if err != nil {
		return Job{}, err
	}
	s.signal(job.ID)
	if mismatch {
		return job, ErrSizeMismatch
	}
	if badSum {
		return job, ErrChecksumMismatch
	}
	return job, nil
}

// ClaimJob moves a queued job to running and counts the pickup in attempt: the oldest of the
// next account in turn (round robin across the accounts with queued jobs, skipping those at
// their max_running; jobfair.go). ok is false when nothing is queued that may run.
// A queued job already past its expires_at is not claimed: it fails expired_or_exhausted in the
// same transaction, its reservation released.
func (s *Store) ClaimJob() (job Job, ok bool, err error) {
	now := s.opts.Now().UTC()
	var expired []string
	err = s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		ok, expired = false, expired[:0]
		for {
			var err error
			if job, ok, err = s.claimFair(tx, fin, now, &expired); err != nil || !ok {
				return err
			}
			// An identical job converted while this one waited: answered from the cache.
			if hit, err := takeCached(tx, &job, now, s.opts.hitCents()); err != nil {
				return err
			} else if !hit {
				return claimFlight(tx, &job)
			}
			if err := s.finish(tx, fin, &job, StatusSucceeded, now); err != nil {
				return err
			}
			expired = append(expired, job.ID) // signalled with the expired ones
		}
	})
	if err == nil {
		s.signal(expired...)
		if ok {
			s.signal(job.ID)
		}
	}
	return job, ok, err
}

// FinishJob records how a running job's attempt ended: success turns its reservation into spend,
// failure releases it. A job that is no longer running that attempt is ErrInvalidState.
// A job whose expires_at has passed is not finished as reported: the same transaction fails it
// expired_or_exhausted (its reservation released) and FinishJob returns ErrNotFound, so nothing
// succeeds, or is charged, after it expired.
func (s *Store) FinishJob(jobID string, attempt int, o Outcome) (Job, error) {
	var job Job
	var expired bool
	now := s.opts.Now().UTC()
	err := s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		expired = false
		if job, err = findJob(tx, jobID); err != nil {
			return err
		}
		if job.Status != StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		if !now.Before(job.ExpiresAt) {
			expired = true
			return s.expire(tx, fin, &job, now)
		}
		if o.ErrorCode == "" {
			if o.Output == nil {
				return fmt.Errorf("%w: success without output", ErrInvalidArgument)
			}
			out := *o.Output
			out.Attempt = attempt
			job.Output = &out
			if err := s.finish(tx, fin, &job, StatusSucceeded, now); err != nil {
				return err
			}
			return putCached(tx, job, now, s.opts.CacheMaxBytes)
		}
		job.ErrorCode, job.ErrorMessage, job.ErrorReason = o.ErrorCode, o.ErrorMessage, o.ErrorReason
		return s.finish(tx, fin, &job, StatusFailed, now)
	})
	if err != nil {
		return Job{}, err
	}
	s.signal(job.ID)
	if expired {
		return Job{}, fmt.Errorf("%w: job %s expired at %s before it finished", ErrNotFound, job.ID, job.ExpiresAt.Format(time.RFC3339))
	}
	return job, nil
}

// RequeueJob puts a running job whose attempt could not store its output (a storage fault, not
// the input's) back in the queue in its original place, in one transaction. The attempt stays
// counted: once attempt has reached maxAttempts it fails conversion_failed instead, with reason
// (what the fault was: "storage full: ...") as its message, and its reservation is released;
// a job past its expires_at fails expired_or_exhausted. A job that is no longer running that
// attempt is ErrInvalidState. requeued says whether it went back to the queue.
func (s *Store) RequeueJob(jobID string, attempt, maxAttempts int, reason string) (job Job, requeued bool, err error) {
	now := s.opts.Now().UTC()
	err = s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		requeued = false
		if job, err = findJob(tx, jobID); err != nil {
			return err
		}
		if job.Status != StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		switch {
		case !now.Before(job.ExpiresAt):
			return s.expire(tx, fin, &job, now)
		case job.Attempt >= maxAttempts:
			job.ErrorCode = CodeConversionFailed
			job.ErrorMessage = RequeueFailure(reason, job.Attempt, maxAttempts)
			return s.finish(tx, fin, &job, StatusFailed, now)
		}
		if err := tx.Bucket(bucketRunning).Delete([]byte(job.ID)); err != nil {
			return err
		}
		if err := setStatus(tx, &job, StatusQueued); err != nil {
			return err
		}
		if job.StartedAt == nil {
			job.StartedAt = &now
		}
		if err := enqueue(tx, job); err != nil {
			return err
		}
		requeued = true
		if err := putJob(tx, job); err != nil {
			return err
		}
		return s.recordJobEvent(tx, job, now)
	})
	if err != nil {
		return Job{}, false, err
	}
	s.signal(job.ID)
	return job, requeued, nil
}

// RequeueFailure is the error_message of a job whose output could not be stored in its last
// attempt: the fault's reason first, so the message says what happened.
func RequeueFailure(reason string, attempts, maxAttempts int) string {
	return fmt.Sprintf("%s (%d attempts, --max-attempts %d)", reason, attempts, maxAttempts)
}

// expire fails an unfinished job that reached its expires_at, releasing its reservation, in
// the caller's transaction.
func (s *Store) expire(tx *bolt.Tx, fin *finished, job *Job, now time.Time) error {
	job.ErrorCode = CodeExpiredOrExhausted
	job.ErrorMessage = "the job expired before it finished"
	job.Output = nil
	return s.finish(tx, fin, job, StatusFailed, now)
}

// NextExpiry is the earliest expires_at of any stored job, and false when there is none: the
// sweeper sleeps until then.
func (s *Store) NextExpiry() (time.Time, bool, error) {
	var at time.Time
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketExpiry).Cursor().First()
		if len(k) >= 8 {
			at, ok = time.Unix(0, int64(bytesToU64(k[:8]))).UTC(), true
		}
		return nil
	})
	return at, ok, err
}

// CancelJobWith is CancelJob; bbolt takes no write gate (it counts writes in process, before
// the handler), so g is ignored.
func (s *Store) CancelJobWith(accountID, jobID string, _ *WriteGate) (Job, error) {
	return s.CancelJob(accountID, jobID)
}

// CancelJob cancels one of the account's unfinished jobs and releases its reservation.
// Cancelling a cancelled job returns it unchanged; a succeeded or failed job is ErrInvalidState.
func (s *Store) CancelJob(accountID, jobID string) (Job, error) {
	var job Job
	now := s.opts.Now().UTC()
	err := s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		if job, err = findOwnJob(tx, accountID, jobID, now); err != nil {
			return err
		}
		switch {
		case job.Status == StatusCancelled:
			return nil
		case job.Finished():
			return fmt.Errorf("%w: job already %s", ErrInvalidState, job.Status)
		}
		return s.finish(tx, fin, &job, StatusCancelled, now)
	})
	if err != nil {
		return Job{}, err
	}
	s.signal(job.ID)
	return job, nil
}

// RecoverRunning is called at start-up, when no worker runs: jobs left running by a crash go back
// to the queue in their original place, or fail expired_or_exhausted once attempt reached maxAttempts.
func (s *Store) RecoverRunning(maxAttempts int) (requeued, failed []string, err error) {
	now := s.opts.Now().UTC()
	err = s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		requeued, failed = nil, nil
		c := tx.Bucket(bucketRunning).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			job, err := findJob(tx, string(k))
			if err := c.Delete(); err != nil {
				return err
			}
			if err == ErrNotFound {
				continue
			} else if err != nil {
				return err
			}
			if job.Status != StatusRunning {
				continue
			}
			if job.Attempt >= maxAttempts {
				job.ErrorCode = CodeExpiredOrExhausted
				job.ErrorMessage = fmt.Sprintf("the conversion was interrupted %d times (--max-attempts %d)", job.Attempt, maxAttempts)
				if err := s.finish(tx, fin, &job, StatusFailed, now); err != nil {
					return err
				}
				failed = append(failed, job.ID)
				continue
			}
			if err := setStatus(tx, &job, StatusQueued); err != nil {
				return err
			}
			if job.StartedAt == nil {
				job.StartedAt = &now
			}
			if err := enqueue(tx, job); err != nil {
				return err
			}
			if err := putJob(tx, job); err != nil {
				return err
			}
			if err := s.recordJobEvent(tx, job, now); err != nil {
				return err
			}
			requeued = append(requeued, job.ID)
		}
		return nil
	})
	if err == nil {
		s.signal(append(requeued, failed...)...)
	}
	return requeued, failed, err
}

// unlinkBudget bounds the list entries one ExpireJobs transaction walks to unlink jobs that
// expire out of order (unlinkJob), so that the sweep after retention was shortened does not
// hold the writer for long; the rest waits for the next transaction.
var unlinkBudget = 20_000

// ExpireJobs deletes up to limit jobs whose expires_at has passed; an unfinished one first fails
// expired_or_exhausted, releasing its reservation. It returns the deleted ids so their files go
// too, and more when it stopped early with expired jobs left (unlinkBudget): call it again.
func (s *Store) ExpireJobs(limit int) (deleted []string, more bool, err error) {
	now := s.opts.Now().UTC()
	err = s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		deleted, more = deleted[:0], false
		walked := 0
		c := tx.Bucket(bucketExpiry).Cursor()
		for k, _ := c.First(); k != nil && len(deleted) < limit; k, _ = c.First() {
			if walked > unlinkBudget {
				more = true
				break
			}
			if int64(bytesToU64(k[:8])) > now.UnixNano() {
				break
			}
			id := string(k[8:])
			if err := c.Delete(); err != nil {
				return err
			}
			job, err := findJob(tx, id)
			if err == ErrNotFound {
				continue
			} else if err != nil {
				return err
			}
			if !job.Finished() {
				if err := s.expire(tx, fin, &job, now); err != nil {
					return err
				}
			}
			steps, err := deleteJob(tx, job)
			if err != nil {
				return err
			}
			walked += steps
			deleted = append(deleted, id)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	s.signal(deleted...)
	return deleted, more, nil
}

// PurgeIdempotencyKeys forgets Idempotency-Keys older than their time to live.
func (s *Store) PurgeIdempotencyKeys() (int, error) {
	now := s.opts.Now()
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketIdempotency)
		var stale [][]byte
		err := b.ForEach(func(k, _ []byte) error {
			var rec idempotencyRecord
			if err := getJSON(b, k, &rec); err != nil {
				return err
			}
			if now.Sub(rec.CreatedAt) >= s.opts.IdempotencyTTL {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(stale)
		return nil
	})
	return n, err
}

// JobExists reports whether a job record exists (expired or not), or another job or the
// conversion cache still holds its output; the orphan sweep uses it.
func (s *Store) JobExists(jobID string) (bool, error) {
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		ok = owned(tx, jobID)
		return nil
	})
	return ok, err
}

// Unowned returns those of ids that JobExists would deny, in their order, reading them in one
// transaction; the orphan sweep checks a listing's ids with it.
func (s *Store) Unowned(ids []string) ([]string, error) {
	var gone []string
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range ids {
			if !owned(tx, id) {
				gone = append(gone, id)
			}
		}
		return nil
	})
	return gone, err
}

// owned reports whether a job record has the id, or the conversion cache holds its output.
func owned(tx *bolt.Tx, id string) bool {
	return tx.Bucket(bucketJobs).Get([]byte(id)) != nil || outputHeld(tx, id)
}

// finish moves an unfinished job to a final state with its spend movement and webhook
// deliveries, in the caller's transaction, and records it in fin for the FinishHook.
func (s *Store) finish(tx *bolt.Tx, fin *finished, job *Job, status string, now time.Time) error {
	if !job.holdsReservation() {
		return fmt.Errorf("%w: job %s already %s", ErrInvalidState, job.ID, job.Status)
	}
	acct, err := findAccount(tx, job.AccountID)
	if err != nil {
		return fmt.Errorf("account of job %s: %w", job.ID, err)
	}
	if acct.ReservedCents < 1 {
		return fmt.Errorf("ledger broken: account %s has no reservation for job %s", acct.ID, job.ID)
	}
	acct.ReservedCents--
	if status == StatusSucceeded {
		if c := job.Charge(); c != 0 {
			acct.MonthlySpend[monthOf(now)] += c
		}
	}
	if err := putAccount(tx, acct); err != nil {
		return err
	}
	if job.Status == StatusRunning {
		if err := tx.Bucket(bucketRunning).Delete([]byte(job.ID)); err != nil {
			return err
		}
	}
	if job.Status == StatusQueued {
		if err := dequeue(tx, *job); err != nil {
			return err
		}
	}
	if err := setStatus(tx, job, status); err != nil {
		return err
	}
	job.FinishedAt = &now
	if err := putJob(tx, *job); err != nil {
		return err
	}
	if err := endFlight(tx, *job); err != nil {
		return err
	}
	if err := s.recordJobEvent(tx, *job, now); err != nil {
		return err
	}
	if err := s.recordWebhookEvents(tx, *job, now); err != nil {
		return err
	}
	if err := s.batchJobFinished(tx, *job, now); err != nil {
		return err
	}
	fin.add(*job)
	return nil
}

// deleteJob deletes a job and its index entries and returns how many list entries unlinking
// it walked.
func deleteJob(tx *bolt.Tx, job Job) (int, error) {
	if job.Status == StatusSucceeded && job.FinishedAt != nil {
		acct, err := findAccount(tx, job.AccountID)
		if err != nil {
			return 0, err
		}
		if acct.PurgedSuccesses == nil {
			acct.PurgedSuccesses = map[string]int64{}
		}
		acct.PurgedSuccesses[monthOf(*job.FinishedAt)] += job.Charge()
		if err := putAccount(tx, acct); err != nil {
			return 0, err
		}
	}
	steps, err := unlinkJob(tx, job)
	if err != nil {
		return steps, err
	}
	if err := releaseOutput(tx, job); err != nil {
		return steps, err
	}
	if err := tx.Bucket(bucketExpiry).Delete(timeKey(job.ExpiresAt, job.ID)); err != nil {
		return steps, err
	}
	if err := unindexJob(tx, job); err != nil {
		return steps, err
	}
	if err := deleteJobWebhook(tx, job.ID); err != nil {
		return steps, err
	}
	if err := deleteBatchLink(tx, job); err != nil {
		return steps, err
	}
	return steps, tx.Bucket(bucketJobs).Delete([]byte(job.ID))
}

// unlinkJob keeps the account's list of jobs whole when job goes while an older job of the
// account stays (retention was shortened across a restart, or the clock stepped back): the job
// that points at it, or the account if it is the newest, is pointed past it. Jobs usually go
// oldest first, and then there is nothing to do, since a job that no longer exists ends a list.
// It returns how many jobs of the list it read to find what pointed at job.
func unlinkJob(tx *bolt.Tx, job Job) (int, error) {
	jobs := tx.Bucket(bucketJobs)
	if job.PrevJobID == "" || jobs.Get([]byte(job.PrevJobID)) == nil {
		return 0, nil
	}
	acct, err := findAccount(tx, job.AccountID)
	if err != nil {
		return 0, err
	}
	if acct.LastJobID == job.ID {
		acct.LastJobID = job.PrevJobID
		return 0, putAccount(tx, acct)
	}
	steps := 0
	for newer, err := range listedJobs(tx, acct.LastJobID) {
		steps++
		if err != nil {
			return steps, err
		}
		if newer.PrevJobID == job.ID {
			newer.PrevJobID = job.PrevJobID
			return steps, putJob(tx, newer)
		}
	}
	return steps, nil
}

// listedJobs yields an account's jobs from the one with id from (Account.LastJobID, or a
// job's PrevJobID) on, newest first, following PrevJobID until a job that no longer exists
// (retention deleted the rest). A record that cannot be read is yielded as an error, last.
func listedJobs(tx *bolt.Tx, from string) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for id := from; id != ""; {
			job, err := findJob(tx, id)
			if err == ErrNotFound || !yield(job, err) || err != nil {
				return
			}
			id = job.PrevJobID
		}
	}
}

// newJobID returns "job_", the creation time in milliseconds as 8 base62 digits, and 16 random
// base62 characters (95 bits). The time prefix makes new ids sort after older ones, so the
// jobs bucket grows at its right edge: a group commit of 64 creates dirties a page or two of
// it instead of up to 64 scattered leaves. The random part keeps ids unguessable.
func newJobID(now time.Time) string {
	return jobIDPrefix(uint64(max(now.UnixMilli(), 0))) + randomBase62(16)
}

// jobIDPrefix is "job_" and ms as 8 base62 digits: the first characters of the ids of the
// jobs created in that millisecond.
func jobIDPrefix(ms uint64) string {
	var b [4 + 8]byte
	copy(b[:], "job_")
	for i := len(b) - 1; i >= 4; i-- {
		b[i] = base62Alphabet[ms%62]
		ms /= 62
	}
	return string(b[:])
}

// queueKey orders the queue by first start, then creation: the job's place survives a requeue.
func queueKey(job Job) []byte {
	b := make([]byte, 0, 16+len(job.ID))
	b = binary.BigEndian.AppendUint64(b, uint64(job.StartedAt.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, job.Seq)
	return append(b, job.ID...)
}

func findJob(tx *bolt.Tx, id string) (Job, error) {
	var job Job
	err := readJob(tx.Bucket(bucketJobs).Get([]byte(id)), &job)
	return job, err
}

// readJob decodes a job record of either schema; a nil record is ErrNotFound.
func readJob(data []byte, job *Job) error {
	err := readRecord(data, job, decodeJob)
	if err != nil && err != ErrNotFound {
		return fmt.Errorf("job record: %w", err)
	}
	return err
}

// findOwnJob hides other accounts' jobs and expired jobs behind ErrNotFound.
func findOwnJob(tx *bolt.Tx, accountID, id string, now time.Time) (Job, error) {
	job, err := findJob(tx, id)
	if err != nil {
		return Job{}, err
	}
	if job.AccountID != accountID || !now.Before(job.ExpiresAt) {
		return Job{}, ErrNotFound
	}
	return job, nil
}

func putJob(tx *bolt.Tx, job Job) error {
	return tx.Bucket(bucketJobs).Put([]byte(job.ID), appendJob(make([]byte, 0, 256), &job))
}
