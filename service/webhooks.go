package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// webhookStore is what the dispatcher needs of the job database; both backends have it. The
// delivery records themselves are written by the store, in the transaction of each job's
// state change.
type webhookStore interface {
	httpapi.WebhookStore
	ClaimWebhookDeliveries(c store.WebhookClaim) ([]store.WebhookDelivery, error)
	RecordWebhookAttempt(deliveryID string, a store.WebhookAttempt) (store.WebhookDelivery, error)
	WebhookCounts() (store.WebhookCounts, error)
	PurgeWebhookDeliveries(cutoff time.Time) (int, error)
	WebhookWake() <-chan struct{}
}

// claimResetter is a store whose claims can only be this process's (bbolt): at start-up
// every claim was left by a crash and is released at once.
type claimResetter interface {
	ResetWebhookClaims() (int, error)
}

var (
	_ webhookStore  = (*store.Store)(nil)
	_ webhookStore  = (*pgstore.Store)(nil)
	_ claimResetter = (*store.Store)(nil)
)

// Dispatcher tuning.
const (
	// webhookBatch is how many attempts may be in flight at once on one node (and the most one
	// claim takes). Waiting attempts cost a goroutine and a connection each; the caps below,
	// not this, keep one account or destination from taking them all.
	webhookBatch = 64
	// webhookPerDestination is the most attempts in flight to one destination (host and port)
	// across all nodes: a receiver that hangs holds this many, never the others' slots.
	webhookPerDestination = 2
	// webhookPerAccount is the most attempts of one account in flight across all nodes, so
	// an account with many slow destinations holds at most this many of the slots.
	webhookPerAccount = 8
	// webhookClaim is how long a claimed attempt is held: longer than the sender's timeout,
	// so no other node sends the same attempt while this one may still be sending it.
	webhookClaim = 2 * time.Minute
	// DefaultWebhookPoll is how often the dispatcher looks for retries that came due, besides
	// being woken by every newly recorded event.
	DefaultWebhookPoll = 5 * time.Second
	// WebhookKeep is how long delivered and failed deliveries stay listed.
	WebhookKeep = 7 * 24 * time.Hour
)

// dispatcher delivers the recorded webhook events: at least once, signed, retried with
// webhook.Backoff for webhook.RetryFor, disabling endpoints that fail webhook.DisableAfter.
type dispatcher struct {
	st     webhookStore
	sender *webhook.Sender
	render func(store.Job) ([]byte, error)
	// renderBatch renders batch.finished's data (the batch as the API shows it).
	renderBatch func(store.BatchSnapshot) ([]byte, error)
	log         *slog.Logger
	poll        time.Duration
	backoff     func(attempt int) time.Duration
	pause       func(failures int) time.Duration
	now         func() time.Time

	attempts *prometheus.CounterVec
}

func newDispatcher(st webhookStore, cfg Config, render func(store.Job) ([]byte, error), log *slog.Logger) *dispatcher {
	d := &dispatcher{
		st:      st,
		sender:  webhook.NewSender(webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}, cfg.WebhookTimeout),
		render:  render,
		log:     log,
		poll:    cfg.WebhookPoll,
		backoff: cfg.WebhookBackoff,
		pause:   cfg.WebhookPause,
		now:     time.Now,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "convsvc_webhook_attempts_total",
			Help: "Webhook delivery attempts this process made, by outcome: delivered (2xx), retry (failed, due again), failed (failed, given up).",
		}, []string{"outcome"}),
	}
	if d.poll <= 0 {
		d.poll = DefaultWebhookPoll
	}
	if d.backoff == nil {
		d.backoff = func(attempt int) time.Duration { return webhook.Backoff(attempt, nil) }
	}
	if d.pause == nil {
		d.pause = func(failures int) time.Duration { return webhook.DestinationPause(failures, nil) }
	}
	for _, o := range []string{"delivered", "retry", "failed"} {
		d.attempts.WithLabelValues(o)
	}
	return d
}

