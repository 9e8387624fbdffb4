package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
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
	// MaxRunning is the most jobs of the account running at once; nil is no limit.
	MaxRunning *int64 `json:"max_running"`
	// MaxQueued is the most jobs of the account queued at once (a start past it is 429
	// queue_full); nil is no limit.
	MaxQueued *int64 `json:"max_queued"`
}

// APIKey is a key's record; Key holds the secret only in the response that created it.
type APIKey struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	// PresetsOnly: the key may only create jobs from a preset.
	PresetsOnly bool   `json:"presets_only"`
	Key         string `json:"key,omitempty"`
}

// Page is one page of an admin list: the items, oldest first, and whether more follow (pass
// the last item's id as StartingAfter to get them).
type Page[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// PageOptions selects a page: Limit items (1 to 100; 0 for the server's 20) after the item
// with id StartingAfter ("" for the first page).
type PageOptions struct {
	Limit         int
	StartingAfter string
}

func (o PageOptions) query() string {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.StartingAfter != "" {
		q.Set("starting_after", o.StartingAfter)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// all follows the pages of a list from the first to the last.
func all[T any](ctx context.Context, get func(context.Context, PageOptions) (Page[T], error), id func(T) string) ([]T, error) {
	out := []T{}
	opts := PageOptions{Limit: 100}
	for {
		p, err := get(ctx, opts)
		if err != nil {
			return out, err
		}
		out = append(out, p.Data...)
		if !p.HasMore || len(p.Data) == 0 {
			return out, nil
		}
		opts.StartingAfter = id(p.Data[len(p.Data)-1])
	}
}

// CreateAccount adds an account (admin token required).
func (c *Client) CreateAccount(ctx context.Context, name string, spendCapCents int64) (Account, error) {
	var out Account
	in := map[string]any{"name": name, "spend_cap_cents": spendCapCents}
	err := c.do(ctx, http.MethodPost, "/v1/admin/accounts", nil, in, &out)
	return out, err
}

// Accounts lists every account, oldest first, following the pages.
func (c *Client) Accounts(ctx context.Context) ([]Account, error) {
	return all(ctx, c.AccountsPage, func(a Account) string { return a.ID })
}

// AccountsPage lists one page of the accounts, oldest first.
func (c *Client) AccountsPage(ctx context.Context, opts PageOptions) (Page[Account], error) {
	var out Page[Account]
	err := c.do(ctx, http.MethodGet, "/v1/admin/accounts"+opts.query(), nil, nil, &out)
	return out, err
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

// Keys lists all of an account's keys (without secrets), oldest first, following the pages.
func (c *Client) Keys(ctx context.Context, accountID string) ([]APIKey, error) {
	return all(ctx, func(ctx context.Context, o PageOptions) (Page[APIKey], error) {
		return c.KeysPage(ctx, accountID, o)
	}, func(k APIKey) string { return k.ID })
}

// KeysPage lists one page of an account's keys (without secrets), oldest first.
func (c *Client) KeysPage(ctx context.Context, accountID string, opts PageOptions) (Page[APIKey], error) {
	var out Page[APIKey]
	err := c.do(ctx, http.MethodGet, "/v1/admin/accounts/"+url.PathEscape(accountID)+"/keys"+opts.query(), nil, nil, &out)
	return out, err
}

// RevokeKey revokes a key at once.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (APIKey, error) {
	var out APIKey
	err := c.do(ctx, http.MethodDelete, "/v1/admin/keys/"+url.PathEscape(keyID), nil, nil, &out)
	return out, err
}
