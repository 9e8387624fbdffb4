package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

const batchCols = `id, account_id, job_ids, unfinished, created_at, expires_at, finished_at`

func scanBatch(row pgx.Row) (store.Batch, error) {
	var b store.Batch
	err := row.Scan(&b.ID, &b.AccountID, &b.JobIDs, &b.Unfinished, &b.CreatedAt, &b.ExpiresAt, &b.FinishedAt)
	if isNoRows(err) {
		return store.Batch{}, store.ErrNotFound
	} else if err != nil {
		return store.Batch{}, err
	}
	b.CreatedAt, b.ExpiresAt, b.FinishedAt = b.CreatedAt.UTC(), b.ExpiresAt.UTC(), utcPtr(b.FinishedAt)
	return b, nil
}

// batchJobs reads the jobs of b that still exist, in the batch's order.
func batchJobs(ctx context.Context, tx querier, b store.Batch) ([]store.Job, error) {
	rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ANY($1)`, b.JobIDs)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.Job, len(found))
	for _, j := range found {
		byID[j.ID] = j
	}
	jobs := make([]store.Job, 0, len(found))
	for _, id := range b.JobIDs {
		if j, ok := byID[id]; ok {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// CreateBatch reserves every job of p in one transaction, all or nothing, under the
// account's row lock; see store.Store.CreateBatch.
func (s *Store) CreateBatch(p store.CreateBatchParams, render func(store.Batch, []store.Job) (store.Response, error)) (store.Batch, []store.Job, store.Response, error) {
	if err := store.CheckBatchSize(len(p.Jobs)); err != nil {
		return store.Batch{}, nil, store.Response{}, err
	}
	for i, jp := range p.Jobs {
		if jp.InputBytes < 1 || jp.InputBytes > store.MaxInputBytes {
			return store.Batch{}, nil, store.Response{}, fmt.Errorf("%w: job %d: input_bytes %d out of range", store.ErrInvalidArgument, i, jp.InputBytes)
		}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var batch store.Batch
	var jobs []store.Job
	var resp store.Response
	var renderErr error
	err := s.tx(ctx, func(tx pgx.Tx) error {
		batch, jobs, resp, renderErr = store.Batch{}, nil, store.Response{}, nil
		capCents, reserved, spent, err := lockAccountSpend(ctx, tx, p.AccountID)
		if err != nil {
			return err
		}
		if p.IdempotencyKey != "" {
			batchID, found, err := s.idempotentResponse(ctx, tx, p.AccountID, p.IdempotencyKey, p.RequestHash, &resp)
			if err != nil {
				return err
			} else if found {
				batch, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchCols+` FROM batches WHERE id = $1`, batchID))
				if err == store.ErrNotFound {
					return nil // the batch expired since; the replayed response still stands
				} else if err != nil {
					return err
				}
				jobs, err = batchJobs(ctx, tx, batch)
				return err
			}
		}
		n := int64(len(p.Jobs))
		if spent+reserved+n > capCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month; the batch needs %d",
				store.ErrLimitReached, spent, reserved, capCents, n)
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET reserved_cents = reserved_cents + $2 WHERE id = $1`, p.AccountID, n); err != nil {
			return err
		}
		now := time.Now()
		ids := make([]string, len(p.Jobs))
		inputs := make([]string, len(p.Jobs))
		targets := make([]string, len(p.Jobs))
		sizes := make([]int64, len(p.Jobs))
		opts := make([][]byte, len(p.Jobs))
		statuses := make([]string, len(p.Jobs))
		sources := make([]string, len(p.Jobs))
		delivers := make([]*string, len(p.Jobs))
		// The conversion cache's input_sha256 and cache base (cache.go).
		sums, bases := make([]string, len(p.Jobs)), make([]string, len(p.Jobs))
		var queued []string // source_url items: queued at create, as CreateJob does
		for i, jp := range p.Jobs {
			ids[i], inputs[i], targets[i], sizes[i] = store.NewJobID(now), jp.InputFormat, jp.TargetFormat, jp.InputBytes
			if jp.Options != nil {
				opts[i] = jp.Options
			}
			statuses[i], sources[i] = store.StatusCreated, jp.SourceURL
			sums[i], bases[i] = jp.InputSHA256, jp.CacheBase
			if jp.SourceURL != "" {
				statuses[i] = store.StatusQueued
				queued = append(queued, ids[i])
			}
			if d := deliveryJSON(jp.DeliverTo); d != nil {
				v := string(d)
				delivers[i] = &v
			}
		}
		if len(queued) > 0 { // max_queued holds for them as for a start
			if err := checkQueueRoom(ctx, tx, p.AccountID, len(queued)); err != nil {
				return err
			}
		}
		// One statement for every job: the rows take their seq in the batch's order.
		rows, err := tx.Query(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
				source_url, deliver_to, started_at, input_sha256, cache_base)
			SELECT t.id, $1, t.status, t.input_format, t.target_format, t.input_bytes, t.options, now(), now() + $7 * interval '1 microsecond',
				t.source_url, t.deliver_to::jsonb, CASE WHEN t.status = 'queued' THEN now() END, nullif(t.input_sha256, ''), nullif(t.cache_base, '')
			FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bytea[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[]) WITH ORDINALITY
				AS t (id, input_format, target_format, input_bytes, options, status, source_url, deliver_to, input_sha256, cache_base, ord)
			ORDER BY t.ord
			RETURNING `+jobCols, p.AccountID, ids, inputs, targets, sizes, opts, micros(s.opts.Retention), statuses, sources, delivers, sums, bases)
		if err != nil {
			return err
		}
		inserted, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
		if err != nil {
			return err
		}
		payloads := make([]string, len(queued))
		for i, id := range queued {
			payloads[i] = "q:" + id
		}
		if err := notify(ctx, tx, payloads...); err != nil {
			return err
		}
		byID := make(map[string]store.Job, len(inserted))
		for _, j := range inserted {
			byID[j.ID] = j
		}
		jobs = make([]store.Job, len(ids))
		for i, id := range ids {
			jobs[i] = byID[id]
			if err := putJobWebhook(ctx, tx, jobs[i], p.Jobs[i].WebhookURL); err != nil {
				return err
			}
		}
		batch, err = scanBatch(tx.QueryRow(ctx, `INSERT INTO batches (id, account_id, job_ids, unfinished, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+batchCols,
			store.NewBatchID(), p.AccountID, ids, len(ids), jobs[0].CreatedAt, jobs[0].ExpiresAt))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO batch_jobs (job_id, batch_id) SELECT unnest($1::text[]), $2`, ids, batch.ID); err != nil {
			return err
		}
		if p.IdempotencyKey == "" {
			return nil
		}
		if resp, err = render(batch, jobs); err != nil {
			renderErr = fmt.Errorf("render response: %w", err)
			return renderErr
		}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (account_id, key, request_hash, job_id, response_status, response_body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())
			ON CONFLICT (account_id, key) DO UPDATE SET request_hash = excluded.request_hash, job_id = excluded.job_id,
				response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`,
			p.AccountID, p.IdempotencyKey, p.RequestHash, batch.ID, resp.Status, resp.Body)
		return err
	})
	if renderErr != nil {
		return store.Batch{}, nil, store.Response{}, renderErr
	}
	if err != nil {
		return store.Batch{}, nil, store.Response{}, wrap("create batch", err)
	}
	if p.IdempotencyKey == "" {
		if resp, err = render(batch, jobs); err != nil {
			return store.Batch{}, nil, store.Response{}, fmt.Errorf("render response: %w", err)
		}
	}
	return batch, jobs, resp, nil
}