// run delivers until stop closes; an attempt cut short by stop is not recorded, and its
// delivery is sent again after a restart (bbolt) or when its claim lapses (PostgreSQL). Up to
// webhookBatch attempts are in flight at once, each on its own goroutine; the store's claim
// shares them fairly (webhookClaimRule): accounts in turn, at most webhookPerDestination to
// one destination and webhookPerAccount of one account in flight, and nothing to a
// destination paused for being down. So a receiver that hangs holds two slots for the
// sender's timeout, then is paused, and never delays another account's deliveries.
func (d *dispatcher) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	var inflight sync.WaitGroup
	defer func() {
		cancel()
		inflight.Wait()
	}()
	go func() {
		<-stop
		cancel()
	}()
	if r, ok := d.st.(claimResetter); ok {
		if n, err := r.ResetWebhookClaims(); err != nil {
			d.log.Error("webhooks: release claims left by a crash", "error", err)
		} else if n > 0 {
			d.log.Info("webhooks: released claims left by a crash", "deliveries", n)
		}
	}
	slots := make(chan struct{}, webhookBatch)
	freed := make(chan struct{}, 1)
	wake := d.st.WebhookWake()
	timer := time.NewTimer(0)
	defer timer.Stop()
	lastPurge := time.Time{}
	for {
		select {
		case <-stop:
			return
		case <-wake:
		case <-freed:
		case <-timer.C:
		}
		for ctx.Err() == nil {
			free := cap(slots) - len(slots)
			if free == 0 {
				break
			}
			batch, err := d.st.ClaimWebhookDeliveries(webhookClaimRule(free))
			if err != nil {
				d.log.Error("webhooks: claim deliveries", "error", err)
				break
			}
			for _, del := range batch {
				slots <- struct{}{}
				inflight.Add(1)
				go func() {
					defer func() {
						<-slots
						select {
						case freed <- struct{}{}:
						default:
						}
						inflight.Done()
					}()
					d.deliver(ctx, del)
				}()
			}
			if len(batch) < free {
				break
			}
		}
		if now := d.now(); now.Sub(lastPurge) > time.Hour {
			lastPurge = now
			if n, err := d.st.PurgeWebhookDeliveries(now.Add(-WebhookKeep)); err != nil {
				d.log.Error("webhooks: purge old deliveries", "error", err)
			} else if n > 0 {
				d.log.Info("webhooks: purged old deliveries", "deliveries", n)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d.poll)
	}
}

// webhookClaimRule is the claim of up to free deliveries, with the caps that share them.
func webhookClaimRule(free int) store.WebhookClaim {
	return store.WebhookClaim{Limit: free, Hold: webhookClaim, PerDestination: webhookPerDestination, PerAccount: webhookPerAccount,
		GiveUpAfter: webhook.RetryFor}
}

// eventBody is the signed body of a delivery: the event with the job as the API shows it.
func (d *dispatcher) eventBody(del store.WebhookDelivery) ([]byte, error) {
	if del.EventType == store.BatchFinishedEvent {
		return d.batchEventBody(del)
	}
	var job store.Job
	if err := json.Unmarshal(del.Job, &job); err != nil {
		return nil, fmt.Errorf("decode the job of %s: %w", del.ID, err)
	}
	view, err := d.render(job)
	if err != nil {
		return nil, fmt.Errorf("render the job of %s: %w", del.ID, err)
	}
	data := append(append([]byte(`{"job":`), view...), '}')
	return webhook.Event{ID: del.EventID, Type: del.EventType, CreatedAt: del.CreatedAt, Data: data}.Marshal()
}

