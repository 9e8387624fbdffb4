// Package client is a small Go client for the convsvc API: reserve a job, upload, start, wait
// and download, plus the admin calls. Errors from the API come back as *APIError with its code.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// APIError is an error response of the API or of object storage.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// Client calls one convsvc server.
type Client struct {
	BaseURL string       // e.g. http://127.0.0.1:8080
	Key     string       // API key (cs_live_...) or admin token, sent as a bearer token
	HTTP    *http.Client // default http.DefaultClient
	// Retries is how often a 429 or 502 answer is retried, honouring Retry-After (default 4).
	Retries int
}

// Job is the API's Job object.
type Job struct {
	ID           string     `json:"id"`
	Status       string     `json:"status"`
	InputFormat  string     `json:"input_format"`
	TargetFormat string     `json:"target_format"`
	InputBytes   *int64     `json:"input_bytes"`
	Attempt      int        `json:"attempt"`
	ErrorCode    *string    `json:"error_code"`
	ErrorMessage *string    `json:"error_message"`
	ExpiresAt    time.Time  `json:"expires_at"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	Output       *Output    `json:"output"`
}

// Finished reports whether the job reached a final state.
func (j *Job) Finished() bool {
	return j.Status == "succeeded" || j.Status == "failed" || j.Status == "cancelled"
}

// Output is a succeeded job's result.
type Output struct {
	Bytes        int64  `json:"bytes"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresIn int    `json:"url_expires_in"`
}

// Reservation is the response of CreateJob.
type Reservation struct {
	Job             Job    `json:"job"`
	UploadURL       string `json:"upload_url"`
	UploadExpiresIn int    `json:"upload_expires_in"`
}

// Format is one entry of the format list; Targets and Sources are set by Format only.
type Format struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Category   string   `json:"category"`
	Extensions []string `json:"extensions"`
	MIME       string   `json:"mime"`
	Targets    []string `json:"targets,omitempty"`
	Sources    []string `json:"sources,omitempty"`
}

// CreateJobRequest reserves a conversion.
type CreateJobRequest struct {
	InputFormat  string `json:"input_format"`
	TargetFormat string `json:"target_format"`
	InputBytes   int64  `json:"input_bytes"`
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a JSON request to the API, retrying 429 and 502 with backoff, and decodes the answer.
func (c *Client) do(ctx context.Context, method, path string, header http.Header, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	retries := c.Retries
	if retries == 0 {
		retries = 4
	}
	backoff := 250 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.Key != "" {
			req.Header.Set("Authorization", "Bearer "+c.Key)
		}
		resp, err := c.httpClient().Do(req)
		if err != nil {
			return err
		}
		err = decodeResponse(resp, out)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || attempt >= retries ||
			(apiErr.Status != http.StatusTooManyRequests && apiErr.Status != http.StatusBadGateway) {
			return err
		}
		wait := backoff << attempt
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// decodeResponse decodes a 2xx body into out, or returns the error body as *APIError.
func decodeResponse(resp *http.Response, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
			return &APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(data))}
		}
		return &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// Formats lists every recognised format.
func (c *Client) Formats(ctx context.Context) ([]Format, error) {
	var out []Format
	err := c.do(ctx, http.MethodGet, "/v1/formats", nil, nil, &out)
	return out, err
}

// Format returns one format with the targets it reaches and the sources that reach it.
func (c *Client) Format(ctx context.Context, id string) (Format, error) {
	var out Format
	err := c.do(ctx, http.MethodGet, "/v1/formats/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// CreateJob reserves a job; idempotencyKey (optional) makes a retried call safe.
func (c *Client) CreateJob(ctx context.Context, req CreateJobRequest, idempotencyKey string) (Reservation, error) {
	var out Reservation
	h := http.Header{}
	if idempotencyKey != "" {
		h.Set("Idempotency-Key", idempotencyKey)
	}
	err := c.do(ctx, http.MethodPost, "/v1/jobs", h, req, &out)
	return out, err
}

// StartJob seals the upload and queues the job.
func (c *Client) StartJob(ctx context.Context, id string) (Job, error) {
	var out Job
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/start", nil, nil, &out)
	return out, err
}

// CancelJob cancels an unfinished job.
func (c *Client) CancelJob(ctx context.Context, id string) (Job, error) {
	var out Job
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/cancel", nil, nil, &out)
	return out, err
}

// GetJob reads a job; wait > 0 holds the call until the job finishes or wait passes (max 60s).
func (c *Client) GetJob(ctx context.Context, id string, wait time.Duration) (Job, error) {
	var out Job
	path := "/v1/jobs/" + url.PathEscape(id)
	if wait > 0 {
		path += "?wait=" + strconv.Itoa(int(wait/time.Second))
	}
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out, err
}

// WaitJob polls until the job finishes; onChange (optional) sees every new status.
func (c *Client) WaitJob(ctx context.Context, id string, onChange func(Job)) (Job, error) {
	last := ""
	for {
		job, err := c.GetJob(ctx, id, 30*time.Second)
		if err != nil {
			return job, err
		}
		if job.Status != last && onChange != nil {
			onChange(job)
		}
		last = job.Status
		if job.Finished() {
			return job, nil
		}
	}
}

// Upload PUTs size bytes from r to a signed upload URL.
func (c *Client) Upload(ctx context.Context, uploadURL string, r io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, r)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	return decodeResponse(resp, nil)
}

// Download writes a succeeded job's output to path atomically and checks its SHA-256.
func (c *Client) Download(ctx context.Context, out Output, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, out.URL, nil)
	if err != nil {
		return err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return decodeResponse(resp, nil)
	}
	defer resp.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600; an output is an ordinary file
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != out.Bytes || sum != out.SHA256 {
		return fmt.Errorf("download: got %d bytes with sha256 %s, want %d bytes with %s", n, sum, out.Bytes, out.SHA256)
	}
	return os.Rename(tmp.Name(), path)
}
