package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// ListJobsParams filter and page GET /v1/jobs.
type ListJobsParams struct {
	// Status keeps only the jobs in that state; "" keeps all.
	Status Status
	// PageSize is how many jobs one request fetches, 1 to 100 (default 20).
	PageSize int
}

// ListJobs yields the key's account's jobs, newest first, fetching a page at a time as the loop
// asks for more. A failed request is yielded once as (Job{}, err) and ends the sequence.
//
//	for job, err := range c.ListJobs(ctx, client.ListJobsParams{Status: client.StatusFailed}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(job.ID, job.Error())
//	}
func (c *Client) ListJobs(ctx context.Context, p ListJobsParams) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		after := ""
		for {
			q := url.Values{}
			if p.PageSize > 0 {
				q.Set("limit", strconv.Itoa(p.PageSize))
			}
			if p.Status != "" {
				q.Set("status", string(p.Status))
			}
			if after != "" {
				q.Set("starting_after", after)
			}
			path := "/v1/jobs"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var page struct {
				Data    []Job `json:"data"`
				HasMore bool  `json:"has_more"`
			}
			if err := c.do(ctx, http.MethodGet, path, nil, nil, &page); err != nil {
				yield(Job{}, fmt.Errorf("list jobs: %w", err))
				return
			}
			for _, j := range page.Data {
				if !yield(j, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			after = page.Data[len(page.Data)-1].ID
		}
	}
}

// ConvertRequest is what ConvertWith converts: size bytes of From read from In, to To.
type ConvertRequest struct {
	In   io.Reader
	Size int64
	From string
	To   string
	// Options (optional) tune the conversion.
	Options *Options
	// Preset (optional) names an operator's preset: the job takes its target and options (To
	// must be the preset's target, and Options must be nil).
	Preset string
	// IdempotencyKey (optional) makes the create safe to repeat across calls; within one call
	// the create's retries are safe without it.
	IdempotencyKey string
	// InputSHA256 (optional) is In's SHA-256 (FileSHA256): when the server's conversion cache
	// holds the same conversion, the job succeeds at create and nothing is uploaded.
	InputSHA256 string
}

// Convert does the whole flow in one call: reserve a job converting size bytes of format from
// read from in to format to, upload, start, wait, and write the output to out, checking its
// SHA-256. JSON calls answered 429, 502 or 503 too_many_connections are retried as the
// Client's Retries say (429 and 503 after their Retry-After, 502 with backoff); so is the
// upload when in is an io.ReaderAt such as an *os.File (see Upload: in is never closed, and
// its offset is left where it was, so the file can be used again), and the download until
// its first byte reaches out. It returns the final job; a job that did
// not succeed is an error that names its status and error code. When Convert fails or ctx ends
// with the job unfinished, the job is cancelled (so it is not charged) before Convert returns.
func (c *Client) Convert(ctx context.Context, in io.Reader, size int64, from, to string, out io.Writer) (Job, error) {
	return c.ConvertWith(ctx, ConvertRequest{In: in, Size: size, From: from, To: to}, out)
}

// ConvertWith is Convert with options or a preset, and an idempotency key.
func (c *Client) ConvertWith(ctx context.Context, r ConvertRequest, out io.Writer) (job Job, err error) {
	res, err := c.CreateJob(ctx, CreateJobRequest{InputFormat: r.From, TargetFormat: r.To, InputBytes: r.Size, Options: r.Options, Preset: r.Preset,
		InputSHA256: r.InputSHA256}, r.IdempotencyKey)
	if err != nil {
		return Job{}, fmt.Errorf("create job: %w", err)
	}
	job = res.Job
	defer func() {
		if err != nil && !job.Finished() {
			// Cancel with a context of its own (ctx may be over): a job left behind would
			// hold its reservation, or run and be charged with nobody to collect it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if j, cerr := c.CancelJob(cctx, job.ID); cerr == nil {
				job = j
			}
		}
	}()
	if job.Status == StatusCreated { // else answered from the conversion cache: nothing to upload
		if err := c.Upload(ctx, res.UploadURL, r.In, r.Size); err != nil {
			return job, fmt.Errorf("upload: %w", err)
		}
		if job, err = c.StartJob(ctx, job.ID); err != nil {
			return job, fmt.Errorf("start job: %w", err)
		}
	}
	if job, err = c.WaitJob(ctx, job.ID, nil); err != nil {
		return job, fmt.Errorf("wait for job: %w", err)
	}
	if job.Status != StatusSucceeded || job.Output == nil {
		return job, fmt.Errorf("job %s %s", job.ID, job.Error())
	}
	for attempt := 0; ; attempt++ {
		wrote, err := c.DownloadTo(ctx, *job.Output, out)
		if err == nil {
			return job, nil
		}
		if wrote > 0 || !c.retry(ctx, attempt, err) {
			return job, err
		}
	}
}

