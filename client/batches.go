package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// MaxBatchJobs is the most jobs one batch reserves.
const MaxBatchJobs = 500

// Batch statuses: open until every job reached a final state.
const (
	BatchOpen     = "open"
	BatchFinished = "finished"
)

// BatchReservation is the answer of CreateBatch: the batch id and one reservation per item,
// in the request's order.
type BatchReservation struct {
	ID   string        `json:"id"`
	Jobs []Reservation `json:"jobs"`
}

// BatchCounts counts a batch's jobs by state.
type BatchCounts struct {
	Created   int `json:"created"`
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// Batch is a batch as GET /v1/batches/{id} shows it.
type Batch struct {
	ID         string      `json:"id"`
	Status     string      `json:"status"`
	Total      int         `json:"total"`
	Counts     BatchCounts `json:"counts"`
	JobIDs     []string    `json:"job_ids"`
	CreatedAt  time.Time   `json:"created_at"`
	ExpiresAt  time.Time   `json:"expires_at"`
	FinishedAt *time.Time  `json:"finished_at"`
}

// Finished reports whether every job of the batch reached a final state.
func (b *Batch) Finished() bool { return b.Status == BatchFinished }

// BatchManifest is the archive's manifest.json: every item's outcome in the request's order.
type BatchManifest struct {
	BatchID string              `json:"batch_id"`
	Status  string              `json:"status"`
	Items   []BatchManifestItem `json:"items"`
}

// BatchManifestItem is one item's outcome; File names its entry in the archive when it succeeded.
type BatchManifestItem struct {
	Index        int     `json:"index"`
	JobID        string  `json:"job_id"`
	Status       Status  `json:"status"`
	InputFormat  string  `json:"input_format"`
	TargetFormat string  `json:"target_format"`
	File         *string `json:"file"`
	Bytes        *int64  `json:"bytes"`
	SHA256       *string `json:"sha256"`
	// Warnings lists what a succeeded conversion could not keep; nil unless it succeeded.
	Warnings     []Warning `json:"warnings"`
	ErrorCode    *string   `json:"error_code"`
	ErrorReason  *string   `json:"error_reason"`
	ErrorMessage *string   `json:"error_message"`
}

// CreateBatch reserves every job of reqs (1 to MaxBatchJobs) in one request, all or nothing;
// idempotencyKey (optional) covers the whole batch.
func (c *Client) CreateBatch(ctx context.Context, reqs []CreateJobRequest, idempotencyKey string) (BatchReservation, error) {
	var out BatchReservation
	h := http.Header{}
	if idempotencyKey != "" {
		h.Set("Idempotency-Key", idempotencyKey)
	}
	err := c.do(ctx, http.MethodPost, "/v1/batches", h, struct {
		Jobs []CreateJobRequest `json:"jobs"`
	}{reqs}, &out)
	return out, err
}

// GetBatch reads a batch; wait > 0 holds the call until the batch finishes or wait passes (max 60s).
func (c *Client) GetBatch(ctx context.Context, id string, wait time.Duration) (Batch, error) {
	var out Batch
	path := "/v1/batches/" + url.PathEscape(id)
	if wait > 0 {
		path += "?wait=" + strconv.Itoa(int(wait/time.Second))
	}
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// StartBatch starts every uploaded job of the batch that is still created; safe to repeat.
func (c *Client) StartBatch(ctx context.Context, id string) (Batch, error) {
	var out Batch
	err := c.do(ctx, http.MethodPost, "/v1/batches/"+url.PathEscape(id)+"/start", nil, nil, &out)
	return out, err
}

// CancelBatch cancels every unfinished job of the batch.
func (c *Client) CancelBatch(ctx context.Context, id string) (Batch, error) {
	var out Batch
	err := c.do(ctx, http.MethodPost, "/v1/batches/"+url.PathEscape(id)+"/cancel", nil, nil, &out)
	return out, err
}

// WaitBatch polls until the batch finishes; onChange (optional) sees each answer whose counts
// moved.
func (c *Client) WaitBatch(ctx context.Context, id string, onChange func(Batch)) (Batch, error) {
	var last BatchCounts
	for {
		b, err := c.GetBatch(ctx, id, 30*time.Second)
		if err != nil {
			return b, err
		}
		if onChange != nil && b.Counts != last {
			onChange(b)
		}
		last = b.Counts
		if b.Finished() {
			return b, nil
		}
	}
}

// DownloadBatchArchive streams the batch's archive (a zip: manifest.json, then every
// succeeded output) to w and returns its size; the copy is whole when err is nil.
func (c *Client) DownloadBatchArchive(ctx context.Context, id string, w io.Writer) (int64, error) {
	return c.stream(ctx, "/v1/batches/"+url.PathEscape(id)+"/archive", "archive", w)
}
