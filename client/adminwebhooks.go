package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// WebhookEndpoint is an account's webhook endpoint (admin API). Secret is set only in the
// response that created it.
type WebhookEndpoint struct {
	ID           string     `json:"id"`
	AccountID    string     `json:"account_id"`
	URL          string     `json:"url"`
	Secret       string     `json:"secret,omitempty"`
	SecretPrefix string     `json:"secret_prefix"`
	CreatedAt    time.Time  `json:"created_at"`
	FailingSince *time.Time `json:"failing_since"`
	DisabledAt   *time.Time `json:"disabled_at"`
	// PreviousSecretPrefix and PreviousExpiresAt show the secret a rotation replaced while it
	// still signs deliveries beside Secret.
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

// WebhookSigningSecret is an account's new signing secret for its jobs' webhook_url, shown
// once. The secret it replaced, if any, keeps signing beside it until PreviousExpiresAt.
type WebhookSigningSecret struct {
	AccountID            string     `json:"account_id"`
	Set                  bool       `json:"set"`
	Secret               string     `json:"secret"`
	SecretPrefix         string     `json:"secret_prefix"`
	CreatedAt            time.Time  `json:"created_at"`
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

// WebhookSecretState says whether an account has a signing secret (its prefix, never the
// secret) and, while a rotation's overlap lasts, the replaced one's prefix and end.
type WebhookSecretState struct {
	AccountID            string     `json:"account_id"`
	Set                  bool       `json:"set"`
	SecretPrefix         *string    `json:"secret_prefix"`
	CreatedAt            *time.Time `json:"created_at"`
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

// WebhookDelivery is one event to one destination, with its state and last error.
type WebhookDelivery struct {
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

func webhooksPath(accountID string) string {
	return "/v1/admin/accounts/" + url.PathEscape(accountID)
}

// CreateWebhook registers url for the account's job events (admin token required); the
// returned Secret is shown only this once.
func (c *Client) CreateWebhook(ctx context.Context, accountID, endpointURL string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodPost, webhooksPath(accountID)+"/webhooks", nil, map[string]string{"url": endpointURL}, &out)
	return out, err
}

// Webhooks lists the account's webhook endpoints, without secrets.
func (c *Client) Webhooks(ctx context.Context, accountID string) ([]WebhookEndpoint, error) {
	var out Page[WebhookEndpoint]
	err := c.do(ctx, http.MethodGet, webhooksPath(accountID)+"/webhooks", nil, nil, &out)
	return out.Data, err
}

// DeleteWebhook removes one of the account's webhook endpoints.
func (c *Client) DeleteWebhook(ctx context.Context, accountID, endpointID string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodDelete, webhooksPath(accountID)+"/webhooks/"+url.PathEscape(endpointID), nil, nil, &out)
	return out, err
}

// EnableWebhook enables an endpoint that was disabled for failing.
func (c *Client) EnableWebhook(ctx context.Context, accountID, endpointID string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodPost, webhooksPath(accountID)+"/webhooks/"+url.PathEscape(endpointID)+"/enable", nil, nil, &out)
	return out, err
}

// RotateWebhook makes a new secret for one of the account's endpoints (admin token required),
// shown only this once; the one it replaces keeps signing beside it for 24 hours.
func (c *Client) RotateWebhook(ctx context.Context, accountID, endpointID string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodPost, webhooksPath(accountID)+"/webhooks/"+url.PathEscape(endpointID)+"/rotate-secret", nil, nil, &out)
	return out, err
}

// CreateWebhookSecret makes the account's signing secret for its jobs' webhook_url (admin
// token required); the one it replaces keeps signing beside it for 24 hours. The secret is
// shown only this once.
func (c *Client) CreateWebhookSecret(ctx context.Context, accountID string) (WebhookSigningSecret, error) {
	var out WebhookSigningSecret
	err := c.do(ctx, http.MethodPost, webhooksPath(accountID)+"/webhook-secret", nil, nil, &out)
	return out, err
}

// WebhookDeliveries lists the account's most recent deliveries, newest first; state ("" for
// all, pending, delivered, failed) and limit (0 for the server's 50) narrow it.
func (c *Client) WebhookDeliveries(ctx context.Context, accountID, state string, limit int) ([]WebhookDelivery, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := webhooksPath(accountID) + "/webhook-deliveries"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out Page[WebhookDelivery]
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out.Data, err
}
