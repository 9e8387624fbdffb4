package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// ErrNotEmpty means an import's target database already holds accounts, keys or jobs.
var ErrNotEmpty = errors.New("the target database already holds data")

// ImportData is what `convsvc admin migrate` copies into the database: accounts with their
// ids, names, caps, created_at, reservations, monthly spend and purged-success counts; keys
// with their ids, prefixes, hashes and revocations; jobs with their ids and every field.
type ImportData struct {
	Accounts []store.Account
	Keys     []store.APIKey
	// Jobs are inserted in this order, which becomes their order in listings (seq). A job may
	// be created, queued, succeeded, failed or cancelled; a running one must be requeued by
	// the caller first, since its lease belonged to a process that is gone.
	Jobs []store.Job
	// WebhookEndpoints are inserted with their ids, secrets (exactly: signatures made after the
	// import verify with them), times and health, in this order (their order in listings).
	WebhookEndpoints []store.WebhookEndpoint
	// WebhookSigningSecrets are the accounts' signing secrets for jobs' own webhook_url.
	WebhookSigningSecrets []store.WebhookSigningSecret
	// JobWebhooks maps the id of a job in Jobs to the webhook_url it named at create.
	JobWebhooks map[string]string
	// WebhookDeliveries are inserted as given; a claimed one must be released by the caller
	// (Claimed false), since its dispatcher belonged to a process that is gone.
	WebhookDeliveries []store.WebhookDelivery
	// Presets are inserted with their names, targets, options and times.
	Presets []store.Preset
	// CacheEntries are the conversion cache's entries (docs/cache.md), inserted as given;
	// cache_totals becomes their count and bytes. Each entry's object (the job whose stored
	// output holds the bytes) must be in Jobs or be used by a job in Jobs (Output.Object),
	// and its file must be where the target's nodes read outputs: the caller copies it. The
	// references to cached outputs are not given: Import counts them from the jobs'
	// Output.Object, so deleting one of two jobs that use an output keeps it.
	CacheEntries []store.CacheEntry
}

// ImportCounts says what Import wrote.
type ImportCounts struct {
	Accounts int
	Keys     int
	Jobs     int
	Months   int // month_spend rows (account and month)
	// WebhookEndpoints, WebhookSigningSecrets, JobWebhooks and WebhookDeliveries are the
	// webhook rows written.
	WebhookEndpoints      int
	WebhookSigningSecrets int
	JobWebhooks           int
	WebhookDeliveries     int
	// Presets is the preset rows written.
	Presets int
	// CacheEntries and CacheRefs are the cache_entries rows written and the cache_refs rows
	// counted from the jobs (outputs used by jobs answered from the cache).
	CacheEntries int
	CacheRefs    int
}