// Batch returns one of the account's live batches and its jobs in order; another account's
// batch or an expired one is ErrNotFound.
func (s *Store) Batch(accountID, batchID string) (store.Batch, []store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var batch store.Batch
	var jobs []store.Job
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		batch, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchCols+` FROM batches
			WHERE id = $1 AND account_id = $2 AND expires_at > now()`, batchID, accountID))
		if err != nil {
			return err
		}
		jobs, err = batchJobs(ctx, tx, batch)
		return err
	})
	if err != nil {
		return store.Batch{}, nil, wrap("batch", err)
	}
	return batch, jobs, nil
}

// CancelBatch cancels every unfinished job of one of the account's batches in one
// transaction; see store.Store.CancelBatch.
func (s *Store) CancelBatch(accountID, batchID string) (store.Batch, []store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var batch store.Batch
	var jobs []store.Job
	err := s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		batch, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchCols+` FROM batches
			WHERE id = $1 AND account_id = $2 AND expires_at > now()`, batchID, accountID))
		if err != nil {
			return err
		}
		// Lock the jobs in id order, then finish each (job, account, batch: finish's order).
		rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, batch.JobIDs)
		if err != nil {
			return err
		}
		locked, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
		if err != nil {
			return err
		}
		for i := range locked {
			switch locked[i].Status {
			case store.StatusCreated, store.StatusQueued, store.StatusRunning:
				if err := s.finish(ctx, tx, fin, &locked[i], store.StatusCancelled, "", "", nil); err != nil {
					return err
				}
			}
		}
		batch, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchCols+` FROM batches WHERE id = $1`, batchID))
		if err != nil {
			return err
		}
		jobs, err = batchJobs(ctx, tx, batch)
		return err
	})
	if err != nil {
		return store.Batch{}, nil, wrap("cancel batch", err)
	}
	s.signal(batch.JobIDs...)
	s.signal(batch.ID)
	return batch, jobs, nil
}

