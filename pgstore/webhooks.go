package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/store"
)

const endpointCols = `id, account_id, url, secret, created_at, failing_since, disabled_at, previous_secret, previous_expires_at`

func scanEndpoint(row pgx.Row) (store.WebhookEndpoint, error) {
	var ep store.WebhookEndpoint
	err := row.Scan(&ep.ID, &ep.AccountID, &ep.URL, &ep.Secret, &ep.CreatedAt, &ep.FailingSince, &ep.DisabledAt,
		&ep.PreviousSecret, &ep.PreviousExpiresAt)
	if isNoRows(err) {
		return ep, store.ErrNotFound
	}
	ep.CreatedAt = ep.CreatedAt.UTC()
	ep.FailingSince, ep.DisabledAt, ep.PreviousExpiresAt = utcPtr(ep.FailingSince), utcPtr(ep.DisabledAt), utcPtr(ep.PreviousExpiresAt)
	return ep, err
}

const deliveryCols = `id, event_id, event_type, account_id, job_id, coalesce(endpoint_id, ''), url, job, created_at, state,
	attempts, next_attempt_at, claimed, last_attempt_at, last_status_code, last_error, delivered_at, destination`

func scanDelivery(row pgx.Row) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var job []byte
	err := row.Scan(&d.ID, &d.EventID, &d.EventType, &d.AccountID, &d.JobID, &d.EndpointID, &d.URL, &job, &d.CreatedAt, &d.State,
		&d.Attempts, &d.NextAttemptAt, &d.Claimed, &d.LastAttemptAt, &d.LastStatusCode, &d.LastError, &d.DeliveredAt, &d.Destination)
	if isNoRows(err) {
		return d, store.ErrNotFound
	}
	d.Job = json.RawMessage(job)
	d.CreatedAt, d.NextAttemptAt = d.CreatedAt.UTC(), d.NextAttemptAt.UTC()
	d.LastAttemptAt, d.DeliveredAt = utcPtr(d.LastAttemptAt), utcPtr(d.DeliveredAt)
	return d, err
}

// isForeignKey reports a foreign key violation (an unknown account).
func isForeignKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// accountExists is ErrNotFound for an unknown account.
func accountExists(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, accountID string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM accounts WHERE id = $1`, accountID).Scan(&one)
	if isNoRows(err) {
		return store.ErrNotFound
	}
	return err
}

// CreateWebhookEndpoint registers url for the account's job events; see store.Store.CreateWebhookEndpoint.
func (s *Store) CreateWebhookEndpoint(accountID, url, secret string) (store.WebhookEndpoint, error) {
	if url == "" || secret == "" {
		return store.WebhookEndpoint{}, fmt.Errorf("%w: webhook endpoint needs a URL and a secret", store.ErrInvalidArgument)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var ep store.WebhookEndpoint
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// One account's creates take turns, so two at once cannot both see room for the last.
		// The count is a statement of its own: under READ COMMITTED its snapshot is then taken
		// after the lock was granted, and sees the endpoint the previous holder committed.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1, 0))`, accountID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints WHERE account_id = $1`, accountID).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxWebhookEndpoints {
			return store.ErrTooManyWebhookEndpoints
		}
		var err error
		ep, err = scanEndpoint(tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, secret, created_at)
			VALUES ($1, $2, $3, $4, now()) RETURNING `+endpointCols, store.NewWebhookEndpointID(), accountID, url, secret))
		return err
	})
	if errors.Is(err, store.ErrTooManyWebhookEndpoints) {
		return store.WebhookEndpoint{}, err
	}
	if isForeignKey(err) {
		return store.WebhookEndpoint{}, store.ErrNotFound
	}
	if err != nil {
		return store.WebhookEndpoint{}, wrap("create webhook endpoint", err)
	}
	return ep, nil
}