// retry reports whether err (after attempt earlier retries) is an answer worth trying again
// (retryable: 429, 502, 503 too_many_connections), having told OnRetry and waited the
// Retry-After or the backoff; false when retries ran out or ctx ended.
func (c *Client) retry(ctx context.Context, attempt int, err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !retryable(apiErr) {
		return false
	}
	return c.waitToRetry(ctx, attempt, apiErr)
}

// retryUpload is retry for an upload, which is also sent again when the connection failed
// before any answer (refused, reset, closed): a PUT of the same bytes to the same signed URL
// replaces what an earlier one may have stored, and nothing is sealed before start. OnRetry
// sees such a failure as an APIError with Status 0 and Code CodeConnectionFailed.
func (c *Client) retryUpload(ctx context.Context, attempt int, err error) bool {
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr):
		if !retryable(apiErr) {
			return false
		}
	case ctx.Err() == nil && connectionFailed(err):
		apiErr = &APIError{Code: CodeConnectionFailed, Message: err.Error()}
	default:
		return false
	}
	return c.waitToRetry(ctx, attempt, apiErr)
}

// connectionFailed says whether err is a connection's failure (refused, reset, closed before
// the answer) rather than a request that could never succeed.
func connectionFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// waitToRetry waits before retry number attempt+1 of a call answered apiErr: its Retry-After,
// or the backoff, after telling OnRetry. It is false, without waiting, when Retries ran out or
// the wait would outlast ctx, and false when ctx ends during it.
func (c *Client) waitToRetry(ctx context.Context, attempt int, apiErr *APIError) bool {
	retries := c.Retries
	if retries == 0 {
		retries = 4
	}
	if attempt >= retries {
		return false
	}
	wait := c.backoff(attempt)
	if apiErr.RetryAfter > 0 {
		wait = apiErr.RetryAfter
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return false
	}
	if c.OnRetry != nil {
		c.OnRetry(wait, apiErr)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// DownloadTo streams a succeeded job's output to w and checks its size and SHA-256; it returns
// how many bytes reached w. The bytes are written as they arrive, so on a checksum error w
// already holds them: write to a temporary file (as Download does) when that matters.
func (c *Client) DownloadTo(ctx context.Context, out Output, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, out.URL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("download: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("download: %w", decodeResponse(resp, nil))
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Body)
	if err != nil {
		return n, fmt.Errorf("download: %w", err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != out.Bytes || sum != out.SHA256 {
		return n, fmt.Errorf("download: got %d bytes with sha256 %s, want %d bytes with %s", n, sum, out.Bytes, out.SHA256)
	}
	return n, nil
}

// FileSHA256 is the SHA-256 of what r reads, as the 64 lowercase hex digits of create's
// input_sha256. An *os.File is read from its start with ReadAt, leaving its offset alone.
func FileSHA256(r io.Reader) (string, error) {
	h := sha256.New()
	var err error
	if ra, ok := r.(io.ReaderAt); ok {
		_, err = io.Copy(h, io.NewSectionReader(ra, 0, 1<<62))
	} else {
		_, err = io.Copy(h, r)
	}
	if err != nil {
		return "", fmt.Errorf("hash input: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
