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
	"math/rand/v2"
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
	// Status is the HTTP status.
	Status int
	// Code is the stable error code (rate_limited, not_found, ...), or "http_NNN" for a body
	// that is not the API's error shape (a proxy's page, say).
	Code ErrorCode
	// Message is for humans; its wording is not part of the contract.
	Message string
	// RequestID is the server's Request-Id for the failed request: quote it when reporting.
	RequestID string
	// RetryAfter is the server's Retry-After, or 0.
	RetryAfter time.Duration
}

// Error formats the code, the message and the status.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// IsCode reports whether err is (or wraps) an *APIError with the given code, such as
// CodeRateLimited, CodeLimitReached or CodeNotFound.
func IsCode(err error, code ErrorCode) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// Client calls one convsvc server. The zero value of every field but BaseURL is usable; a
// Client is safe for concurrent use once its fields are set.
type Client struct {
	BaseURL string       // e.g. http://127.0.0.1:8080
	Key     string       // API key (cs_live_...) or admin token, sent as a bearer token
	HTTP    *http.Client // default http.DefaultClient
	// Retries is how often a JSON call answered 429, 502 or 503 too_many_connections (the
	// server's connection cap, answered before the request is read) is tried again: 0 means 4,
	// negative means never. A 429 or 503 waits its Retry-After; a 502 (or one without it) backs
	// off exponentially from RetryBackoff, with jitter, up to MaxBackoff. Uploads of a reader
	// that can be read again (an io.ReaderAt, such as an *os.File) are retried the same way,
	// and also when their connection fails before any answer; other streams are not (Upload).
	Retries int
	// RetryBackoff is the first backoff (default 250ms); each retry doubles it.
	RetryBackoff time.Duration
	// MaxBackoff caps one backoff (default 10s); a longer Retry-After is still honoured.
	MaxBackoff time.Duration
	// WaitOutRateLimit, when true, retries a 429 that carries a Retry-After however often it
	// comes, until ctx ends, without counting it against Retries: a batch larger than the
	// key's write budget then waits instead of failing with rate_limited.
	WaitOutRateLimit bool
	// OnRetry (optional) is called before each wait for a retry (JSON calls, uploads and
	// Convert's download), with the wait and the answer that caused it, so that a caller can
	// show that it is waiting; an upload whose connection failed without an answer is
	// reported with Status 0 and Code CodeConnectionFailed.
	OnRetry func(wait time.Duration, err *APIError)
}

// Job is the API's Job object.
type Job struct {
	ID           string `json:"id"`
	Status       Status `json:"status"`
	InputFormat  string `json:"input_format"`
	TargetFormat string `json:"target_format"`
	InputBytes   *int64 `json:"input_bytes"`
	// Options are the conversion options the job was created with; nil when there were none.
	Options      *Options   `json:"options"`
	Attempt      int        `json:"attempt"`
	ErrorCode    *ErrorCode `json:"error_code"`
	ErrorMessage *string    `json:"error_message"`
	// ErrorReason is a finer reason beside ErrorCode ("memory_exceeded", "worker_crashed", "output_invalid",
	// ...), nil when ErrorCode says all there is.
	ErrorReason *string    `json:"error_reason"`
	ExpiresAt   time.Time  `json:"expires_at"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	Output      *Output    `json:"output"`
	// Progress is set on running jobs only: 0 to 1 where the converter counts, nil while
	// unknown (and on every job that is not running).
	Progress *float64 `json:"progress,omitempty"`
	// SourceURL is set on a job created with one (its query REDACTED).
	SourceURL string `json:"source_url,omitempty"`
	// DeliverTo is set on a job created with one (URL redacted, header values REDACTED).
	DeliverTo *DeliverTo `json:"deliver_to,omitempty"`
}

// Finished reports whether the job reached a final state.
func (j *Job) Finished() bool {
	return j.Status.Finished()
}

// Error describes why a finished job did not succeed ("failed: conversion_failed: ..." or
// "cancelled"); it is "" for any other job. Unlike dereferencing ErrorCode, it is safe on
// every job: a cancelled job has no error code.
func (j *Job) Error() string {
	if j.Status != StatusFailed && j.Status != StatusCancelled {
		return ""
	}
	s := string(j.Status)
	if j.ErrorCode != nil {
		s += ": " + string(*j.ErrorCode)
	}
	if j.ErrorMessage != nil && *j.ErrorMessage != "" {
		s += ": " + *j.ErrorMessage
	}
	return s
}

// Output is a succeeded job's result.
type Output struct {
	Bytes        int64  `json:"bytes"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresIn int    `json:"url_expires_in"`
	// Warnings lists what the conversion could not keep (a workbook's other sheets, metadata,
	// transparency...); empty when nothing was lost.
	Warnings []Warning `json:"warnings"`
	// Verified is true when the output passed its format's re-read check before the job
	// succeeded; false when its format has no check. An output that fails it never succeeds
	// (ErrorReason "output_invalid").
	Verified bool `json:"verified"`
	// Cached is true when the output came from the server's conversion cache (an earlier job
	// converted the same input the same way) instead of a conversion for this job.
	Cached bool `json:"cached"`
}

