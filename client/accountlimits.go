package client

import (
	"context"
	"net/http"
	"net/url"
)

// Limit is a change of one of an account's queue limits: Unlimited lifts it, otherwise Value
// (at least 1) sets it. A nil *Limit leaves the limit as it is.
type Limit struct {
	Value     int64
	Unlimited bool
}

// AccountLimits changes an account's max_running and max_queued; a nil field is left as it is.
type AccountLimits struct {
	MaxRunning, MaxQueued *Limit
}

func (l *Limit) json() any {
	if l.Unlimited {
		return nil
	}
	return l.Value
}

// SetAccountLimits changes an account's queue limits (admin token required). A limit below 1
// is 400 invalid_request.
func (c *Client) SetAccountLimits(ctx context.Context, id string, l AccountLimits) (Account, error) {
	in := map[string]any{}
	if l.MaxRunning != nil {
		in["max_running"] = l.MaxRunning.json()
	}
	if l.MaxQueued != nil {
		in["max_queued"] = l.MaxQueued.json()
	}
	var out Account
	err := c.do(ctx, http.MethodPatch, "/v1/admin/accounts/"+url.PathEscape(id), nil, in, &out)
	return out, err
}