// batchJobFinished counts a job of a batch that reached a final state, in finish's
// transaction (after the job's row and its account's were updated, so locks are taken in the
// order job, account, batch everywhere); the last one sets finished_at and records batch.finished.
func batchJobFinished(ctx context.Context, tx pgx.Tx, job store.Job) error {
	batch, err := scanBatch(tx.QueryRow(ctx, `UPDATE batches b SET unfinished = b.unfinished - 1,
			finished_at = CASE WHEN b.unfinished = 1 THEN now() ELSE b.finished_at END
		FROM batch_jobs bj WHERE bj.job_id = $1 AND b.id = bj.batch_id AND b.unfinished > 0
		RETURNING b.id, b.account_id, b.job_ids, b.unfinished, b.created_at, b.expires_at, b.finished_at`, job.ID))
	if err == store.ErrNotFound || (err == nil && batch.Unfinished > 0) {
		return nil
	} else if err != nil {
		return fmt.Errorf("count the batch's finished job: %w", err)
	}
	jobs, err := batchJobs(ctx, tx, batch)
	if err != nil {
		return err
	}
	snapshot, err := json.Marshal(store.BatchSnapshot{Batch: batch, Jobs: jobs})
	if err != nil {
		return fmt.Errorf("encode batch %s for its webhook: %w", batch.ID, err)
	}
	eventID := store.BatchEventID(batch.ID)
	tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, event_id, event_type, account_id, job_id, endpoint_id, url, job,
			created_at, state, next_attempt_at, destination)
		SELECT $1::text || '.' || e.id, $1, $2, e.account_id, $4, e.id, e.url, $5::bytea, now(), 'pending',
			greatest(now(), (SELECT p.paused_until FROM webhook_destinations p WHERE p.destination = webhook_destination(e.url))),
			webhook_destination(e.url)
		FROM webhook_endpoints e WHERE e.account_id = $3 AND e.disabled_at IS NULL
		ON CONFLICT (id) DO NOTHING`, eventID, store.BatchFinishedEvent, batch.AccountID, batch.ID, snapshot)
	if err != nil {
		return fmt.Errorf("record batch.finished deliveries: %w", err)
	}
	payloads := []string{"j:" + batch.ID}
	if tag.RowsAffected() > 0 {
		payloads = append(payloads, "w:"+batch.ID)
	}
	return notify(ctx, tx, payloads...)
}
