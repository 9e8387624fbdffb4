package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Account is an account as the admin API shows it.
type Account struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	SpendCapCents int64  `json:"spend_cap_cents"`
	ReservedCents int64  `json:"reserved_cents"`
	SpentCents    int64  `json:"spent_cents"`
	MonthlySpend  []struct {
		Month      string `json:"month"`
		SpentCents int64  `json:"spent_cents"`
	} `json:"monthly_spend"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a key's record; Key holds the secret only in the response that created it.
type APIKey struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Key       string     `json:"key,omitempty"`
}

type list[T any] struct {
	Data []T `json:"data"`
}

// CreateAccount adds an account (admin token required).
func (c *Client) CreateAccount(ctx context.Context, name string, spendCapCents int64) (Account, error) {
	var out Account
	in := map[string]any{"name": name, "spend_cap_cents": spendCapCents}
	err := c.do(ctx, http.MethodPost, "/v1/admin/accounts", nil, in, &out)
	return out, err
}

// Accounts lists every account.
func (c *Client) Accounts(ctx context.Context) ([]Account, error) {
	var out list[Account]
	err := c.do(ctx, http.MethodGet, "/v1/admin/accounts", nil, nil, &out)
	return out.Data, err
}

// Account reads one account with its monthly spend.
func (c *Client) Account(ctx context.Context, id string) (Account, error) {
	var out Account
	err := c.do(ctx, http.MethodGet, "/v1/admin/accounts/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// UpdateAccount changes name and/or spend cap; nil leaves a field unchanged.
func (c *Client) UpdateAccount(ctx context.Context, id string, name *string, spendCapCents *int64) (Account, error) {
	in := map[string]any{}
	if name != nil {
		in["name"] = *name
	}
	if spendCapCents != nil {
		in["spend_cap_cents"] = *spendCapCents
	}
	var out Account
	err := c.do(ctx, http.MethodPatch, "/v1/admin/accounts/"+url.PathEscape(id), nil, in, &out)
	return out, err
}

// CreateKey issues a key for an account; the returned Key field is shown only this once.
func (c *Client) CreateKey(ctx context.Context, accountID string) (APIKey, error) {
	var out APIKey
	err := c.do(ctx, http.MethodPost, "/v1/admin/accounts/"+url.PathEscape(accountID)+"/keys", nil, nil, &out)
	return out, err
}

// Keys lists an account's keys (without secrets).
func (c *Client) Keys(ctx context.Context, accountID string) ([]APIKey, error) {
	var out list[APIKey]
	err := c.do(ctx, http.MethodGet, "/v1/admin/accounts/"+url.PathEscape(accountID)+"/keys", nil, nil, &out)
	return out.Data, err
}

// RevokeKey revokes a key at once.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (APIKey, error) {
	var out APIKey
	err := c.do(ctx, http.MethodDelete, "/v1/admin/keys/"+url.PathEscape(keyID), nil, nil, &out)
	return out, err
}