// HasData reports whether the database holds any account, key or job.
func (s *Store) HasData() (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var has bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts) OR EXISTS (SELECT 1 FROM api_keys)
		OR EXISTS (SELECT 1 FROM jobs)`).Scan(&has)
	return has, wrap("has data", err)
}

// Import writes d in one transaction, keeping every id, hash and time as given. Without
// replace it refuses (ErrNotEmpty) a database that holds accounts, keys or jobs; with replace
// it first deletes all of them (and the idempotency keys, rate windows and the conversion
// cache's rows) in the same transaction. Before committing it checks, in the transaction,
// that the counts are d's and that VerifyLedger's invariants hold: reserved_cents equals each
// account's unfinished jobs, each month's spend equals its successes' charges plus purged
// successes, each cached output's references are the jobs that use it and the cache's totals
// are its entries'. Any failure rolls everything back, so the database is left as it was.
// ctx bounds the whole import.
func (s *Store) Import(ctx context.Context, d ImportData, replace bool) (ImportCounts, error) {
	var counts ImportCounts
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		counts = ImportCounts{}
		// One import at a time, none while another one is checking emptiness, and no other
		// transaction writes a table it writes until it ends (a node's DropCacheEntry or dead
		// outputs' sweep touches the cache's tables alone). LOCK TABLE takes them in the
		// order listed: cache.go's lock order first (a write gate's rate_windows row, the
		// job, its account, the cache's entry and references and dead outputs, month_spend,
		// cache_inflight, cache_totals), then the tables outside it.
		if _, err := tx.Exec(ctx, `LOCK TABLE rate_windows, jobs, accounts, cache_entries, cache_refs, cache_dead, month_spend,
			cache_inflight, cache_totals, api_keys, webhook_endpoints, webhook_signing_secrets, job_webhooks,
			webhook_deliveries, presets IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		if replace {
			if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys; DELETE FROM rate_windows;
				DELETE FROM cache_entries; DELETE FROM cache_refs; DELETE FROM cache_dead; DELETE FROM cache_inflight;
				UPDATE cache_totals SET entries = 0, bytes = 0;
				DELETE FROM webhook_deliveries; DELETE FROM job_webhooks; DELETE FROM webhook_endpoints;
				DELETE FROM webhook_signing_secrets; DELETE FROM presets; DELETE FROM jobs;
				DELETE FROM api_keys; DELETE FROM month_spend; DELETE FROM accounts`); err != nil {
				return fmt.Errorf("empty the target: %w", err)
			}
		} else {
			var has bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts) OR EXISTS (SELECT 1 FROM api_keys)
				OR EXISTS (SELECT 1 FROM jobs)`).Scan(&has); err != nil {
				return err
			}
			if has {
				return ErrNotEmpty
			}
		}
		for _, a := range d.Accounts {
			if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at, max_running, max_queued)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, a.ID, a.Name, a.SpendCapCents, a.ReservedCents, a.CreatedAt.UTC(), a.MaxRunning, a.MaxQueued); err != nil {
				return fmt.Errorf("account %s: %w", a.ID, err)
			}
			counts.Accounts++
			months := map[string]bool{}
			for m, n := range a.MonthlySpend {
				months[m] = months[m] || n != 0
			}
			for m, n := range a.PurgedSuccesses {
				months[m] = months[m] || n != 0
			}
			for _, m := range slices.Sorted(maps.Keys(months)) {
				if !months[m] {
					continue
				}
				if _, err := tx.Exec(ctx, `INSERT INTO month_spend (account_id, month, cents, purged_successes) VALUES ($1, $2, $3, $4)`,
					a.ID, m, a.MonthlySpend[m], a.PurgedSuccesses[m]); err != nil {
					return fmt.Errorf("account %s month %s: %w", a.ID, m, err)
				}
				counts.Months++
			}
		}
		for _, k := range d.Keys {
			if _, err := tx.Exec(ctx, `INSERT INTO api_keys (id, account_id, prefix, hash, created_at, revoked_at, presets_only)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.ID, k.AccountID, k.Prefix, k.Hash, k.CreatedAt.UTC(), utcPtr(k.RevokedAt), k.PresetsOnly); err != nil {
				return fmt.Errorf("key %s: %w", k.ID, err)
			}
			counts.Keys++
		}
		for _, j := range d.Jobs {
			if j.Status == store.StatusRunning {
				return fmt.Errorf("%w: job %s is running: requeue it before the import", store.ErrInvalidArgument, j.ID)
			}
			var opts []byte
			if j.Options != nil {
				opts = j.Options
			}
			var outBytes *int64
			var outSHA *string
			var outAttempt *int
			outVerified, outCached, outObject := false, false, ""
			if j.Output != nil {
				outBytes, outSHA, outAttempt = &j.Output.Bytes, &j.Output.SHA256, &j.Output.Attempt
				outVerified, outCached, outObject = j.Output.Verified, j.Output.Cached, j.Output.Object
			}
			var upSize *int64
			var upETag, upVersion *string
			if j.Upload != nil {
				upSize, upETag, upVersion = &j.Upload.Size, &j.Upload.ETag, &j.Upload.VersionID
			}
			outWarnings, err := warningsJSON(j.Output)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options,
					attempt, error_code, error_message, created_at, started_at, finished_at, expires_at, output_bytes, output_sha256,
					upload_size, upload_etag, upload_version_id, output_attempt, output_warnings, error_reason, source_url, deliver_to, output_verified,
					input_sha256, cache_base, hit_cents, output_cached, output_object)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
					nullif($26, ''), nullif($27, ''), $28, $29, nullif($30, ''))`,
				j.ID, j.AccountID, j.Status, j.InputFormat, j.TargetFormat, j.InputBytes, opts,
				j.Attempt, j.ErrorCode, j.ErrorMessage, j.CreatedAt.UTC(), utcPtr(j.StartedAt), utcPtr(j.FinishedAt),
				j.ExpiresAt.UTC(), outBytes, outSHA, upSize, upETag, upVersion, outAttempt, nullString(outWarnings), j.ErrorReason,
				j.SourceURL, deliveryJSON(j.DeliverTo), outVerified, j.InputSHA256, j.CacheBase, j.HitCents, outCached, outObject)
			if err != nil {
				return fmt.Errorf("job %s: %w", j.ID, err)
			}
			counts.Jobs++
		}
		if err := importWebhooks(ctx, tx, d, &counts); err != nil {
			return err
		}
		if err := importPresets(ctx, tx, d.Presets, &counts); err != nil {
			return err
		}
		if err := importCache(ctx, tx, d.CacheEntries, &counts); err != nil {
			return err
		}
		return checkImport(ctx, tx, d)
	})
	if err != nil {
		if errors.Is(err, ErrNotEmpty) || errors.Is(err, ErrImportCheck) {
			return ImportCounts{}, fmt.Errorf("pgstore: import: %w", err)
		}
		return ImportCounts{}, wrap("import", err)
	}
	return counts, nil
}

