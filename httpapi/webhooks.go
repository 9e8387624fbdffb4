package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// WebhookStore is what the admin API's webhook endpoints need of the job database (both
// backends have it); nil in Config leaves them out.
type WebhookStore interface {
	CreateWebhookEndpoint(accountID, url, secret string) (store.WebhookEndpoint, error)
	WebhookEndpoints(accountID string) ([]store.WebhookEndpoint, error)
	DeleteWebhookEndpoint(accountID, endpointID string) error
	EnableWebhookEndpoint(accountID, endpointID string) (store.WebhookEndpoint, error)
	RotateWebhookEndpointSecret(accountID, endpointID, secret string, overlap time.Duration) (store.WebhookEndpoint, error)
	SetWebhookSigningSecret(accountID, secret string, overlap time.Duration) (store.WebhookSigningSecret, error)
	WebhookSigningSecret(accountID string) (store.WebhookSigningSecret, error)
	WebhookDeliveries(accountID string, q store.WebhookDeliveryQuery) ([]store.WebhookDelivery, error)
}

// maxWebhookURL bounds a webhook URL's length.
const maxWebhookURL = 2048

// webhookEndpointView is an endpoint as the admin API shows it; Secret only in the create response.
type webhookEndpointView struct {
	ID           string     `json:"id"`
	AccountID    string     `json:"account_id"`
	URL          string     `json:"url"`
	Secret       string     `json:"secret,omitempty"`
	SecretPrefix string     `json:"secret_prefix"`
	CreatedAt    time.Time  `json:"created_at"`
	FailingSince *time.Time `json:"failing_since"`
	DisabledAt   *time.Time `json:"disabled_at"`
	// PreviousSecretPrefix and PreviousExpiresAt show a rotation's replaced secret while it
	// still signs beside the new one.
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

func (s *Server) viewEndpoint(ep store.WebhookEndpoint) webhookEndpointView {
	v := webhookEndpointView{ID: ep.ID, AccountID: ep.AccountID, URL: ep.URL, SecretPrefix: store.SecretPrefix(ep.Secret),
		CreatedAt: ep.CreatedAt, FailingSince: ep.FailingSince, DisabledAt: ep.DisabledAt}
	if ep.PreviousValid(s.now()) {
		prev, until := store.SecretPrefix(ep.PreviousSecret), *ep.PreviousExpiresAt
		v.PreviousSecretPrefix, v.PreviousExpiresAt = &prev, &until
	}
	return v
}

// signingSecretView is the account's signing secret: Secret only in the answer that made it.
type signingSecretView struct {
	AccountID            string     `json:"account_id"`
	Set                  bool       `json:"set"`
	Secret               string     `json:"secret,omitempty"`
	SecretPrefix         *string    `json:"secret_prefix"`
	CreatedAt            *time.Time `json:"created_at"`
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

// viewSigningSecret shows rec at now: its previous secret only while its overlap lasts.
func viewSigningSecret(rec store.WebhookSigningSecret, now time.Time) signingSecretView {
	prefix, created := store.SecretPrefix(rec.Secret), rec.CreatedAt
	v := signingSecretView{AccountID: rec.AccountID, Set: true, SecretPrefix: &prefix, CreatedAt: &created}
	if rec.PreviousValid(now) {
		prev, until := store.SecretPrefix(rec.PreviousSecret), *rec.PreviousExpiresAt
		v.PreviousSecretPrefix, v.PreviousExpiresAt = &prev, &until
	}
	return v
}

// webhookDeliveryView is a delivery as the admin API shows it.
type webhookDeliveryView struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	JobID          string     `json:"job_id"`
	EndpointID     *string    `json:"endpoint_id"`
	URL            string     `json:"url"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	CreatedAt      time.Time  `json:"created_at"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	DeliveredAt    *time.Time `json:"delivered_at"`
}

func viewDelivery(d store.WebhookDelivery) webhookDeliveryView {
	v := webhookDeliveryView{ID: d.ID, EventID: d.EventID, EventType: d.EventType, JobID: d.JobID, EndpointID: optString(d.EndpointID),
		URL: webhook.RedactURL(d.URL), State: d.State, Attempts: d.Attempts, CreatedAt: d.CreatedAt, LastAttemptAt: d.LastAttemptAt,
		LastError: optString(d.LastError), DeliveredAt: d.DeliveredAt}
	if d.State == store.DeliveryPending {
		next := d.NextAttemptAt
		v.NextAttemptAt = &next
	}
	if d.LastStatusCode != 0 {
		code := d.LastStatusCode
		v.LastStatusCode = &code
	}
	return v
}

// JobJSON is the job as GET /v1/jobs/{id} shows it (the body of its webhook events).
func (s *Server) JobJSON(j store.Job) ([]byte, error) { return s.viewJob(j).encodeJSON() }

// checkWebhookURL validates a destination: an http(s) URL, not too long, whose host resolves
// to no loopback, private, link-local, metadata or own address (unless
// --webhook-allow-private). A refusal answers with one fixed message per class
// (webhook.Refusal): what the name resolved to, or which resolver failed, goes to the server's
// log only, never to the key that asked.
func (s *Server) checkWebhookURL(r *http.Request, field, url string) error {
	if url == "" {
		return errorf(CodeInvalidRequest, field+" is required: the https URL that receives the events")
	}
	if len(url) > maxWebhookURL {
		return errorf(CodeInvalidRequest, field+" is longer than "+strconv.Itoa(maxWebhookURL)+" characters")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := s.cfg.WebhookGuard.CheckURL(ctx, url); err != nil {
		s.log.InfoContext(r.Context(), "webhook destination refused", "request_id", requestID(r), "field", field,
			"url", webhook.RedactURL(url), "error", webhook.RedactURLs(err.Error()))
		msg := field + ": " + webhook.Refusal(err)
		if errors.Is(err, webhook.ErrNotPublic) {
			msg += " (an operator can allow private destinations with serve --webhook-allow-private)"
		}
		return &Error{Code: CodeInvalidRequest, Message: msg, Err: errors.New(webhook.RedactURLs(err.Error()))}
	}
	return nil
}

func (s *Server) webhooksEnabled(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Webhooks == nil {
		s.writeError(w, r, errorf(CodeNotFound, "webhooks are not available on this store"))
		return false
	}
	return true
}

type webhookEndpointRequest struct {
	URL *string `json:"url"`
}

func (s *Server) handleCreateWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.createWebhook(w, r, ps.ByName("id"))
}

// createWebhook registers an endpoint for accountID (the admin's path parameter, or the key's
// own account): the URL guard, the endpoint cap and the once-shown secret are the same for both.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, accountID string) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	var req webhookEndpointRequest
	body, err := readJSONBody(w, r)
	if err == nil {
		err = decodeStrict(body, &req)
	}
	if err == nil && req.URL == nil {
		err = errorf(CodeInvalidRequest, "url is required: the https URL that receives the events")
	}
	if err == nil {
		err = s.checkWebhookURL(r, "url", *req.URL)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ep, err := s.cfg.Webhooks.CreateWebhookEndpoint(accountID, *req.URL, secret)
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	v := s.viewEndpoint(ep)
	v.Secret = ep.Secret
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleListWebhooks(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.listWebhooks(w, r, ps.ByName("id"))
}

// listWebhooks lists accountID's endpoints, without secrets.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, accountID string) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	eps, err := s.cfg.Webhooks.WebhookEndpoints(accountID)
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	out := listView[webhookEndpointView]{Data: []webhookEndpointView{}}
	for _, ep := range eps {
		out.Data = append(out.Data, s.viewEndpoint(ep))
	}
	writeJSON(w, http.StatusOK, out)
}

// findWebhook returns one of the account's endpoints.
func (s *Server) findWebhook(accountID, endpointID string) (store.WebhookEndpoint, error) {
	eps, err := s.cfg.Webhooks.WebhookEndpoints(accountID)
	if err != nil {
		return store.WebhookEndpoint{}, notFound(err, "no such account")
	}
	for _, ep := range eps {
		if ep.ID == endpointID {
			return ep, nil
		}
	}
	return store.WebhookEndpoint{}, &Error{Code: CodeNotFound, Message: "no such webhook endpoint on this account", Err: store.ErrNotFound}
}

func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.deleteWebhook(w, r, ps.ByName("id"), ps.ByName("webhook"))
}

