package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Preset is a named job an operator defined: jobs created with its name (CreateJobRequest.
// Preset) take its target format and options.
type Preset struct {
	Name         string    `json:"name"`
	TargetFormat string    `json:"target_format"`
	Options      Options   `json:"options"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// PresetRequest defines a preset: the target format and the options its jobs run with.
type PresetRequest struct {
	TargetFormat string   `json:"target_format"`
	Options      *Options `json:"options,omitempty"`
}

// SetPreset defines the preset name or replaces its target and options (admin token
// required). The server checks the target and options against its formats.
func (c *Client) SetPreset(ctx context.Context, name string, p PresetRequest) (Preset, error) {
	var out Preset
	err := c.do(ctx, http.MethodPut, "/v1/admin/presets/"+url.PathEscape(name), nil, p, &out)
	return out, err
}

// Preset reads one preset.
func (c *Client) Preset(ctx context.Context, name string) (Preset, error) {
	var out Preset
	err := c.do(ctx, http.MethodGet, "/v1/admin/presets/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// Presets lists every preset, by name.
func (c *Client) Presets(ctx context.Context) ([]Preset, error) {
	var out Page[Preset]
	err := c.do(ctx, http.MethodGet, "/v1/admin/presets", nil, nil, &out)
	if out.Data == nil {
		out.Data = []Preset{}
	}
	return out.Data, err
}

// DeletePreset removes a preset and returns it as it was; jobs created from it are unchanged.
func (c *Client) DeletePreset(ctx context.Context, name string) (Preset, error) {
	var out Preset
	err := c.do(ctx, http.MethodDelete, "/v1/admin/presets/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// KeyOptions are the limits a new key is created with.
type KeyOptions struct {
	// PresetsOnly limits the key to jobs created from a preset (for a front end's key).
	PresetsOnly bool `json:"presets_only,omitempty"`
}

// CreateKeyWith issues a key with limits; the returned Key field is shown only this once.
func (c *Client) CreateKeyWith(ctx context.Context, accountID string, o KeyOptions) (APIKey, error) {
	var out APIKey
	err := c.do(ctx, http.MethodPost, "/v1/admin/accounts/"+url.PathEscape(accountID)+"/keys", nil, o, &out)
	return out, err
}