// importCache writes the cache's entries and totals, and counts each output's references
// from the imported jobs (one per job answered from it, as the transitions keep them), in the
// import's transaction.
func importCache(ctx context.Context, tx pgx.Tx, entries []store.CacheEntry, counts *ImportCounts) error {
	var bytes int64
	for _, e := range entries {
		warnings, err := warningsJSON(&e.Output)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt, output_warnings,
				output_verified, last_used) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			e.Key, e.Object, e.Output.Bytes, e.Output.SHA256, e.Output.Attempt, nullString(warnings), e.Output.Verified, e.LastUsed.UTC()); err != nil {
			return fmt.Errorf("cache entry %s: %w", e.Key, err)
		}
		bytes += e.Output.Bytes
		counts.CacheEntries++
	}
	if _, err := tx.Exec(ctx, `UPDATE cache_totals SET entries = $1, bytes = $2`, len(entries), bytes); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO cache_refs (object, refs)
		SELECT output_object, count(*) FROM jobs WHERE output_object IS NOT NULL GROUP BY output_object`)
	if err != nil {
		return fmt.Errorf("count the cached outputs' references: %w", err)
	}
	counts.CacheRefs = int(tag.RowsAffected())
	return nil
}

// importWebhooks writes d's webhook endpoints, signing secrets, jobs' webhook_url and
// deliveries in the import's transaction.
func importWebhooks(ctx context.Context, tx pgx.Tx, d ImportData, counts *ImportCounts) error {
	for _, ep := range d.WebhookEndpoints {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, secret, created_at, failing_since, disabled_at,
				previous_secret, previous_expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, ep.ID, ep.AccountID, ep.URL, ep.Secret, ep.CreatedAt.UTC(),
			utcPtr(ep.FailingSince), utcPtr(ep.DisabledAt), ep.PreviousSecret, utcPtr(ep.PreviousExpiresAt)); err != nil {
			return fmt.Errorf("webhook endpoint %s: %w", ep.ID, err)
		}
		counts.WebhookEndpoints++
	}
	for _, rec := range d.WebhookSigningSecrets {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_signing_secrets (account_id, secret, created_at, previous_secret, previous_expires_at)
			VALUES ($1, $2, $3, $4, $5)`, rec.AccountID, rec.Secret, rec.CreatedAt.UTC(), rec.PreviousSecret, utcPtr(rec.PreviousExpiresAt)); err != nil {
			return fmt.Errorf("webhook signing secret of %s: %w", rec.AccountID, err)
		}
		counts.WebhookSigningSecrets++
	}
	for _, id := range slices.Sorted(maps.Keys(d.JobWebhooks)) {
		if _, err := tx.Exec(ctx, `INSERT INTO job_webhooks (job_id, url) VALUES ($1, $2)`, id, d.JobWebhooks[id]); err != nil {
			return fmt.Errorf("webhook_url of job %s: %w", id, err)
		}
		counts.JobWebhooks++
	}
	for _, w := range d.WebhookDeliveries {
		if w.Claimed {
			return fmt.Errorf("%w: webhook delivery %s is claimed: release it before the import", store.ErrInvalidArgument, w.ID)
		}
		var endpoint *string
		if w.EndpointID != "" {
			endpoint = &w.EndpointID
		}
		job := []byte(w.Job)
		if job == nil {
			job = []byte{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, event_id, event_type, account_id, job_id, endpoint_id, url, job,
				created_at, state, attempts, next_attempt_at, claimed, last_attempt_at, last_status_code, last_error, delivered_at, destination)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, false, $13, $14, $15, $16, webhook_destination($7))`,
			w.ID, w.EventID, w.EventType, w.AccountID, w.JobID, endpoint, w.URL, job,
			w.CreatedAt.UTC(), w.State, w.Attempts, w.NextAttemptAt.UTC(), utcPtr(w.LastAttemptAt), w.LastStatusCode,
			w.LastError, utcPtr(w.DeliveredAt)); err != nil {
			return fmt.Errorf("webhook delivery %s: %w", w.ID, err)
		}
		counts.WebhookDeliveries++
	}
	return nil
}

// checkWebhookImport verifies, inside the import's transaction, that the webhook tables hold
// exactly d's rows, and every endpoint and signing secret exactly its secret.
func checkWebhookImport(ctx context.Context, tx pgx.Tx, d ImportData) error {
	var endpoints, secrets, jobURLs, deliveries int
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_endpoints), (SELECT count(*) FROM webhook_signing_secrets),
		(SELECT count(*) FROM job_webhooks), (SELECT count(*) FROM webhook_deliveries)`).Scan(&endpoints, &secrets, &jobURLs, &deliveries); err != nil {
		return err
	}
	if endpoints != len(d.WebhookEndpoints) || secrets != len(d.WebhookSigningSecrets) || jobURLs != len(d.JobWebhooks) || deliveries != len(d.WebhookDeliveries) {
		return fmt.Errorf("%w: the target holds %d webhook endpoints, %d signing secrets, %d job webhook_urls, %d deliveries after copying %d, %d, %d, %d",
			ErrImportCheck, endpoints, secrets, jobURLs, deliveries, len(d.WebhookEndpoints), len(d.WebhookSigningSecrets), len(d.JobWebhooks), len(d.WebhookDeliveries))
	}
	want := map[string]string{}
	for _, ep := range d.WebhookEndpoints {
		want["endpoint "+ep.ID] = ep.Secret
	}
	for _, rec := range d.WebhookSigningSecrets {
		want["signing secret of "+rec.AccountID] = rec.Secret
	}
	rows, err := tx.Query(ctx, `SELECT 'endpoint ' || id, secret FROM webhook_endpoints
		UNION ALL SELECT 'signing secret of ' || account_id, secret FROM webhook_signing_secrets`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, secret string
		if err := rows.Scan(&name, &secret); err != nil {
			return err
		}
		if w, ok := want[name]; !ok || w != secret {
			return fmt.Errorf("%w: webhook %s does not hold the secret copied", ErrImportCheck, name)
		}
	}
	return rows.Err()
}

