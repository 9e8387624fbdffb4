package client

import (
	"context"
	"net/http"
	"net/url"
)

// The account's own webhooks, managed with its API key (Client.Key): the same endpoints and
// signing secret as the admin methods, for the key's account only (docs/webhooks.md).

// CreateOwnWebhook registers endpointURL for the key's account's job events; the returned
// Secret is shown only this once. A refused URL, or a 17th endpoint, is 400 invalid_request.
func (c *Client) CreateOwnWebhook(ctx context.Context, endpointURL string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodPost, "/v1/webhooks", nil, map[string]string{"url": endpointURL}, &out)
	return out, err
}

// OwnWebhooks lists the key's account's webhook endpoints, without secrets.
func (c *Client) OwnWebhooks(ctx context.Context) ([]WebhookEndpoint, error) {
	var out Page[WebhookEndpoint]
	err := c.do(ctx, http.MethodGet, "/v1/webhooks", nil, nil, &out)
	return out.Data, err
}

// DeleteOwnWebhook removes one of the key's account's endpoints; another account's is
// 404 not_found.
func (c *Client) DeleteOwnWebhook(ctx context.Context, endpointID string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(endpointID), nil, nil, &out)
	return out, err
}

// RotateOwnWebhook makes a new secret for one of the key's account's endpoints, shown only
// this once; the one it replaces keeps signing beside it for 24 hours (two v1= values).
func (c *Client) RotateOwnWebhook(ctx context.Context, endpointID string) (WebhookEndpoint, error) {
	var out WebhookEndpoint
	err := c.do(ctx, http.MethodPost, "/v1/webhooks/"+url.PathEscape(endpointID)+"/rotate-secret", nil, nil, &out)
	return out, err
}

// WebhookSecret says whether the key's account has a signing secret for its jobs'
// webhook_url, and shows its prefix (never the secret).
func (c *Client) WebhookSecret(ctx context.Context) (WebhookSecretState, error) {
	var out WebhookSecretState
	err := c.do(ctx, http.MethodGet, "/v1/webhook-secret", nil, nil, &out)
	return out, err
}

// RotateWebhookSecret makes the key's account's new signing secret, shown only this once; the
// one it replaces keeps signing deliveries beside it for 24 hours (two v1= values), so
// receivers can switch to the new one in that time.
func (c *Client) RotateWebhookSecret(ctx context.Context) (WebhookSigningSecret, error) {
	var out WebhookSigningSecret
	err := c.do(ctx, http.MethodPost, "/v1/webhook-secret", nil, nil, &out)
	return out, err
}