// WebhookEndpoints lists the account's endpoints, oldest first; an unknown account is ErrNotFound.
func (s *Store) WebhookEndpoints(accountID string) ([]store.WebhookEndpoint, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	out := []store.WebhookEndpoint{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE account_id = $1 ORDER BY seq`, accountID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ep, err := scanEndpoint(rows)
			if err != nil {
				return err
			}
			out = append(out, ep)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap("webhook endpoints", err)
	}
	return out, nil
}

// DeleteWebhookEndpoint removes one of the account's endpoints; its pending deliveries fail
// at their next attempt.
func (s *Store) DeleteWebhookEndpoint(accountID, endpointID string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, endpointID, accountID)
	if err != nil {
		return wrap("delete webhook endpoint", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// EnableWebhookEndpoint re-enables a disabled endpoint of the account and forgets its failures.
func (s *Store) EnableWebhookEndpoint(accountID, endpointID string) (store.WebhookEndpoint, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	ep, err := scanEndpoint(s.pool.QueryRow(ctx, `UPDATE webhook_endpoints SET disabled_at = NULL, failing_since = NULL
		WHERE id = $1 AND account_id = $2 RETURNING `+endpointCols, endpointID, accountID))
	if err != nil {
		return store.WebhookEndpoint{}, wrap("enable webhook endpoint", err)
	}
	return ep, nil
}

// RotateWebhookEndpointSecret makes secret the endpoint's signing secret, the one it replaces
// signing beside it for overlap; see store.Store.RotateWebhookEndpointSecret.
func (s *Store) RotateWebhookEndpointSecret(accountID, endpointID, secret string, overlap time.Duration) (store.WebhookEndpoint, error) {
	if secret == "" {
		return store.WebhookEndpoint{}, fmt.Errorf("%w: empty endpoint secret", store.ErrInvalidArgument)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	ep, err := scanEndpoint(s.pool.QueryRow(ctx, `UPDATE webhook_endpoints SET secret = $3,
			previous_secret = CASE WHEN $4::bigint > 0 THEN secret ELSE '' END,
			previous_expires_at = CASE WHEN $4::bigint > 0 THEN now() + $4::bigint * interval '1 microsecond' END
		WHERE id = $1 AND account_id = $2 RETURNING `+endpointCols, endpointID, accountID, secret, micros(overlap)))
	if err != nil {
		return store.WebhookEndpoint{}, wrap("rotate webhook endpoint secret", err)
	}
	return ep, nil
}

// SetWebhookSigningSecret makes secret the account's signing secret for jobs' own webhook_url,
// the one it replaces signing beside it for overlap; see store.Store.SetWebhookSigningSecret.
func (s *Store) SetWebhookSigningSecret(accountID, secret string, overlap time.Duration) (store.WebhookSigningSecret, error) {
	if secret == "" {
		return store.WebhookSigningSecret{}, fmt.Errorf("%w: empty signing secret", store.ErrInvalidArgument)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	rec := store.WebhookSigningSecret{AccountID: accountID, Secret: secret}
	err := s.pool.QueryRow(ctx, `INSERT INTO webhook_signing_secrets (account_id, secret, created_at) VALUES ($1, $2, now())
		ON CONFLICT (account_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at,
			previous_secret = CASE WHEN $3::bigint > 0 THEN webhook_signing_secrets.secret ELSE '' END,
			previous_expires_at = CASE WHEN $3::bigint > 0 THEN excluded.created_at + $3::bigint * interval '1 microsecond' END
		RETURNING created_at, previous_secret, previous_expires_at`, accountID, secret, micros(overlap)).Scan(&rec.CreatedAt, &rec.PreviousSecret, &rec.PreviousExpiresAt)
	if isForeignKey(err) {
		return store.WebhookSigningSecret{}, store.ErrNotFound
	}
	if err != nil {
		return store.WebhookSigningSecret{}, wrap("set webhook signing secret", err)
	}
	rec.CreatedAt, rec.PreviousExpiresAt = rec.CreatedAt.UTC(), utcPtr(rec.PreviousExpiresAt)
	return rec, nil
}

// WebhookSigningSecret returns the account's signing secret; ErrNotFound when it has none.
func (s *Store) WebhookSigningSecret(accountID string) (store.WebhookSigningSecret, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rec := store.WebhookSigningSecret{AccountID: accountID}
	err := s.pool.QueryRow(ctx, `SELECT secret, created_at, previous_secret, previous_expires_at FROM webhook_signing_secrets WHERE account_id = $1`,
		accountID).Scan(&rec.Secret, &rec.CreatedAt, &rec.PreviousSecret, &rec.PreviousExpiresAt)
	if isNoRows(err) {
		return store.WebhookSigningSecret{}, store.ErrNotFound
	}
	if err != nil {
		return store.WebhookSigningSecret{}, wrap("webhook signing secret", err)
	}
	rec.CreatedAt, rec.PreviousExpiresAt = rec.CreatedAt.UTC(), utcPtr(rec.PreviousExpiresAt)
	return rec, nil
}

// putJobWebhook remembers the webhook_url a new job names, in CreateJob's transaction; the
// account must have a signing secret.
func putJobWebhook(ctx context.Context, tx pgx.Tx, job store.Job, url string) error {
	if url == "" {
		return nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO job_webhooks (job_id, url)
		SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM webhook_signing_secrets WHERE account_id = $3)`, job.ID, url, job.AccountID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: webhook_url needs the account's webhook signing secret: make it with POST /v1/webhook-secret (`convsvc webhooks rotate-secret`) or, as an operator, `convsvc admin webhooks secret %s`", store.ErrInvalidArgument, job.AccountID)
	}
	return nil
}

// JobWebhookURL is the webhook_url the job named at create, or "".
func (s *Store) JobWebhookURL(jobID string) (string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var url string
	err := s.pool.QueryRow(ctx, `SELECT url FROM job_webhooks WHERE job_id = $1`, jobID).Scan(&url)
	if isNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", wrap("job webhook url", err)
	}
	return url, nil
}

