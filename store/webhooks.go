package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Webhook delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its first or next attempt
	DeliveryDelivered = "delivered" // a destination answered 2xx
	DeliveryFailed    = "failed"    // given up: retried for the whole retry period, or the endpoint was removed or disabled
)

// DestinationJob is the destination part of the delivery of a job's own webhook_url (an
// account endpoint's is its id).
const DestinationJob = "job"

// WebhookEndpoint is an account's registered webhook destination. Secret signs its deliveries;
// the admin API shows it once, at creation, and later only its prefix.
type WebhookEndpoint struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
	// FailingSince is the first failed attempt since the last delivered one, or nil.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// DisabledAt is when the endpoint was disabled for failing continuously (WebhookAttempt.DisableAfter).
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
	// PreviousSecret is the secret a rotation replaced, still signing beside Secret until
	// PreviousExpiresAt; empty when there is none.
	PreviousSecret    string     `json:"previous_secret,omitempty"`
	PreviousExpiresAt *time.Time `json:"previous_expires_at,omitempty"`
}

// PreviousValid reports whether the endpoint's previous secret still signs deliveries at now.
func (ep WebhookEndpoint) PreviousValid(now time.Time) bool {
	return ep.PreviousSecret != "" && ep.PreviousExpiresAt != nil && now.Before(*ep.PreviousExpiresAt)
}