// checkImport verifies, inside the import's transaction, that the tables hold exactly d's
// rows and that the ledger invariants hold for them.
func checkImport(ctx context.Context, tx pgx.Tx, d ImportData) error {
	var accounts, keys, jobs int
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM jobs)`).
		Scan(&accounts, &keys, &jobs); err != nil {
		return err
	}
	if accounts != len(d.Accounts) || keys != len(d.Keys) || jobs != len(d.Jobs) {
		return fmt.Errorf("%w: the target holds %d accounts, %d keys, %d jobs after copying %d, %d, %d",
			ErrImportCheck, accounts, keys, jobs, len(d.Accounts), len(d.Keys), len(d.Jobs))
	}
	if err := checkWebhookImport(ctx, tx, d); err != nil {
		return err
	}
	var presets int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM presets`).Scan(&presets); err != nil {
		return err
	}
	if presets != len(d.Presets) {
		return fmt.Errorf("%w: the target holds %d presets after copying %d", ErrImportCheck, presets, len(d.Presets))
	}
	var entries int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM cache_entries`).Scan(&entries); err != nil {
		return err
	}
	if entries != len(d.CacheEntries) {
		return fmt.Errorf("%w: the target holds %d cache entries after copying %d", ErrImportCheck, entries, len(d.CacheEntries))
	}
	// VerifyLedger's invariants: the reservations, each month's spend, the cache's references
	// and totals, each job's fields for its state.
	problems, err := ledgerProblems(ctx, tx)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %w", ErrImportCheck, errors.Join(problems...))
	}
	return nil
}

// ErrImportCheck means the imported rows failed the counts or the ledger check inside the
// import's transaction, which was therefore rolled back.
var ErrImportCheck = errors.New("imported data fails the ledger check")

// deliveryJSON is a job's deliver_to as its jsonb column holds it, nil for none.
func deliveryJSON(d *store.Delivery) []byte {
	if d == nil {
		return nil
	}
	b, _ := json.Marshal(d) // strings and a map of strings: cannot fail
	return b
}