// deleteWebhook removes accountID's endpoint; another account's is 404 not_found.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, accountID, endpointID string) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	ep, err := s.findWebhook(accountID, endpointID)
	if err == nil {
		err = s.cfg.Webhooks.DeleteWebhookEndpoint(ep.AccountID, ep.ID)
	}
	if err != nil {
		s.writeError(w, r, notFound(err, "no such webhook endpoint on this account"))
		return
	}
	writeJSON(w, http.StatusOK, s.viewEndpoint(ep))
}

func (s *Server) handleEnableWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	ep, err := s.cfg.Webhooks.EnableWebhookEndpoint(ps.ByName("id"), ps.ByName("webhook"))
	if err != nil {
		s.writeError(w, r, notFound(err, "no such webhook endpoint on this account"))
		return
	}
	writeJSON(w, http.StatusOK, s.viewEndpoint(ep))
}

func (s *Server) handleRotateWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.rotateWebhook(w, r, ps.ByName("id"), ps.ByName("webhook"))
}

// rotateWebhook makes a new secret for accountID's endpoint and shows it once; the one it
// replaces keeps signing beside it for the overlap. Another account's endpoint is 404.
func (s *Server) rotateWebhook(w http.ResponseWriter, r *http.Request, accountID, endpointID string) {
	secret, ok := s.rotationSecret(w, r)
	if !ok {
		return
	}
	ep, err := s.cfg.Webhooks.RotateWebhookEndpointSecret(accountID, endpointID, secret, s.secretOverlap())
	if err != nil {
		s.writeError(w, r, notFound(err, "no such webhook endpoint on this account"))
		return
	}
	v := s.viewEndpoint(ep)
	v.Secret = ep.Secret
	writeJSON(w, http.StatusOK, v)
}

