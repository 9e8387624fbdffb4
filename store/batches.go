package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MaxBatchJobs is the most jobs one batch reserves (POST /v1/batches).
const MaxBatchJobs = 500

// BatchFinishedEvent is the webhook event type of a batch whose every job reached a final
// state (webhook.EventBatchFinished; store imports nothing of ours).
const BatchFinishedEvent = "batch.finished"

var (
	bucketBatches   = []byte("batches")    // batch id -> Batch JSON
	bucketBatchJobs = []byte("batch_jobs") // job id -> batch id
)

// Batch is a group of jobs reserved in one request. Each job stays a job (readable,
// cancellable, billed on its own); the batch remembers them in the order they were given.
type Batch struct {
	ID        string   `json:"id"`
	AccountID string   `json:"account_id"`
	JobIDs    []string `json:"job_ids"`
	// Unfinished counts the batch's jobs not yet in a final state; the job that brings it to
	// 0 sets FinishedAt and records the batch.finished event in its transaction.
	Unfinished int        `json:"unfinished"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// BatchSnapshot is a finished batch and its jobs as batch.finished carries them
// (WebhookDelivery.Job holds its JSON for that event type).
type BatchSnapshot struct {
	Batch Batch `json:"batch"`
	Jobs  []Job `json:"jobs"`
}

// CreateBatchParams is a validated batch reservation: its jobs, in order, and the batch's one
// Idempotency-Key (the jobs' own IdempotencyKey fields are ignored).
type CreateBatchParams struct {
	AccountID      string
	Jobs           []CreateJobParams
	IdempotencyKey string
	RequestHash    string
}

// NewBatchID returns "bat_" and 24 random base62 characters.
func NewBatchID() string { return "bat_" + randomBase62(24) }

// CheckBatchSize says why n jobs cannot be one batch, or nil.
func CheckBatchSize(n int) error {
	if n < 1 || n > MaxBatchJobs {
		return fmt.Errorf("%w: a batch has 1 to %d jobs, not %d", ErrInvalidArgument, MaxBatchJobs, n)
	}
	return nil
}

// CreateBatch reserves every job of p in one transaction, all or nothing: when the account's
// cap cannot take them all it is ErrLimitReached and nothing is reserved. render builds the
// response as CreateJob's does (inside the transaction with an Idempotency-Key, so the key, the
// batch, its jobs and their reservations commit together); a repeat with the same key and
// request returns the first response and reserves nothing.
func (s *Store) CreateBatch(p CreateBatchParams, render func(Batch, []Job) (Response, error)) (Batch, []Job, Response, error) {
	if err := CheckBatchSize(len(p.Jobs)); err != nil {
		return Batch{}, nil, Response{}, err
	}
	var batch Batch
	var jobs []Job
	var resp Response
	now := s.opts.Now().UTC()
	err := s.update(func(tx *bolt.Tx) error {
		batch, jobs, resp = Batch{}, nil, Response{}
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
				batch, jobs, err = findBatch(tx, rec.JobID)
				if err == ErrNotFound {
					err = nil // the batch expired since; the replayed response still stands
				}
				return err
			}
		}
		n := int64(len(p.Jobs))
		if acct.SpentCents(now)+acct.ReservedCents+n > acct.SpendCapCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month; the batch needs %d",
				ErrLimitReached, acct.SpentCents(now), acct.ReservedCents, acct.SpendCapCents, n)
		}
		batch = Batch{ID: NewBatchID(), AccountID: acct.ID, Unfinished: len(p.Jobs), CreatedAt: now, ExpiresAt: now.Add(s.opts.Retention)}
		links, err := tx.CreateBucketIfNotExists(bucketBatchJobs)
		if err != nil {
			return err
		}
		for i, jp := range p.Jobs {
			jp.AccountID = acct.ID
			job, err := insertJob(tx, &acct, jp, now, s.opts.Retention)
			if err != nil {
				return fmt.Errorf("job %d: %w", i, err)
			}
			if err := links.Put([]byte(job.ID), []byte(batch.ID)); err != nil {
				return err
			}
			if job.Status == StatusQueued {
				if err := s.recordJobEvent(tx, job, now); err != nil {
					return err
				}
			}
			jobs = append(jobs, job)
			batch.JobIDs = append(batch.JobIDs, job.ID)
		}
		if err := putAccount(tx, acct); err != nil {
			return err
		}
		if err := putBatch(tx, batch); err != nil {
			return err
		}
		if idemKey == nil {
			return nil
		}
		if resp, err = render(batch, jobs); err != nil {
			return fmt.Errorf("render response: %w", err)
		}
		rec := idempotencyRecord{RequestHash: p.RequestHash, JobID: batch.ID, Response: resp, CreatedAt: now}
		return putJSON(tx.Bucket(bucketIdempotency), idemKey, rec)
	})
	if err != nil {
		return Batch{}, nil, Response{}, err
	}
	if p.IdempotencyKey == "" {
		if resp, err = render(batch, jobs); err != nil {
			return Batch{}, nil, Response{}, fmt.Errorf("render response: %w", err)
		}
	}
	return batch, jobs, resp, nil
}

// Batch returns one of the account's batches and its jobs in the order they were given.
// Another account's batch, or an expired one, is ErrNotFound.
func (s *Store) Batch(accountID, batchID string) (Batch, []Job, error) {
	var batch Batch
	var jobs []Job
	now := s.opts.Now()
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		batch, jobs, err = findOwnBatch(tx, accountID, batchID, now)
		return err
	})
	return batch, jobs, err
}

// CancelBatch cancels every unfinished job of one of the account's batches in one
// transaction, releasing their reservations; finished jobs stay as they are.
func (s *Store) CancelBatch(accountID, batchID string) (Batch, []Job, error) {
	var batch Batch
	var jobs []Job
	now := s.opts.Now().UTC()
	err := s.updateJobs(func(tx *bolt.Tx, fin *finished) error {
		var err error
		if batch, jobs, err = findOwnBatch(tx, accountID, batchID, now); err != nil {
			return err
		}
		for i := range jobs {
			if jobs[i].Finished() {
				continue
			}
			if err := s.finish(tx, fin, &jobs[i], StatusCancelled, now); err != nil {
				return err
			}
		}
		batch, _, err = findBatch(tx, batchID)
		return err
	})
	if err != nil {
		return Batch{}, nil, err
	}
	s.signal(batch.JobIDs...)
	s.signal(batch.ID)
	return batch, jobs, nil
}

func findOwnBatch(tx *bolt.Tx, accountID, id string, now time.Time) (Batch, []Job, error) {
	batch, jobs, err := findBatch(tx, id)
	if err != nil {
		return Batch{}, nil, err
	}
	if batch.AccountID != accountID || !now.Before(batch.ExpiresAt) {
		return Batch{}, nil, ErrNotFound
	}
	return batch, jobs, nil
}

// findBatch reads a batch and its jobs that still exist.
func findBatch(tx *bolt.Tx, id string) (Batch, []Job, error) {
	var batch Batch
	b := tx.Bucket(bucketBatches)
	if b == nil {
		return Batch{}, nil, ErrNotFound
	}
	if err := getJSON(b, []byte(id), &batch); err != nil {
		return Batch{}, nil, err
	}
	jobs := make([]Job, 0, len(batch.JobIDs))
	for _, jid := range batch.JobIDs {
		job, err := findJob(tx, jid)
		if err == ErrNotFound {
			continue
		} else if err != nil {
			return Batch{}, nil, err
		}
		jobs = append(jobs, job)
	}
	return batch, jobs, nil
}

func putBatch(tx *bolt.Tx, batch Batch) error {
	b, err := tx.CreateBucketIfNotExists(bucketBatches)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(batch.ID), batch)
}

// batchJobFinished counts a job of a batch that reached a final state, in finish's
// transaction; the last one finishes the batch and records its batch.finished event.
func (s *Store) batchJobFinished(tx *bolt.Tx, job Job, now time.Time) error {
	links := tx.Bucket(bucketBatchJobs)
	if links == nil {
		return nil
	}
	id := links.Get([]byte(job.ID))
	if id == nil {
		return nil
	}
	var batch Batch
	if err := getJSON(tx.Bucket(bucketBatches), id, &batch); err == ErrNotFound {
		return nil
	} else if err != nil {
		return err
	}
	if batch.Unfinished > 0 {
		batch.Unfinished--
	}
	if batch.Unfinished == 0 && batch.FinishedAt == nil {
		batch.FinishedAt = &now
		if err := putBatch(tx, batch); err != nil {
			return err
		}
		if err := s.recordBatchFinished(tx, batch, job, now); err != nil {
			return err
		}
		tx.OnCommit(func() { s.signal(batch.ID) })
		return nil
	}
	return putBatch(tx, batch)
}

// recordBatchFinished writes one pending batch.finished delivery per enabled endpoint of the
// batch's account; last is the job that finished it (its record in tx may not be written yet).
func (s *Store) recordBatchFinished(tx *bolt.Tx, batch Batch, last Job, now time.Time) error {
	if tx.Bucket(bucketWebhookEndpoints) == nil {
		return nil
	}
	eps, err := accountEndpoints(tx, batch.AccountID)
	if err != nil {
		return err
	}
	snap := BatchSnapshot{Batch: batch}
	for _, jid := range batch.JobIDs {
		job := last
		if jid != last.ID {
			if job, err = findJob(tx, jid); err == ErrNotFound {
				continue
			} else if err != nil {
				return err
			}
		}
		snap.Jobs = append(snap.Jobs, job)
	}
	body, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode batch %s for its webhook: %w", batch.ID, err)
	}
	if err := s.webhookBuckets(tx); err != nil {
		return err
	}
	eventID := BatchEventID(batch.ID)
	deliveries := tx.Bucket(bucketWebhookDeliveries)
	recorded := false
	for _, ep := range eps {
		if ep.DisabledAt != nil {
			continue
		}
		rec := WebhookDelivery{ID: eventID + "." + ep.ID, EventID: eventID, EventType: BatchFinishedEvent,
			AccountID: batch.AccountID, JobID: batch.ID, EndpointID: ep.ID, URL: ep.URL, Destination: WebhookDestination(ep.URL),
			Job: body, CreatedAt: now, State: DeliveryPending, NextAttemptAt: now}
		if deliveries.Get([]byte(rec.ID)) != nil {
			continue
		}
		st, err := destinationState(tx, rec.Destination)
		if err != nil {
			return err
		}
		if st.PausedUntil.After(rec.NextAttemptAt) {
			rec.NextAttemptAt = st.PausedUntil
		}
		if err := putDelivery(tx, rec); err != nil {
			return err
		}
		if err := putQueued(tx, rec); err != nil {
			return err
		}
		recorded = true
	}
	if recorded {
		tx.OnCommit(s.wakeWebhooks)
	}
	return nil
}

// BatchEventID is the id of a batch's batch.finished event: stable, the receiver's
// de-duplication key.
func BatchEventID(batchID string) string { return "evt_" + batchID + "_finished" }

// deleteBatchLink forgets which batch a deleted job belonged to, and the batch itself once
// it has expired (its jobs share its expires_at, so the sweep deletes them together).
func deleteBatchLink(tx *bolt.Tx, job Job) error {
	links := tx.Bucket(bucketBatchJobs)
	if links == nil {
		return nil
	}
	id := links.Get([]byte(job.ID))
	if id == nil {
		return nil
	}
	id = append([]byte(nil), id...)
	if err := links.Delete([]byte(job.ID)); err != nil {
		return err
	}
	var batch Batch
	if err := getJSON(tx.Bucket(bucketBatches), id, &batch); err == ErrNotFound {
		return nil
	} else if err != nil {
		return err
	}
	if job.ExpiresAt.Before(batch.ExpiresAt) {
		return nil
	}
	return tx.Bucket(bucketBatches).Delete(id)
}