// recordWebhookEvents writes one pending delivery of the job's event (it just reached a final
// state) per destination, in finish's transaction: each enabled endpoint of its account and
// its own webhook_url. The ids are the event's, so a retried transaction writes each once;
// the notification (sent at commit) wakes every node's dispatcher.
func recordWebhookEvents(ctx context.Context, tx pgx.Tx, job store.Job) error {
	snapshot, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode job %s for its webhook: %w", job.ID, err)
	}
	eventID := store.WebhookEventID(job.ID, job.Status)
	// A paused destination (webhook_destinations) gets no attempt before its pause ends.
	tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, event_id, event_type, account_id, job_id, endpoint_id, url, job,
			created_at, state, next_attempt_at, destination)
		SELECT n.id, n.event_id, n.event_type, n.account_id, n.job_id, n.endpoint_id, n.url, n.job, now(), 'pending',
			greatest(now(), (SELECT p.paused_until FROM webhook_destinations p WHERE p.destination = n.destination)), n.destination
		FROM (
			SELECT $1::text || '.' || e.id AS id, $1 AS event_id, $2::text AS event_type, $3::text AS account_id, $4::text AS job_id,
				e.id AS endpoint_id, e.url, $5::bytea AS job, webhook_destination(e.url) AS destination
				FROM webhook_endpoints e WHERE e.account_id = $3 AND e.disabled_at IS NULL
			UNION ALL
			SELECT $1::text || '.' || $6::text, $1, $2, $3, $4, NULL, w.url, $5::bytea, webhook_destination(w.url)
				FROM job_webhooks w WHERE w.job_id = $4
		) n
		ON CONFLICT (id) DO NOTHING`,
		eventID, store.WebhookEventType(job.Status), job.AccountID, job.ID, snapshot, store.DestinationJob)
	if err != nil {
		return fmt.Errorf("record webhook deliveries: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return notify(ctx, tx, "w:"+job.ID)
}

// WebhookWake returns a channel that receives when any node recorded deliveries (and when
// the listener reconnected, since notifications may have been lost).
func (s *Store) WebhookWake() <-chan struct{} {
	s.wakeOnce.Do(func() {
		s.wake = make(chan struct{}, 1)
		s.Subscribe(func(e Event) {
			if e.Kind == EventWebhook || e.Kind == EventResync {
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		})
	})
	return s.wake
}

// ClaimWebhookDeliveries takes due pending deliveries as c says, fairly across accounts and
// destinations (store.WebhookClaim), counts each one's attempt and holds it for c.Hold; see
// store.Store.ClaimWebhookDeliveries. Claims of every node take one transaction-scoped
// advisory lock, so the attempts in flight they count (every node's) are exact and the caps
// hold across nodes; the rows themselves are still locked FOR UPDATE SKIP LOCKED, so a claim
// never waits for an attempt being recorded.
func (s *Store) ClaimWebhookDeliveries(c store.WebhookClaim) ([]store.WebhookDelivery, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var out []store.WebhookDelivery
	var last string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		// Nothing due, the usual poll: no lock, no writes.
		var anyDue bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= now())`).Scan(&anyDue); err != nil || !anyDue {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockWebhookClaim); err != nil {
			return err
		}
		// Due deliveries of a paused destination wait for the pause's end, not in a slot.
		// Those whose retry period is over fail instead (c.GiveUpAfter).
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries d SET next_attempt_at = p.paused_until, claimed = false,
				state = CASE WHEN $1::float8 > 0 AND d.created_at + $1::float8 * interval '1 microsecond' <= now() THEN 'failed' ELSE 'pending' END,
				last_error = CASE WHEN $1::float8 > 0 AND d.created_at + $1::float8 * interval '1 microsecond' <= now() THEN $2 ELSE d.last_error END
			FROM webhook_destinations p
			WHERE p.destination = d.destination AND p.paused_until > now() AND d.state = 'pending' AND d.next_attempt_at <= now()`,
			micros(c.GiveUpAfter), store.WebhookGaveUpPaused); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT c.id, c.account_id, c.destination, c.next_attempt_at
			FROM (SELECT DISTINCT account_id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= now()) a
			CROSS JOIN LATERAL (SELECT d.id, d.account_id, d.destination, d.next_attempt_at FROM webhook_deliveries d
				WHERE d.account_id = a.account_id AND d.state = 'pending' AND d.next_attempt_at <= now()
				ORDER BY d.next_attempt_at, d.id LIMIT $1) c
			ORDER BY c.account_id, c.next_attempt_at, c.id`, webhookScanPerAccount)
		if err != nil {
			return err
		}
		var cands []store.WebhookCandidate
		for rows.Next() {
			var cand store.WebhookCandidate
			if err := rows.Scan(&cand.ID, &cand.AccountID, &cand.Destination, &cand.Due); err != nil {
				rows.Close()
				return err
			}
			cands = append(cands, cand)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		inflight := store.WebhookInflight{Accounts: map[string]int{}, Destinations: map[string]int{}}
		rows, err = tx.Query(ctx, `SELECT account_id, destination, count(*) FROM webhook_deliveries
			WHERE state = 'pending' AND claimed AND next_attempt_at > now() GROUP BY account_id, destination`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var acct, dest string
			var n int
			if err := rows.Scan(&acct, &dest, &n); err != nil {
				rows.Close()
				return err
			}
			inflight.Accounts[acct] += n
			inflight.Destinations[dest] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		s.webhookRR.Lock()
		after := s.webhookRR.last
		s.webhookRR.Unlock()
		var pick []store.WebhookCandidate
		pick, _, last = store.PickWebhookDeliveries(cands, inflight, c, after) // none paused: rescheduled above
		if len(pick) == 0 {
			return nil
		}
		ids := make([]string, len(pick))
		order := map[string]int{}
		for i, p := range pick {
			ids[i] = p.ID
			order[p.ID] = i
		}
		type due struct {
			id, secret, why string
			previous        string
			previousUntil   *time.Time
			failures        int
		}
		rows, err = tx.Query(ctx, `SELECT d.id, d.endpoint_id IS NULL, e.id IS NOT NULL, e.disabled_at IS NOT NULL,
				coalesce(e.secret, ''), coalesce(s.secret, ''), coalesce(p.failures, 0),
				coalesce(s.previous_secret, ''), s.previous_expires_at,
				coalesce(e.previous_secret, ''), e.previous_expires_at
			FROM webhook_deliveries d
			LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
			LEFT JOIN webhook_signing_secrets s ON s.account_id = d.account_id
			LEFT JOIN webhook_destinations p ON p.destination = d.destination
			WHERE d.id = ANY($1) AND d.state = 'pending' AND d.next_attempt_at <= now()
			FOR UPDATE OF d SKIP LOCKED`, ids)
		if err != nil {
			return err
		}
		var dues []due
		for rows.Next() {
			var d due
			var ownURL, epExists, disabled bool
			var epSecret, acctSecret string
			var previous, epPrevious string
			var previousUntil, epPreviousUntil *time.Time
			if err := rows.Scan(&d.id, &ownURL, &epExists, &disabled, &epSecret, &acctSecret, &d.failures, &previous, &previousUntil,
				&epPrevious, &epPreviousUntil); err != nil {
				rows.Close()
				return err
			}
			switch {
			case ownURL && acctSecret == "":
				d.why = "the account's webhook signing secret is gone"
			case ownURL:
				d.secret = acctSecret
				if previous != "" && previousUntil != nil {
					d.previous, d.previousUntil = previous, previousUntil
				}
			case !epExists:
				d.why = "the endpoint was removed"
			case disabled:
				d.why = "the endpoint is disabled"
			default:
				d.secret = epSecret
				if epPrevious != "" && epPreviousUntil != nil {
					d.previous, d.previousUntil = epPrevious, epPreviousUntil
				}
			}
			dues = append(dues, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(dues, func(a, b due) int { return order[a.id] - order[b.id] })
		for _, d := range dues {
			if d.why != "" {
				if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', last_error = $2, claimed = false WHERE id = $1`, d.id, d.why); err != nil {
					return err
				}
				continue
			}
			got, err := scanDelivery(tx.QueryRow(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, claimed = true,
					next_attempt_at = now() + $2 * interval '1 microsecond'
				WHERE id = $1 RETURNING `+deliveryCols, d.id, micros(c.Hold)))
			if err != nil {
				return err
			}
			got.Secret = d.secret
			if d.previousUntil != nil {
				got.PreviousSecret, got.PreviousSecretUntil = d.previous, d.previousUntil.UTC()
			}
			got.DestinationFailures = d.failures
			out = append(out, got)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("claim webhook deliveries", err)
	}
	if last != "" {
		s.webhookRR.Lock()
		s.webhookRR.last = last
		s.webhookRR.Unlock()
	}
	return out, nil
}

// webhookScanPerAccount is how many of an account's due deliveries one claim looks at.
const webhookScanPerAccount = 64

// RecordWebhookAttempt records how a claimed attempt ended; see store.Store.RecordWebhookAttempt.
func (s *Store) RecordWebhookAttempt(deliveryID string, a store.WebhookAttempt) (store.WebhookDelivery, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var d store.WebhookDelivery
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if d, err = scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1 FOR UPDATE`, deliveryID)); err != nil {
			return err
		}
		if d.State != store.DeliveryPending || !d.Claimed || d.Attempts != a.Attempts {
			return fmt.Errorf("%w: delivery %s is %s at attempt %d, not holding attempt %d", store.ErrInvalidState, d.ID, d.State, d.Attempts, a.Attempts)
		}
		at := a.At.UTC()
		state, next := store.DeliveryPending, d.NextAttemptAt
		var deliveredAt *time.Time
		switch {
		case a.Err == "":
			state, deliveredAt = store.DeliveryDelivered, &at
		case a.RetryAt.IsZero():
			state = store.DeliveryFailed
		default:
			next = a.RetryAt.UTC()
			if pause := a.PauseDestinationUntil.UTC(); pause.After(next) {
				next = pause
			}
		}
		if err := recordDestination(ctx, tx, d.Destination, a); err != nil {
			return err
		}
		if d, err = scanDelivery(tx.QueryRow(ctx, `UPDATE webhook_deliveries SET state = $2, claimed = false, next_attempt_at = $3,
				last_attempt_at = $4, last_status_code = $5, last_error = $6, delivered_at = $7
			WHERE id = $1 RETURNING `+deliveryCols, d.ID, state, next, at, a.StatusCode, a.Err, deliveredAt)); err != nil {
			return err
		}
		if d.EndpointID == "" {
			return nil
		}
		var failingSince, disabledAt *time.Time
		err = tx.QueryRow(ctx, `SELECT failing_since, disabled_at FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, d.EndpointID).Scan(&failingSince, &disabledAt)
		if isNoRows(err) {
			return nil
		} else if err != nil {
			return err
		}
		failingSince, disabledAt = store.WebhookEndpointHealth(failingSince, disabledAt, a, at)
		_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = $2, disabled_at = $3 WHERE id = $1`, d.EndpointID, failingSince, disabledAt)
		return err
	})
	if err != nil {
		return store.WebhookDelivery{}, wrap("record webhook attempt", err)
	}
	return d, nil
}

// recordDestination keeps a destination's failing record after an attempt: a delivered one
// deletes it; one that found the destination down counts a failure, pauses it and reschedules
// its waiting deliveries to the pause's end (failing those older than a.GiveUpAfter).
func recordDestination(ctx context.Context, tx pgx.Tx, dest string, a store.WebhookAttempt) error {
	switch {
	case a.Err == "":
		_, err := tx.Exec(ctx, `DELETE FROM webhook_destinations WHERE destination = $1`, dest)
		return err
	case a.PauseDestinationUntil.IsZero():
		return nil
	}
	pause := a.PauseDestinationUntil.UTC()
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_destinations (destination, failures, paused_until) VALUES ($1, 1, $2)
		ON CONFLICT (destination) DO UPDATE SET failures = webhook_destinations.failures + 1,
			paused_until = greatest(webhook_destinations.paused_until, excluded.paused_until)`, dest, pause); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $2,
			state = CASE WHEN $3::float8 > 0 AND created_at + $3::float8 * interval '1 microsecond' <= now() THEN 'failed' ELSE 'pending' END,
			last_error = CASE WHEN $3::float8 > 0 AND created_at + $3::float8 * interval '1 microsecond' <= now() THEN $4 ELSE last_error END
		WHERE destination = $1 AND state = 'pending' AND NOT claimed AND next_attempt_at < $2`, dest, pause, micros(a.GiveUpAfter), store.WebhookGaveUpPaused)
	return err
}