// WebhookSigningSecret is the account's secret that signs the deliveries to the webhook_url a
// job names at create (account endpoints have their own).
type WebhookSigningSecret struct {
	AccountID string    `json:"account_id"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
	// PreviousSecret is the secret Secret replaced, still signing deliveries beside it until
	// PreviousExpiresAt (the rotation's overlap); empty when there is none.
	PreviousSecret    string     `json:"previous_secret,omitempty"`
	PreviousExpiresAt *time.Time `json:"previous_expires_at,omitempty"`
}

// PreviousValid reports whether the previous secret still signs deliveries at now.
func (r WebhookSigningSecret) PreviousValid(now time.Time) bool {
	return r.PreviousSecret != "" && r.PreviousExpiresAt != nil && now.Before(*r.PreviousExpiresAt)
}

// MaxWebhookEndpoints is the most endpoints one account may have: each is a request per event.
const MaxWebhookEndpoints = 16

// ErrTooManyWebhookEndpoints is CreateWebhookEndpoint's answer for an account that has
// MaxWebhookEndpoints already; it wraps ErrInvalidArgument.
var ErrTooManyWebhookEndpoints = fmt.Errorf("%w: the account has %d webhook endpoints, the most it may have; remove one first",
	ErrInvalidArgument, MaxWebhookEndpoints)

// WebhookDelivery is one event to one destination, recorded in the transaction of the job's
// state change.
type WebhookDelivery struct {
	// ID is EventID, a dot and the destination (an endpoint id, or DestinationJob).
	ID        string `json:"id"`
	EventID   string `json:"event_id"` // evt_<job id>_<status>: stable, the receiver's de-duplication key
	EventType string `json:"event_type"`
	AccountID string `json:"account_id"`
	JobID     string `json:"job_id"`
	// EndpointID is the account endpoint's id; empty for the job's own webhook_url.
	EndpointID string `json:"endpoint_id,omitempty"`
	URL        string `json:"url"`
	// Destination is WebhookDestination(URL): what the per-destination cap and pauses count by.
	Destination string `json:"destination,omitempty"`
	// Job is the job as stored right after the state change (Job's JSON); the dispatcher
	// renders it as the API shows jobs.
	Job            json.RawMessage `json:"job"`
	CreatedAt      time.Time       `json:"created_at"`
	State          string          `json:"state"`
	Attempts       int             `json:"attempts"`
	NextAttemptAt  time.Time       `json:"next_attempt_at"`
	LastAttemptAt  *time.Time      `json:"last_attempt_at,omitempty"`
	LastStatusCode int             `json:"last_status_code,omitempty"`
	LastError      string          `json:"last_error,omitempty"`
	DeliveredAt    *time.Time      `json:"delivered_at,omitempty"`
	// Claimed is set while a dispatcher holds the attempt (NextAttemptAt is then the claim's end).
	Claimed bool `json:"claimed,omitempty"`
	// Secret is filled by ClaimWebhookDeliveries: the secret that signs this attempt.
	Secret string `json:"-"`
	// PreviousSecret and PreviousSecretUntil are filled by ClaimWebhookDeliveries while the
	// secret that signs the delivery rotates (the endpoint's, or for a job's own webhook_url
	// the account's): the replaced secret signs the attempt too (a second v1= value) when it is
	// sent before PreviousSecretUntil.
	PreviousSecret      string    `json:"-"`
	PreviousSecretUntil time.Time `json:"-"`
	// DestinationFailures is filled by ClaimWebhookDeliveries: the attempts in a row that
	// found the destination down (the dispatcher's next pause grows with it).
	DestinationFailures int `json:"-"`
}

// WebhookAttempt is how one claimed attempt ended, as the dispatcher reports it.
type WebhookAttempt struct {
	Attempts   int       // the delivery's Attempts as claimed: a stale report is ErrInvalidState
	At         time.Time // when the attempt ended
	StatusCode int       // the response's status, 0 without one
	Err        string    // empty when the destination answered 2xx
	// RetryAt is the next attempt; zero with Err set gives up (the delivery fails).
	RetryAt time.Time
	// DisableAfter disables the endpoint once it has failed continuously this long (0: never).
	DisableAfter time.Duration
	// PauseDestinationUntil, when set, says the destination itself was down (no answer, or
	// too busy): no attempt goes to it until then, its due deliveries are rescheduled to then,
	// and its count of failures in a row grows. A delivered attempt ends any pause.
	PauseDestinationUntil time.Time
	// GiveUpAfter, with PauseDestinationUntil, fails the destination's waiting deliveries
	// created this long ago or longer instead of rescheduling them (WebhookClaim.GiveUpAfter;
	// the embedded store does it at its next claim).
	GiveUpAfter time.Duration
}

// WebhookCounts are the figures /metrics shows.
type WebhookCounts struct {
	Pending, Delivered, Failed int
	DisabledEndpoints          int
}

// WebhookDeliveryQuery selects an account's deliveries, newest first.
type WebhookDeliveryQuery struct {
	State string // empty: every state
	Limit int    // default 50
}

// WebhookEventID is the stable id of a job's event: evt_<job id>_<status>.
func WebhookEventID(jobID, status string) string { return "evt_" + jobID + "_" + status }

// WebhookEventType is the event type of a final status: job.succeeded, job.failed, job.cancelled.
func WebhookEventType(status string) string { return "job." + status }

// NewWebhookEndpointID returns a new endpoint id, "whk_" and 16 base62 characters.
func NewWebhookEndpointID() string { return "whk_" + randomBase62(16) }

// SecretPrefix is what the API shows of a secret after creating it.
func SecretPrefix(secret string) string {
	const n = 12
	if len(secret) <= n {
		return secret
	}
	return secret[:n]
}

var (
	bucketWebhookEndpoints  = []byte("webhook_endpoints")  // account id 0x00 endpoint id -> WebhookEndpoint JSON
	bucketWebhookSecrets    = []byte("webhook_secrets")    // account id -> WebhookSigningSecret JSON
	bucketJobWebhooks       = []byte("job_webhooks")       // job id -> its webhook_url
	bucketWebhookDeliveries = []byte("webhook_deliveries") // delivery id -> WebhookDelivery JSON
	bucketWebhookLog        = []byte("webhook_log")        // createdAt(8) delivery id -> state byte, account id
	// bucketWebhookQueue holds the pending deliveries by account, then due time, so a claim
	// serves the accounts in turn: account id 0x00 nextAttempt(8) delivery id -> destination.
	bucketWebhookQueue = []byte("webhook_queue")
	// bucketWebhookClaimed holds the attempts in flight: delivery id -> account id 0x00 destination.
	bucketWebhookClaimed = []byte("webhook_claimed")
	// bucketWebhookDests holds each destination that is failing: destination -> webhookDestinationState JSON.
	bucketWebhookDests = []byte("webhook_destinations")
	// bucketWebhookDue is the due index of files from before the queue (nextAttempt(8)
	// delivery id -> nil); webhookBuckets moves it into bucketWebhookQueue.
	bucketWebhookDue = []byte("webhook_due")
)

var webhookBuckets = [][]byte{bucketWebhookEndpoints, bucketWebhookSecrets, bucketJobWebhooks,
	bucketWebhookDeliveries, bucketWebhookLog, bucketWebhookQueue, bucketWebhookClaimed, bucketWebhookDests}

// webhookWake is a store's channel that WebhookWake hands out, and the dispatcher's
// round-robin position.
type webhookWake struct {
	once sync.Once
	ch   chan struct{}

	// rrMu guards rrLast, the account whose delivery a claim took last; the next claim
	// starts after it.
	rrMu   sync.Mutex
	rrLast string
}

func (w *webhookWake) get() chan struct{} {
	w.once.Do(func() { w.ch = make(chan struct{}, 1) })
	return w.ch
}

// WebhookWake returns a channel that receives after a commit that recorded deliveries; the
// dispatcher waits on it besides its timer.
func (s *Store) WebhookWake() <-chan struct{} { return s.webhooks.get() }

func (s *Store) wakeWebhooks() {
	select {
	case s.webhooks.get() <- struct{}{}:
	default:
	}
}

func (s *Store) webhookBuckets(tx *bolt.Tx) error {
	for _, name := range webhookBuckets {
		if tx.Bucket(name) == nil {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
	}
	return moveWebhookDue(tx)
}

// moveWebhookDue moves a file's pending deliveries from the due index of before the queue
// into bucketWebhookQueue (and their claims into bucketWebhookClaimed), once.
func moveWebhookDue(tx *bolt.Tx) error {
	old := tx.Bucket(bucketWebhookDue)
	if old == nil {
		return nil
	}
	err := old.ForEach(func(k, _ []byte) error {
		var d WebhookDelivery
		if err := getJSON(tx.Bucket(bucketWebhookDeliveries), k[8:], &d); err == ErrNotFound {
			return nil
		} else if err != nil {
			return err
		}
		if d.State != DeliveryPending {
			return nil
		}
		d.Destination = WebhookDestination(d.URL)
		if err := putDelivery(tx, d); err != nil {
			return err
		}
		if d.Claimed {
			if err := putClaimed(tx, d); err != nil {
				return err
			}
		}
		return putQueued(tx, d)
	})
	if err != nil {
		return err
	}
	return tx.DeleteBucket(bucketWebhookDue)
}

// deliveryQueueKey is a pending delivery's key in bucketWebhookQueue.
func deliveryQueueKey(d WebhookDelivery) []byte {
	return append(append([]byte(d.AccountID), 0), timeKey(d.NextAttemptAt, d.ID)...)
}

func putQueued(tx *bolt.Tx, d WebhookDelivery) error {
	return tx.Bucket(bucketWebhookQueue).Put(deliveryQueueKey(d), []byte(d.Destination))
}

func deleteQueued(tx *bolt.Tx, d WebhookDelivery) error {
	return tx.Bucket(bucketWebhookQueue).Delete(deliveryQueueKey(d))
}

func putClaimed(tx *bolt.Tx, d WebhookDelivery) error {
	return tx.Bucket(bucketWebhookClaimed).Put([]byte(d.ID), append(append([]byte(d.AccountID), 0), d.Destination...))
}

// destinationState is the destination's failing record; the zero value when it is not failing.
func destinationState(tx *bolt.Tx, dest string) (webhookDestinationState, error) {
	var st webhookDestinationState
	b := tx.Bucket(bucketWebhookDests)
	if b == nil {
		return st, nil
	}
	if err := getJSON(b, []byte(dest), &st); err != nil && err != ErrNotFound {
		return st, err
	}
	return st, nil
}

// webhookUpdate is update with the webhook buckets present (a file from before them has none).
func (s *Store) webhookUpdate(fn func(tx *bolt.Tx) error) error {
	return s.update(func(tx *bolt.Tx) error {
		if err := s.webhookBuckets(tx); err != nil {
			return err
		}
		return fn(tx)
	})
}

// webhookView runs fn in a read transaction; fn is not called when the webhook buckets do
// not exist yet (nothing was ever registered or recorded).
func (s *Store) webhookView(fn func(tx *bolt.Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketWebhookLog) == nil {
			return nil
		}
		return fn(tx)
	})
}

// CreateWebhookEndpoint registers url for the account's job events, signed with secret. The
// caller checked the URL (webhook.Guard) and made the secret (webhook.NewSecret).
func (s *Store) CreateWebhookEndpoint(accountID, url, secret string) (WebhookEndpoint, error) {
	if url == "" || secret == "" {
		return WebhookEndpoint{}, fmt.Errorf("%w: webhook endpoint needs a URL and a secret", ErrInvalidArgument)
	}
	ep := WebhookEndpoint{ID: NewWebhookEndpointID(), AccountID: accountID, URL: url, Secret: secret,
		CreatedAt: s.opts.Now().UTC()}
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		if _, err := findAccount(tx, accountID); err != nil {
			return err
		}
		prefix := endpointKey(accountID, "")
		n := 0
		c := tx.Bucket(bucketWebhookEndpoints).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		if n >= MaxWebhookEndpoints {
			return ErrTooManyWebhookEndpoints
		}
		return putJSON(tx.Bucket(bucketWebhookEndpoints), endpointKey(accountID, ep.ID), ep)
	})
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return ep, nil
}

// WebhookEndpoints lists the account's endpoints, oldest first. An unknown account is ErrNotFound.
func (s *Store) WebhookEndpoints(accountID string) ([]WebhookEndpoint, error) {
	out := []WebhookEndpoint{}
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := findAccount(tx, accountID); err != nil {
			return err
		}
		var err error
		out, err = accountEndpoints(tx, accountID)
		return err
	})
	return out, err
}

func accountEndpoints(tx *bolt.Tx, accountID string) ([]WebhookEndpoint, error) {
	out := []WebhookEndpoint{}
	b := tx.Bucket(bucketWebhookEndpoints)
	if b == nil {
		return out, nil
	}
	prefix := endpointKey(accountID, "")
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var ep WebhookEndpoint
		if err := json.Unmarshal(v, &ep); err != nil {
			return nil, fmt.Errorf("webhook endpoint %s: %w", k, err)
		}
		out = append(out, ep)
	}
	sortEndpoints(out)
	return out, nil
}

// endpointKey is an endpoint's key: its account's id, 0x00, its id; an account's endpoints
// are adjacent, so a job's state change reads only its own account's.
func endpointKey(accountID, endpointID string) []byte {
	return append(append([]byte(accountID), 0), endpointID...)
}

func sortEndpoints(eps []WebhookEndpoint) {
	for i := 1; i < len(eps); i++ {
		for j := i; j > 0 && (eps[j].CreatedAt.Before(eps[j-1].CreatedAt) ||
			eps[j].CreatedAt.Equal(eps[j-1].CreatedAt) && eps[j].ID < eps[j-1].ID); j-- {
			eps[j], eps[j-1] = eps[j-1], eps[j]
		}
	}
}

// DeleteWebhookEndpoint removes one of the account's endpoints; its pending deliveries fail
// at their next attempt. Another account's endpoint is ErrNotFound.
func (s *Store) DeleteWebhookEndpoint(accountID, endpointID string) error {
	return s.webhookUpdate(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhookEndpoints)
		if b.Get(endpointKey(accountID, endpointID)) == nil {
			return ErrNotFound
		}
		return b.Delete(endpointKey(accountID, endpointID))
	})
}

// EnableWebhookEndpoint re-enables a disabled endpoint of the account and forgets its failures.
func (s *Store) EnableWebhookEndpoint(accountID, endpointID string) (WebhookEndpoint, error) {
	var ep WebhookEndpoint
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhookEndpoints)
		if err := getJSON(b, endpointKey(accountID, endpointID), &ep); err != nil {
			return err
		}
		ep.DisabledAt, ep.FailingSince = nil, nil
		return putJSON(b, endpointKey(accountID, ep.ID), ep)
	})
	return ep, err
}

// RotateWebhookEndpointSecret makes secret the signing secret of one of the account's
// endpoints; the one it replaces keeps signing beside it for overlap (<= 0: not at all), and
// one replaced during an earlier overlap ends then. Another account's endpoint is ErrNotFound.
func (s *Store) RotateWebhookEndpointSecret(accountID, endpointID, secret string, overlap time.Duration) (WebhookEndpoint, error) {
	if secret == "" {
		return WebhookEndpoint{}, fmt.Errorf("%w: empty endpoint secret", ErrInvalidArgument)
	}
	now := s.opts.Now().UTC()
	var ep WebhookEndpoint
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhookEndpoints)
		if err := getJSON(b, endpointKey(accountID, endpointID), &ep); err != nil {
			return err
		}
		ep.PreviousSecret, ep.PreviousExpiresAt = "", nil
		if overlap > 0 {
			until := now.Add(overlap)
			ep.PreviousSecret, ep.PreviousExpiresAt = ep.Secret, &until
		}
		ep.Secret = secret
		return putJSON(b, endpointKey(accountID, ep.ID), ep)
	})
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return ep, nil
}

// SetWebhookSigningSecret makes secret the account's signing secret for jobs' own webhook_url.
// The one it replaces keeps signing beside it for overlap (PreviousSecret, PreviousExpiresAt);
// overlap <= 0 ends it at once. A secret replaced during an earlier overlap ends then.
func (s *Store) SetWebhookSigningSecret(accountID, secret string, overlap time.Duration) (WebhookSigningSecret, error) {
	if secret == "" {
		return WebhookSigningSecret{}, fmt.Errorf("%w: empty signing secret", ErrInvalidArgument)
	}
	rec := WebhookSigningSecret{AccountID: accountID, Secret: secret, CreatedAt: s.opts.Now().UTC()}
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		if _, err := findAccount(tx, accountID); err != nil {
			return err
		}
		rec.PreviousSecret, rec.PreviousExpiresAt = "", nil
		var old WebhookSigningSecret
		switch err := getJSON(tx.Bucket(bucketWebhookSecrets), []byte(accountID), &old); {
		case err == ErrNotFound:
		case err != nil:
			return err
		case overlap > 0:
			until := rec.CreatedAt.Add(overlap)
			rec.PreviousSecret, rec.PreviousExpiresAt = old.Secret, &until
		}
		return putJSON(tx.Bucket(bucketWebhookSecrets), []byte(accountID), rec)
	})
	if err != nil {
		return WebhookSigningSecret{}, err
	}
	return rec, nil
}

// WebhookSigningSecret returns the account's signing secret; ErrNotFound when it has none.
func (s *Store) WebhookSigningSecret(accountID string) (WebhookSigningSecret, error) {
	var rec WebhookSigningSecret
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWebhookSecrets)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, []byte(accountID), &rec)
	})
	return rec, err
}

// putJobWebhook remembers the webhook_url a new job names, in CreateJob's transaction. The
// account must have a signing secret.
func putJobWebhook(tx *bolt.Tx, job Job, url string) error {
	if url == "" {
		return nil
	}
	if b := tx.Bucket(bucketWebhookSecrets); b == nil || b.Get([]byte(job.AccountID)) == nil {
		return fmt.Errorf("%w: webhook_url needs the account's webhook signing secret: make it with POST /v1/webhook-secret (`convsvc webhooks rotate-secret`) or, as an operator, `convsvc admin webhooks secret %s`", ErrInvalidArgument, job.AccountID)
	}
	b, err := tx.CreateBucketIfNotExists(bucketJobWebhooks)
	if err != nil {
		return err
	}
	return b.Put([]byte(job.ID), []byte(url))
}

// deleteJobWebhook forgets a deleted job's webhook_url.
func deleteJobWebhook(tx *bolt.Tx, jobID string) error {
	if b := tx.Bucket(bucketJobWebhooks); b != nil {
		return b.Delete([]byte(jobID))
	}
	return nil
}

// JobWebhookURL is the webhook_url the job named at create, or "".
func (s *Store) JobWebhookURL(jobID string) (string, error) {
	var url string
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketJobWebhooks); b != nil {
			url = string(b.Get([]byte(jobID)))
		}
		return nil
	})
	return url, err
}

// recordWebhookEvents writes one pending delivery of the job's event (it just reached status,
// a final state) per destination: each enabled endpoint of its account and its own
// webhook_url. It runs in the state change's transaction; a rerun of the transaction writes
// the same records under the same ids.
func (s *Store) recordWebhookEvents(tx *bolt.Tx, job Job, now time.Time) error {
	if tx.Bucket(bucketWebhookEndpoints) == nil {
		return nil // nothing was ever registered
	}
	eps, err := accountEndpoints(tx, job.AccountID)
	if err != nil {
		return err
	}
	var jobURL string
	if b := tx.Bucket(bucketJobWebhooks); b != nil {
		jobURL = string(b.Get([]byte(job.ID)))
	}
	type dest struct{ id, endpoint, url string }
	var dests []dest
	for _, ep := range eps {
		if ep.DisabledAt == nil {
			dests = append(dests, dest{ep.ID, ep.ID, ep.URL})
		}
	}
	if jobURL != "" {
		dests = append(dests, dest{DestinationJob, "", jobURL})
	}
	if len(dests) == 0 {
		return nil
	}
	snapshot, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode job %s for its webhook: %w", job.ID, err)
	}
	eventID := WebhookEventID(job.ID, job.Status)
	if err := s.webhookBuckets(tx); err != nil {
		return err
	}
	deliveries := tx.Bucket(bucketWebhookDeliveries)
	for _, d := range dests {
		rec := WebhookDelivery{ID: eventID + "." + d.id, EventID: eventID, EventType: WebhookEventType(job.Status),
			AccountID: job.AccountID, JobID: job.ID, EndpointID: d.endpoint, URL: d.url, Destination: WebhookDestination(d.url),
			Job: snapshot, CreatedAt: now, State: DeliveryPending, NextAttemptAt: now}
		if deliveries.Get([]byte(rec.ID)) != nil {
			continue // recorded already: one delivery per event and destination
		}
		// A paused destination gets no attempt before its pause ends.
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
	}
	tx.OnCommit(s.wakeWebhooks)
	return nil
}

// putDelivery writes the delivery and its log entry (creation time, state, account).
func putDelivery(tx *bolt.Tx, d WebhookDelivery) error {
	if err := putJSON(tx.Bucket(bucketWebhookDeliveries), []byte(d.ID), d); err != nil {
		return err
	}
	return tx.Bucket(bucketWebhookLog).Put(timeKey(d.CreatedAt, d.ID), append([]byte{d.State[0]}, d.AccountID...))
}

// ClaimWebhookDeliveries takes due pending deliveries as c says (fairly across accounts and
// destinations: see WebhookClaim), counts each one's attempt and holds it for c.Hold (another
// claim skips it until then), and fills in each one's signing secret and its destination's
// failures. A delivery whose endpoint or signing secret is gone, or whose endpoint is disabled,
// fails instead of being returned; one whose destination is paused is rescheduled to the
// pause's end.
func (s *Store) ClaimWebhookDeliveries(c WebhookClaim) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	if c.Limit <= 0 {
		return nil, nil
	}
	now := s.opts.Now().UTC()
	// Most polls find nothing due: look first in a read transaction, which writes nothing.
	due := false
	if err := s.webhookView(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketWebhookDue) != nil || tx.Bucket(bucketWebhookQueue) == nil {
			due = true // a file from before the queue: the update moves it
			return nil
		}
		due = len(dueCandidates(tx, now, 1)) > 0
		return nil
	}); err != nil || !due {
		return nil, err
	}
	var last string
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		out = out[:0]
		cands := dueCandidates(tx, now, webhookScanPerAccount)
		states := map[string]webhookDestinationState{}
		for i, cand := range cands {
			st, ok := states[cand.Destination]
			if !ok {
				var err error
				if st, err = destinationState(tx, cand.Destination); err != nil {
					return err
				}
				states[cand.Destination] = st
			}
			if st.PausedUntil.After(now) {
				cands[i].PausedUntil = st.PausedUntil
			}
		}
		inflight := WebhookInflight{Accounts: map[string]int{}, Destinations: map[string]int{}}
		if err := tx.Bucket(bucketWebhookClaimed).ForEach(func(k, v []byte) error {
			acct, dest, _ := bytes.Cut(v, []byte{0})
			inflight.Accounts[string(acct)]++
			inflight.Destinations[string(dest)]++
			return nil
		}); err != nil {
			return err
		}
		s.webhooks.rrMu.Lock()
		after := s.webhooks.rrLast
		s.webhooks.rrMu.Unlock()
		var pick, paused []WebhookCandidate
		pick, paused, last = PickWebhookDeliveries(cands, inflight, c, after)
		for _, cand := range paused {
			d, ok, err := queuedDelivery(tx, cand)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if d.Claimed { // a lapsed claim: it is not in flight any more
				d.Claimed = false
				if err := tx.Bucket(bucketWebhookClaimed).Delete([]byte(d.ID)); err != nil {
					return err
				}
			}
			if c.GiveUpAfter > 0 && !now.Before(d.CreatedAt.Add(c.GiveUpAfter)) {
				d.State, d.LastError = DeliveryFailed, WebhookGaveUpPaused
				if err := putDelivery(tx, d); err != nil {
					return err
				}
				continue
			}
			d.NextAttemptAt = cand.PausedUntil
			if err := putDelivery(tx, d); err != nil {
				return err
			}
			if err := putQueued(tx, d); err != nil {
				return err
			}
		}
		for _, cand := range pick {
			d, ok, err := queuedDelivery(tx, cand)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			secret, why, err := deliverySecret(tx, &d)
			if err != nil {
				return err
			}
			if why != "" {
				d.State, d.LastError, d.Claimed = DeliveryFailed, why, false
				if err := tx.Bucket(bucketWebhookClaimed).Delete([]byte(d.ID)); err != nil {
					return err
				}
				if err := putDelivery(tx, d); err != nil {
					return err
				}
				continue
			}
			d.Attempts++
			d.Claimed = true
			d.NextAttemptAt = now.Add(c.Hold)
			if err := putDelivery(tx, d); err != nil {
				return err
			}
			if err := putQueued(tx, d); err != nil {
				return err
			}
			if err := putClaimed(tx, d); err != nil {
				return err
			}
			d.Secret = secret
			d.DestinationFailures = states[d.Destination].Failures
			out = append(out, d)
		}
		return nil
	})
	if err == nil && last != "" {
		s.webhooks.rrMu.Lock()
		s.webhooks.rrLast = last
		s.webhooks.rrMu.Unlock()
	}
	return out, err
}

// dueCandidates returns, for every account with a due delivery, up to perAccount of its due
// deliveries, oldest first. Accounts are found by seeking past each one's keys, so the cost
// is per account with due work and per delivery returned, not per delivery queued.
func dueCandidates(tx *bolt.Tx, now time.Time, perAccount int) []WebhookCandidate {
	var out []WebhookCandidate
	c := tx.Bucket(bucketWebhookQueue).Cursor()
	for k, v := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) < i+9 {
			k, v = c.Next()
			continue
		}
		acct := k[:i]
		prefix := k[:i+1]
		n := 0
		for ; k != nil && bytes.HasPrefix(k, prefix) && n < perAccount; k, v = c.Next() {
			at := int64(bytesToU64(k[i+1 : i+9]))
			if at > now.UnixNano() {
				break
			}
			out = append(out, WebhookCandidate{ID: string(k[i+9:]), AccountID: string(acct), Destination: string(v),
				Due: time.Unix(0, at).UTC()})
			n++
		}
		// On to the next account: past every key with this prefix.
		k, v = c.Seek(append(append([]byte(nil), acct...), 1))
	}
	return out
}

// queuedDelivery loads a candidate's delivery and takes its queue entry out; ok is false (and
// the entry gone) when the delivery is no longer a pending one.
func queuedDelivery(tx *bolt.Tx, cand WebhookCandidate) (WebhookDelivery, bool, error) {
	key := append(append([]byte(cand.AccountID), 0), timeKey(cand.Due, cand.ID)...)
	if err := tx.Bucket(bucketWebhookQueue).Delete(key); err != nil {
		return WebhookDelivery{}, false, err
	}
	var d WebhookDelivery
	if err := getJSON(tx.Bucket(bucketWebhookDeliveries), []byte(cand.ID), &d); err == ErrNotFound {
		return d, false, nil
	} else if err != nil {
		return d, false, err
	}
	if d.State != DeliveryPending {
		return d, false, nil
	}
	if d.Destination == "" {
		d.Destination = WebhookDestination(d.URL)
	}
	return d, true, nil
}

// deliverySecret finds the secret that signs d (and, for a job's own webhook_url while the
// account's signing secret rotates, fills in d's previous one), or why d cannot be sent.
func deliverySecret(tx *bolt.Tx, d *WebhookDelivery) (secret, why string, err error) {
	if d.EndpointID == "" {
		var rec WebhookSigningSecret
		switch err := getJSON(tx.Bucket(bucketWebhookSecrets), []byte(d.AccountID), &rec); {
		case err == ErrNotFound:
			return "", "the account's webhook signing secret is gone", nil
		case err != nil:
			return "", "", err
		}
		if rec.PreviousSecret != "" && rec.PreviousExpiresAt != nil {
			d.PreviousSecret, d.PreviousSecretUntil = rec.PreviousSecret, *rec.PreviousExpiresAt
		}
		return rec.Secret, "", nil
	}
	var ep WebhookEndpoint
	switch err := getJSON(tx.Bucket(bucketWebhookEndpoints), endpointKey(d.AccountID, d.EndpointID), &ep); {
	case err == ErrNotFound:
		return "", "the endpoint was removed", nil
	case err != nil:
		return "", "", err
	case ep.DisabledAt != nil:
		return "", "the endpoint is disabled", nil
	}
	if ep.PreviousSecret != "" && ep.PreviousExpiresAt != nil {
		d.PreviousSecret, d.PreviousSecretUntil = ep.PreviousSecret, *ep.PreviousExpiresAt
	}
	return ep.Secret, "", nil
}

// ResetWebhookClaims makes every claimed delivery due now: at start-up no attempt of this
// process is in flight (bbolt is one process's), so a claim left by a crash is released.
func (s *Store) ResetWebhookClaims() (int, error) {
	n := 0
	now := s.opts.Now().UTC()
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		n = 0
		claimedB := tx.Bucket(bucketWebhookClaimed)
		var ids []string
		if err := claimedB.ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			if err := claimedB.Delete([]byte(id)); err != nil {
				return err
			}
			var d WebhookDelivery
			if err := getJSON(tx.Bucket(bucketWebhookDeliveries), []byte(id), &d); err == ErrNotFound {
				continue
			} else if err != nil {
				return err
			}
			if d.State != DeliveryPending || !d.Claimed {
				continue
			}
			if err := deleteQueued(tx, d); err != nil {
				return err
			}
			d.Claimed, d.NextAttemptAt = false, now
			if err := putDelivery(tx, d); err != nil {
				return err
			}
			if err := putQueued(tx, d); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// RecordWebhookAttempt records how a claimed attempt ended: delivered, due again at
// a.RetryAt, or failed for good. An endpoint's first failure since its last success starts
// its failing period; a success ends it; failing a.DisableAfter long disables it. A report
// for an attempt no longer held (another attempt was claimed since) is ErrInvalidState.
func (s *Store) RecordWebhookAttempt(deliveryID string, a WebhookAttempt) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		if err := getJSON(tx.Bucket(bucketWebhookDeliveries), []byte(deliveryID), &d); err != nil {
			return err
		}
		if d.State != DeliveryPending || !d.Claimed || d.Attempts != a.Attempts {
			return fmt.Errorf("%w: delivery %s is %s at attempt %d, not holding attempt %d", ErrInvalidState, d.ID, d.State, d.Attempts, a.Attempts)
		}
		if d.Destination == "" {
			d.Destination = WebhookDestination(d.URL)
		}
		if err := deleteQueued(tx, d); err != nil {
			return err
		}
		if err := tx.Bucket(bucketWebhookClaimed).Delete([]byte(d.ID)); err != nil {
			return err
		}
		at := a.At.UTC()
		d.Claimed = false
		d.LastAttemptAt = &at
		d.LastStatusCode = a.StatusCode
		d.LastError = a.Err
		switch {
		case a.Err == "":
			d.State, d.DeliveredAt = DeliveryDelivered, &at
		case a.RetryAt.IsZero():
			d.State = DeliveryFailed
		default:
			d.NextAttemptAt = a.RetryAt.UTC()
			if pause := a.PauseDestinationUntil.UTC(); pause.After(d.NextAttemptAt) {
				d.NextAttemptAt = pause
			}
			if err := putQueued(tx, d); err != nil {
				return err
			}
		}
		if err := putDelivery(tx, d); err != nil {
			return err
		}
		if err := recordDestination(tx, d.Destination, a); err != nil {
			return err
		}
		if d.EndpointID == "" {
			return nil
		}
		b := tx.Bucket(bucketWebhookEndpoints)
		var ep WebhookEndpoint
		if err := getJSON(b, endpointKey(d.AccountID, d.EndpointID), &ep); err == ErrNotFound {
			return nil
		} else if err != nil {
			return err
		}
		failingSince, disabledAt := WebhookEndpointHealth(ep.FailingSince, ep.DisabledAt, a, at)
		ep.FailingSince, ep.DisabledAt = failingSince, disabledAt
		return putJSON(b, endpointKey(d.AccountID, ep.ID), ep)
	})
	return d, err
}

// recordDestination keeps a destination's failing record after an attempt: a delivered one
// forgets it, one that found the destination down counts a failure and pauses it.
func recordDestination(tx *bolt.Tx, dest string, a WebhookAttempt) error {
	b := tx.Bucket(bucketWebhookDests)
	switch {
	case a.Err == "":
		return b.Delete([]byte(dest))
	case a.PauseDestinationUntil.IsZero():
		return nil
	}
	st, err := destinationState(tx, dest)
	if err != nil {
		return err
	}
	st.Failures++
	if pause := a.PauseDestinationUntil.UTC(); pause.After(st.PausedUntil) {
		st.PausedUntil = pause
	}
	return putJSON(b, []byte(dest), st)
}

// WebhookEndpointHealth is an endpoint's failing period and disabling after an attempt that ended at.
func WebhookEndpointHealth(failingSince, disabledAt *time.Time, a WebhookAttempt, at time.Time) (*time.Time, *time.Time) {
	if a.Err == "" {
		return nil, disabledAt
	}
	if failingSince == nil {
		failingSince = &at
	}
	if disabledAt == nil && a.DisableAfter > 0 && at.Sub(*failingSince) >= a.DisableAfter {
		disabledAt = &at
	}
	return failingSince, disabledAt
}

// WebhookDeliveries lists the account's deliveries, newest first.
func (s *Store) WebhookDeliveries(accountID string, q WebhookDeliveryQuery) ([]WebhookDelivery, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	out := []WebhookDelivery{}
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := findAccount(tx, accountID); err != nil {
			return err
		}
		log := tx.Bucket(bucketWebhookLog)
		if log == nil {
			return nil
		}
		c := log.Cursor()
		for k, v := c.Last(); k != nil && len(out) < q.Limit; k, v = c.Prev() {
			if len(v) < 1 || string(v[1:]) != accountID || (q.State != "" && v[0] != q.State[0]) {
				continue
			}
			var d WebhookDelivery
			if err := getJSON(tx.Bucket(bucketWebhookDeliveries), k[8:], &d); err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// WebhookCounts counts deliveries by state and the disabled endpoints.
func (s *Store) WebhookCounts() (WebhookCounts, error) {
	var c WebhookCounts
	err := s.webhookView(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketWebhookLog).ForEach(func(_, v []byte) error {
			switch {
			case len(v) == 0:
			case v[0] == DeliveryPending[0]:
				c.Pending++
			case v[0] == DeliveryDelivered[0]:
				c.Delivered++
			case v[0] == DeliveryFailed[0]:
				c.Failed++
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketWebhookEndpoints).ForEach(func(_, v []byte) error {
			if bytes.Contains(v, []byte(`"disabled_at"`)) {
				c.DisabledEndpoints++
			}
			return nil
		})
	})
	return c, err
}

// PurgeWebhookDeliveries deletes delivered and failed deliveries created before cutoff.
func (s *Store) PurgeWebhookDeliveries(cutoff time.Time) (int, error) {
	n := 0
	err := s.webhookUpdate(func(tx *bolt.Tx) error {
		n = 0
		log := tx.Bucket(bucketWebhookLog)
		var done [][]byte
		c := log.Cursor()
		for k, v := c.First(); k != nil && int64(bytesToU64(k[:8])) < cutoff.UnixNano(); k, v = c.Next() {
			if len(v) > 0 && v[0] != DeliveryPending[0] {
				done = append(done, append([]byte(nil), k...))
			}
		}
		for _, k := range done {
			if err := tx.Bucket(bucketWebhookDeliveries).Delete(k[8:]); err != nil {
				return err
			}
			if err := log.Delete(k); err != nil {
				return err
			}
		}
		n = len(done)
		return nil
	})
	return n, err
}