// rotationSecret makes the new secret of a rotation; false when it has answered instead (no
// webhooks on this store, or no randomness).
func (s *Server) rotationSecret(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !s.webhooksEnabled(w, r) {
		return "", false
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		s.writeError(w, r, err)
		return "", false
	}
	return secret, true
}

// secretOverlap is how long a replaced secret keeps signing after a rotation.
func (s *Server) secretOverlap() time.Duration {
	if s.cfg.WebhookSecretOverlap > 0 {
		return s.cfg.WebhookSecretOverlap
	}
	return webhook.SecretOverlap
}

func (s *Server) handleCreateSigningSecret(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.rotateSigningSecret(w, r, ps.ByName("id"))
}

// rotateSigningSecret makes accountID's new signing secret and shows it once; the one it
// replaces keeps signing beside it for Config.WebhookSecretOverlap.
func (s *Server) rotateSigningSecret(w http.ResponseWriter, r *http.Request, accountID string) {
	secret, ok := s.rotationSecret(w, r)
	if !ok {
		return
	}
	rec, err := s.cfg.Webhooks.SetWebhookSigningSecret(accountID, secret, s.secretOverlap())
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	// The store's clock made the record; its overlap has only just begun.
	v := viewSigningSecret(rec, rec.CreatedAt)
	v.Secret = rec.Secret
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleListDeliveries(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	q := store.WebhookDeliveryQuery{Limit: 50, State: r.URL.Query().Get("state")}
	switch q.State {
	case "", store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed:
	default:
		s.writeError(w, r, errorf(CodeInvalidRequest, "state must be pending, delivered or failed"))
		return
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			s.writeError(w, r, errorf(CodeInvalidRequest, "limit must be a whole number from 1 to 500"))
			return
		}
		q.Limit = n
	}
	ds, err := s.cfg.Webhooks.WebhookDeliveries(ps.ByName("id"), q)
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	out := listView[webhookDeliveryView]{Data: []webhookDeliveryView{}}
	for _, d := range ds {
		out.Data = append(out.Data, viewDelivery(d))
	}
	writeJSON(w, http.StatusOK, out)
}

// routeWebhooks registers the admin API's webhook endpoints.
func (s *Server) routeWebhooks(handle func(method, path string, h httprouter.Handle)) {
	handle("POST", "/v1/admin/accounts/:id/webhooks", s.withAdmin(s.handleCreateWebhook))
	handle("GET", "/v1/admin/accounts/:id/webhooks", s.withAdmin(s.handleListWebhooks))
	handle("DELETE", "/v1/admin/accounts/:id/webhooks/:webhook", s.withAdmin(s.handleDeleteWebhook))
	handle("POST", "/v1/admin/accounts/:id/webhooks/:webhook/enable", s.withAdmin(s.handleEnableWebhook))
	handle("POST", "/v1/admin/accounts/:id/webhooks/:webhook/rotate-secret", s.withAdmin(s.handleRotateWebhook))
	handle("POST", "/v1/admin/accounts/:id/webhook-secret", s.withAdmin(s.handleCreateSigningSecret))
	handle("GET", "/v1/admin/accounts/:id/webhook-deliveries", s.withAdmin(s.handleListDeliveries))
}

// createWebhookURL validates the webhook_url of a create body as the create's one decode
// read it; "" when absent.
func (s *Server) createWebhookURL(r *http.Request, url *string) (string, error) {
	if url == nil {
		return "", nil
	}
	if err := s.checkWebhookURL(r, "webhook_url", *url); err != nil {
		return "", err
	}
	return *url, nil
}