// WebhookDeliveries lists the account's deliveries, newest first.
func (s *Store) WebhookDeliveries(accountID string, q store.WebhookDeliveryQuery) ([]store.WebhookDelivery, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	ctx, cancel := s.ctx()
	defer cancel()
	out := []store.WebhookDelivery{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE account_id = $1 AND ($2 = '' OR state = $2)
			ORDER BY created_at DESC, id DESC LIMIT $3`, accountID, q.State, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap("webhook deliveries", err)
	}
	return out, nil
}

// WebhookCounts counts deliveries by state and the disabled endpoints.
func (s *Store) WebhookCounts() (store.WebhookCounts, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var c store.WebhookCounts
	err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'),
			(SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'),
			(SELECT count(*) FROM webhook_deliveries WHERE state = 'failed'),
			(SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL)`).Scan(&c.Pending, &c.Delivered, &c.Failed, &c.DisabledEndpoints)
	if err != nil {
		return store.WebhookCounts{}, wrap("webhook counts", err)
	}
	return c, nil
}

// PurgeWebhookDeliveries deletes delivered and failed deliveries created before cutoff.
func (s *Store) PurgeWebhookDeliveries(cutoff time.Time) (int, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1`, cutoff)
	if err != nil {
		return 0, wrap("purge webhook deliveries", err)
	}
	return int(tag.RowsAffected()), nil
}