// Reservation is the response of CreateJob.
type Reservation struct {
	Job Job `json:"job"`
	// UploadURL takes nothing for a job that fetches its input (SourceURL): it has started.
	UploadURL       string `json:"upload_url"`
	UploadExpiresIn int    `json:"upload_expires_in"`
}

// Format is one entry of the format list; Targets, Sources and Options are set by Format only.
type Format struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Category   string   `json:"category"`
	Extensions []string `json:"extensions"`
	MIME       string   `json:"mime"`
	// Targets are the formats this one converts to, directly or by chaining converters.
	Targets []string `json:"targets,omitempty"`
	// Sources are the formats that convert to this one.
	Sources []string `json:"sources,omitempty"`
	// Options are the conversion options accepted when this format is the target.
	Options []string `json:"options,omitempty"`
}

// CreateJobRequest reserves a conversion.
type CreateJobRequest struct {
	InputFormat string `json:"input_format"`
	// TargetFormat is the format to convert to (required; with Preset, the preset's target).
	TargetFormat string `json:"target_format"`
	InputBytes   int64  `json:"input_bytes"`
	// Preset (optional) names a preset an operator defined: the job takes its target and
	// options, and Options must then be nil. A key created PresetsOnly must name one.
	Preset string `json:"preset,omitempty"`
	// Options (optional) tune the conversion; the target must accept each one that is set
	// (Format.Options lists them), or the create is refused with invalid_request.
	Options *Options `json:"options,omitempty"`
	// WebhookURL (optional) also receives the job's final event, signed with the account's
	// webhook signing secret (docs/webhooks.md); verify it with VerifyWebhook.
	WebhookURL string `json:"webhook_url,omitempty"`
	// SourceURL (optional) is fetched by the server instead of an upload (docs/remote.md):
	// the job is created queued and needs no upload or start; InputBytes is then the most the
	// fetch may bring (MaxInputBytes for any size the server takes).
	SourceURL string `json:"source_url,omitempty"`
	// DeliverTo (optional) receives the output by PUT after the conversion (a presigned URL
	// of the caller's bucket); the job succeeds only when it answers 2xx.
	DeliverTo *DeliverTo `json:"deliver_to,omitempty"`
	// InputSHA256 (optional) is the SHA-256 of the file to upload, 64 lowercase hex digits
	// (FileSHA256): when the server's conversion cache holds it converted the same way the job
	// comes back succeeded (Output.Cached) and needs no upload or start; otherwise start
	// checks the upload against it (a difference is 409 checksum_mismatch).
	InputSHA256 string `json:"input_sha256,omitempty"`
	// Cache (optional) set to false keeps the job out of the conversion cache: it neither
	// takes a cached output nor leaves its own; nil is the server's default, true.
	Cache *bool `json:"cache,omitempty"`
}

// DeliverTo is a job's output destination: the URL the output is PUT to and the headers sent
// with it. In a Job the URL is redacted and header values read "REDACTED".
type DeliverTo struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// MaxInputBytes is the largest input_bytes the API takes (SPEC.md's 2 GB limit).
const MaxInputBytes = 2_000_000_000