func (d *dispatcher) deliver(ctx context.Context, del store.WebhookDelivery) {
	a := store.WebhookAttempt{Attempts: del.Attempts, DisableAfter: webhook.DisableAfter, GiveUpAfter: webhook.RetryFor}
	body, err := d.eventBody(del)
	if err != nil {
		a.Err = err.Error() // not the receiver's fault, and no retry mends it
	} else {
		now := d.now()
		res := d.sender.Send(ctx, del.URL, deliverySecrets(del, now), del.EventID, del.EventType, body, now)
		if ctx.Err() != nil {
			return // shutting down: the attempt is sent again later, not counted as the receiver's failure
		}
		a.StatusCode = res.StatusCode
		if res.Err != nil {
			a.Err = webhook.RedactURLs(res.Err.Error())
			now := d.now()
			if now.Sub(del.CreatedAt) < webhook.RetryFor {
				a.RetryAt = now.Add(d.backoff(del.Attempts))
			}
			if res.DestinationDown() {
				a.PauseDestinationUntil = now.Add(d.pause(del.DestinationFailures + 1))
			}
		}
	}
	a.At = d.now()
	outcome := "delivered"
	switch {
	case a.Err != "" && !a.RetryAt.IsZero():
		outcome = "retry"
	case a.Err != "":
		outcome = "failed"
	}
	d.attempts.WithLabelValues(outcome).Inc()
	if _, err := d.st.RecordWebhookAttempt(del.ID, a); err != nil {
		d.log.Error("webhooks: record attempt", "delivery", del.ID, "error", err)
		return
	}
	if a.Err != "" {
		d.log.Warn("webhook delivery failed", "delivery", del.ID, "url", webhook.RedactURL(del.URL), "attempt", del.Attempts,
			"status", a.StatusCode, "error", a.Err, "retry_at", a.RetryAt, "destination_paused_until", a.PauseDestinationUntil)
	}
}

// deliverySecrets are the secrets that sign an attempt sent at now: the delivery's, and the
// account's replaced signing secret while its rotation's overlap lasts (a second v1= value).
func deliverySecrets(del store.WebhookDelivery, now time.Time) []string {
	if del.PreviousSecret != "" && now.Before(del.PreviousSecretUntil) {
		return []string{del.Secret, del.PreviousSecret}
	}
	return []string{del.Secret}
}

// webhookCollector reads the delivery figures from the store at each scrape.
type webhookCollector struct {
	st                   webhookStore
	log                  *slog.Logger
	deliveries, disabled *prometheus.Desc
}

func newWebhookCollector(st webhookStore, log *slog.Logger) *webhookCollector {
	return &webhookCollector{
		st:  st,
		log: log,
		deliveries: prometheus.NewDesc("convsvc_webhook_deliveries",
			"Recorded webhook deliveries by state: pending (waiting for an attempt), delivered, failed (given up); finished ones are kept 7 days.",
			[]string{"state"}, nil),
		disabled: prometheus.NewDesc("convsvc_webhook_endpoints_disabled",
			"Webhook endpoints disabled for failing every delivery for 5 days.", nil, nil),
	}
}

func (c *webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.deliveries
	ch <- c.disabled
}

func (c *webhookCollector) Collect(ch chan<- prometheus.Metric) {
	n, err := c.st.WebhookCounts()
	if err != nil {
		c.log.Warn("metrics: webhook counts", "error", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.GaugeValue, float64(n.Pending), store.DeliveryPending)
	ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.GaugeValue, float64(n.Delivered), store.DeliveryDelivered)
	ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.GaugeValue, float64(n.Failed), store.DeliveryFailed)
	ch <- prometheus.MustNewConstMetric(c.disabled, prometheus.GaugeValue, float64(n.DisabledEndpoints))
}

// startWebhooks starts the dispatcher and registers its figures.
func (m *Main) startWebhooks() {
	st, ok := m.store.(webhookStore)
	if !ok {
		return
	}
	d := newDispatcher(st, m.cfg, m.api.JobJSON, m.log)
	d.renderBatch = m.api.BatchJSON
	m.metrics.reg.MustRegister(d.attempts, newWebhookCollector(st, m.log))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer d.sender.Close()
		d.run(m.stop)
	}()
}

// webhookAPIStore is the store as the admin API's webhook endpoints use it, or nil.
func webhookAPIStore(st JobStore) httpapi.WebhookStore {
	if ws, ok := st.(webhookStore); ok {
		return ws
	}
	return nil
}