// Options tune a conversion; a zero field means the converter's default. Which ones a target
// accepts is in its Format.Options (GET /v1/formats/{id}).
type Options struct {
	// Quality is the lossy encoders' quality, 1 to 100.
	Quality int `json:"quality,omitempty"`
	// Width and Height resize the image, 1 to 32768 pixels; with only one, the other follows
	// the aspect ratio.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Fit is how an image goes into Width x Height: contain (default), cover or fill.
	Fit string `json:"fit,omitempty"`
	// Page is the 1-based page of a PDF input.
	Page int `json:"page,omitempty"`
	// DPI is the resolution a PDF or SVG input is rendered at, 10 to 1200.
	DPI int `json:"dpi,omitempty"`
	// Lossless asks a WebP/AVIF/JPEG XL encoder for lossless output.
	Lossless *bool `json:"lossless,omitempty"`
	// Sheet picks the worksheet of an xlsx input: its name, or its 1-based position as digits.
	Sheet string `json:"sheet,omitempty"`
	// Pages selects pages of a PDF (or a document laid out as PDF): "all", "1-3,7", "3-".
	// Several pages to PNG, JPEG, WebP... make the output a zip of page-0001.png...; to TIFF
	// one multi-page TIFF; PDF to PDF a PDF of those pages in that order.
	Pages string `json:"pages,omitempty"`
	// Rotate turns an image clockwise by 90, 180 or 270 degrees (after orientation and crop).
	Rotate int `json:"rotate,omitempty"`
	// Flip mirrors an image: "horizontal" or "vertical" (after Rotate).
	Flip string `json:"flip,omitempty"`
	// Crop keeps a rectangle of an image, in pixels of the upright source, before resizing.
	Crop *Crop `json:"crop,omitempty"`
	// Background is the "#rrggbb" colour transparency is flattened onto for targets without
	// it (JPEG); white when empty.
	Background string `json:"background,omitempty"`
	// AutoOrient applies the input's EXIF orientation (nil means true).
	AutoOrient *bool `json:"auto_orient,omitempty"`
	// StripMetadata leaves EXIF, XMP and ICC out of the output (nil means true); false
	// carries them into JPEG, PNG and WebP.
	StripMetadata *bool `json:"strip_metadata,omitempty"`
	// MaxBytes is the largest output accepted; lossy targets lower their quality to fit, and
	// the job fails with error reason output_too_large when they cannot.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Crop is a rectangle of an image in pixels.
type Crop struct {
	Left   int `json:"left"`
	Top    int `json:"top"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// IsZero reports whether no option is set.
func (o Options) IsZero() bool { return o == Options{} }

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a JSON request to the API, retrying 429, 502 and 503 too_many_connections with
// backoff, and decodes the answer. Retrying a create is safe: a 429, a 502 or a refused
// connection from convsvc means nothing was reserved, and an Idempotency-Key makes it safe
// behind a proxy too.
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
	for attempt := 0; ; {
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
		if !errors.As(err, &apiErr) || !retryable(apiErr) {
			return err
		}
		waitOut := c.WaitOutRateLimit && apiErr.Status == http.StatusTooManyRequests && apiErr.RetryAfter > 0
		if !waitOut && attempt >= retries {
			return err
		}
		wait := c.backoff(attempt)
		if apiErr.RetryAfter > 0 {
			wait = apiErr.RetryAfter
		}
		if !waitOut {
			attempt++
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return err // the answer would come too late: say why now rather than time out
		}
		if c.OnRetry != nil {
			c.OnRetry(wait, apiErr)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while waiting to retry after %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retryable says whether an answer means the request did nothing and may be sent again:
// 429 (rate limited), 502 (object storage unavailable) and the 503 of the connection cap.
func retryable(e *APIError) bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway:
		return true
	case http.StatusServiceUnavailable:
		return e.Code == CodeTooManyConnections
	}
	return false
}

// backoff is the wait before retry number attempt+1: RetryBackoff doubled per attempt, capped
// at MaxBackoff, of which a random half is taken off so that many clients spread out.
func (c *Client) backoff(attempt int) time.Duration {
	base, ceiling := c.RetryBackoff, c.MaxBackoff
	if base <= 0 {
		base = 250 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = 10 * time.Second
	}
	d := ceiling
	if attempt < 30 && base<<attempt < ceiling {
		d = base << attempt
	}
	return d/2 + rand.N(d/2+1)
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
		apiErr := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("Request-Id")}
		if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
			apiErr.Code, apiErr.Message = ErrorCode("http_"+strconv.Itoa(resp.StatusCode)), strings.TrimSpace(string(data))
		} else {
			apiErr.Code, apiErr.Message = ErrorCode(e.Error.Code), e.Error.Message
		}
		apiErr.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		return apiErr
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
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

// WaitJob waits until the job finishes; onChange (optional) sees every new status, as it
// happens, and a running job's every new progress. With onChange it follows the job's event
// stream (JobEvents); where that cannot be opened or breaks off it polls, each call after the
// first returning at the job's next move (changed_from).
func (c *Client) WaitJob(ctx context.Context, id string, onChange func(Job)) (Job, error) {
	var last Status
	if onChange != nil {
		if job, ok := c.followJob(ctx, id, onChange); ok {
			return job, nil
		} else if err := ctx.Err(); err != nil {
			return job, err
		}
	}
	for {
		var job Job
		path := "/v1/jobs/" + url.PathEscape(id) + "?wait=30"
		if onChange != nil && last == "" {
			path = "/v1/jobs/" + url.PathEscape(id) // learn the status first
		} else if onChange != nil {
			path += "&changed_from=" + url.QueryEscape(string(last)) // string(): last is a Status on main
		}
		err := c.do(ctx, http.MethodGet, path, nil, nil, &job)
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

// Upload PUTs size bytes from r to a signed upload URL. It never closes r: the caller's file
// stays open and usable (net/http closes a request body, so r is handed over behind a reader
// that does not pass Close on).
//
// When r is an io.ReaderAt (an *os.File, a *bytes.Reader, a *strings.Reader), Upload reads
// size bytes from r's current offset (0 when r is no io.Seeker) and leaves that offset where
// it was (on Linux an *os.File is sent by the kernel from a descriptor of its own; other
// readers are read with ReadAt), so the same file can be uploaded again, or read on,
// afterwards, and may be read elsewhere meanwhile. Such an
// upload is sent again, from its first byte, when object storage answers 429, 502 or 503
// too_many_connections (after its Retry-After, or the backoff) and when the connection fails
// before any answer, as the Client's Retries say, with OnRetry told of each wait. Any other
// reader (a pipe, standard input, a network stream) is read once: it is sent again only when
// the failed attempt had read nothing from it.
func (c *Client) Upload(ctx context.Context, uploadURL string, r io.Reader, size int64) error {
	return c.UploadWithProgress(ctx, uploadURL, r, size, nil)
}

// UploadWithProgress is Upload that calls progress (when not nil) as bytes are sent, with the
// bytes so far and size; a retried upload reports again from 0. The progress of a file sent by
// the kernel (sendfile) is its descriptor's offset, read every progressEvery, and its end.
//
// A file that no longer holds size bytes from its offset is not sent, and one whose size
// changes while it is sent fails the upload, whatever object storage answered: the bytes sent
// may mix the file before and after the change. Either error says that the file changed.
func (c *Client) UploadWithProgress(ctx context.Context, uploadURL string, r io.Reader, size int64, progress func(done, total int64)) error {
	ra, rereadable := r.(io.ReaderAt)
	var start int64
	if s, ok := r.(io.Seeker); ok && rereadable {
		var err error
		if start, err = s.Seek(0, io.SeekCurrent); err != nil {
			rereadable = false // a pipe or a terminal behind an *os.File: read it as a stream
		}
	}
	// An *os.File is sent from a descriptor of its own (reopenAt), which net/http reads with
	// the kernel's copy (sendfile) and closes: the caller's file and its offset are never
	// touched, and a writer left over from an earlier attempt (net/http may answer a 503
	// before it has read the body) moves only that attempt's descriptor. Where reopening is
	// impossible (not Linux, a file opened write-only) it is read with ReadAt. A regular
	// file's size is checked before and after each attempt (sizeOf).
	file, _ := r.(*os.File)
	if !rereadable {
		file = nil
	}
	for attempt := 0; ; attempt++ {
		before, err := sizeOf(file, start, size, true)
		if err != nil {
			return err
		}
		var body io.Reader
		var sent *countingReader
		own, reopenErr := reopenAt(file, start)
		var stopProgress func(ok bool)
		switch {
		case reopenErr == nil:
			body = own // net/http closes it
			if progress != nil {
				stopProgress = followOffset(own, start, size, progress)
			}
		case rereadable:
			body = io.NewSectionReader(ra, start, size)
		default:
			sent = &countingReader{r: r}
			body = sent
		}
		if progress != nil && stopProgress == nil {
			body = &ProgressReader{R: body, Total: size, Progress: progress}
		}
		err = c.uploadOnce(ctx, uploadURL, body, size)
		if stopProgress != nil {
			stopProgress(err == nil)
		}
		if after, serr := sizeOf(file, start, size, false); serr != nil || after != before {
			if serr == nil {
				serr = fmt.Errorf("upload: %s changed size while it was sent (%d bytes, then %d): the upload may mix its old and new bytes; send it again once it is complete", file.Name(), before, after)
			}
			return serr
		}
		if err == nil {
			return nil
		}
		if !rereadable && sent.n > 0 {
			return err // the bytes read are gone: the stream cannot be sent again
		}
		if !c.retryUpload(ctx, attempt, err) {
			return err
		}
	}
}

// progressEvery is how often the progress of a file sent by the kernel is read.
const progressEvery = 50 * time.Millisecond

// followOffset reports the progress of own, sent from start by the kernel (sendfile moves its
// offset), every progressEvery until stop, which reports the whole of size when the upload
// succeeded. Reading the offset does not disturb the copy: it is one lseek, and the offset is
// the kernel's.
func followOffset(own *os.File, start, size int64, progress func(done, total int64)) (stop func(ok bool)) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			off, err := own.Seek(0, io.SeekCurrent)
			if err != nil { // net/http closed it: the body was sent, or the attempt ended
				return
			}
			if n := min(off-start, size); n > last {
				last = n
				progress(n, size)
			}
		}
	}()
	return func(ok bool) {
		close(done)
		<-exited
		if ok {
			progress(size, size)
		}
	}
}

// sizeOf returns the size of the regular file f (0 for nil or anything else: nothing to
// check); with short set it fails when the file holds fewer than size bytes from start, cut
// after its size was taken.
func sizeOf(f *os.File, start, size int64, short bool) (int64, error) {
	if f == nil {
		return 0, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("upload: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return 0, nil
	}
	if short && fi.Size()-start < size {
		return 0, fmt.Errorf("upload: %s holds %d bytes from offset %d, fewer than the %d to send: it changed since its size was taken; send it again once it is complete", f.Name(), fi.Size()-start, start, size)
	}
	return fi.Size(), nil
}

// uploadOnce sends one PUT of body; a body without Close is wrapped so that net/http cannot
// close the caller's reader.
func (c *Client) uploadOnce(ctx context.Context, uploadURL string, body io.Reader, size int64) error {
	rc, ok := body.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, rc)
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

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Download writes a succeeded job's output to path atomically and checks its SHA-256.
func (c *Client) Download(ctx context.Context, out Output, path string) error {
	return c.DownloadWithProgress(ctx, out, path, nil)
}

// DownloadWithProgress is Download that calls progress (when not nil) as bytes arrive, with
// the bytes so far and the output's size.
func (c *Client) DownloadWithProgress(ctx context.Context, out Output, path string, progress func(done, total int64)) error {
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
	var body io.Reader = resp.Body
	if progress != nil {
		body = &ProgressReader{R: resp.Body, Total: out.Bytes, Progress: progress}
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), body)
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

// ProgressReader reports the bytes read through it; wrap an upload's file in one to follow
// Upload.
type ProgressReader struct {
	R        io.Reader
	Total    int64                   // size of the whole stream, passed on to Progress
	Progress func(done, total int64) // called after every read that returned bytes
	done     int64
}

// Read reads from R and reports the running total.
func (p *ProgressReader) Read(b []byte) (int, error) {
	n, err := p.R.Read(b)
	if n > 0 {
		p.done += int64(n)
		p.Progress(p.done, p.Total)
	}
	return n, err
}

// ProgressWriter reports the bytes written through it; wrap DownloadTo's writer in one to
// follow a download.
type ProgressWriter struct {
	W        io.Writer
	Total    int64                   // size of the whole stream, passed on to Progress
	Progress func(done, total int64) // called after every write that wrote bytes
	done     int64
}

// Write writes to W and reports the running total.
func (p *ProgressWriter) Write(b []byte) (int, error) {
	n, err := p.W.Write(b)
	if n > 0 {
		p.done += int64(n)
		p.Progress(p.done, p.Total)
	}
	return n, err
}

// Backup streams a consistent copy of the server's database to w (admin token required) and
// returns its size; the copy is complete when err is nil. convsvc admin backup writes it to a
// file atomically.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return c.stream(ctx, "/v1/admin/backup", "backup", w)
}

// stream copies the body of a GET of path to w and checks it arrived whole; what names the
// download in errors.
func (c *Client) stream(ctx context.Context, path, what string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, decodeResponse(resp, nil)
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("%s: %w", what, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("%s: got %d of %d bytes", what, n, resp.ContentLength)
	}
	return n, nil
}
