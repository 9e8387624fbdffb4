package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// Failure reasons of remote files (docs/decisions.md, "Finer failure reasons"): the job's
// error_code is conversion_failed and its error_reason one of these.
const (
	// ReasonSourceUnreachable: source_url did not answer 2xx (no connection, a timeout, a
	// stall, a status other than 2xx, too many redirects).
	ReasonSourceUnreachable = "source_unreachable"
	// ReasonSourceRefused: source_url, or a redirect from it, leads to an address the fetch
	// guard refuses (loopback, private, link-local, this server's own; --fetch-allow-private).
	ReasonSourceRefused = "source_refused"
	// ReasonSourceTooLarge: the source is larger than input_bytes or the server's maximum.
	ReasonSourceTooLarge = "source_too_large"
	// ReasonDeliveryFailed: deliver_to never answered 2xx.
	ReasonDeliveryFailed = "delivery_failed"
)

// Bounds of remote transfers.
const (
	// maxFetchRedirects is how many redirects a fetch follows.
	maxFetchRedirects = 5
	// maxDeliveryAttempts is how many PUTs a delivery makes when the failures are transient
	// (no answer, 5xx, 429).
	maxDeliveryAttempts = 4
	// remoteProgressBytes is the progress a transfer must make in each progress timeout.
	remoteProgressBytes = 64 << 10
	// fetchUserAgent is the User-Agent of fetches and deliveries.
	fetchUserAgent = "convsvc-fetch/1"
)

// defaultDeliveryBackoff is the wait before delivery attempt n+1 (n from 1).
func defaultDeliveryBackoff(n int) time.Duration { return time.Duration(1<<(n-1)) * time.Second }

// remoteIO fetches source_url inputs and delivers outputs to deliver_to, through the
// request-forgery guard: every connection's address is checked as it is made, every redirect
// target before it is followed, and no proxy connects on our behalf.
type remoteIO struct {
	guard webhook.Guard
	// checkURL and control are guard.CheckURL and guard.Control (tests trust their own
	// origin server through them, and nothing else).
	checkURL func(ctx context.Context, raw string) error
	control  func(network, address string, c syscall.RawConn) error
	client   *http.Client
	progress time.Duration // a transfer moving less than remoteProgressBytes in this is cut
	maxInput int64
	scratch  string
	backoff  func(attempt int) time.Duration
	log      *slog.Logger
}

// errRedirectRefused marks a redirect the fetch does not follow.
var errRedirectRefused = errors.New("redirect refused")

func newRemoteIO(guard webhook.Guard, progress time.Duration, scratch string, backoff func(int) time.Duration, log *slog.Logger) *remoteIO {
	if progress <= 0 {
		progress = blobstore.DefaultProgressTimeout
	}
	if backoff == nil {
		backoff = defaultDeliveryBackoff
	}
	r := &remoteIO{guard: guard, checkURL: guard.CheckURL, control: guard.Control, progress: progress, maxInput: store.MaxInputBytes, scratch: scratch, backoff: backoff, log: log}
	d := &net.Dialer{Timeout: progress, KeepAlive: 30 * time.Second, Resolver: guard.Resolver,
		Control: func(network, address string, c syscall.RawConn) error { return r.control(network, address, c) }}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would connect out of the guard's sight
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   progress,
		ResponseHeaderTimeout: progress,
	}
	r.client = &http.Client{Transport: tr, CheckRedirect: r.checkRedirect}
	return r
}

// checkRedirect follows at most maxFetchRedirects redirects of a GET, each to a URL the guard
// allows; a PUT (a delivery) follows none.
func (r *remoteIO) checkRedirect(req *http.Request, via []*http.Request) error {
	if req.Method != http.MethodGet {
		return http.ErrUseLastResponse
	}
	if len(via) > maxFetchRedirects {
		return fmt.Errorf("%w: more than %d redirects", errRedirectRefused, maxFetchRedirects)
	}
	if err := r.checkURL(req.Context(), req.URL.String()); err != nil {
		return fmt.Errorf("%w: to %s: %w", errRedirectRefused, webhook.RedactURL(req.URL.String()), err)
	}
	return nil
}

// watchdog cancels a transfer that moves less than remoteProgressBytes in the progress
// timeout: waiting for a connection, an answer or the next bytes alike.
type watchdog struct {
	mu     sync.Mutex
	timer  *time.Timer
	moved  int64
	d      time.Duration
	fired  bool
	cancel context.CancelFunc
}

func newWatchdog(ctx context.Context, d time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watchdog{d: d, cancel: cancel}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		cancel()
	})
	return ctx, w
}

// progressed counts n bytes moved and restarts the clock at each remoteProgressBytes.
func (w *watchdog) progressed(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.moved += int64(n)
	if w.moved >= remoteProgressBytes {
		w.moved = 0
		w.timer.Reset(w.d)
	}
}

// stalled reports whether the watchdog cut the transfer.
func (w *watchdog) stalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *watchdog) stop() {
	w.timer.Stop()
	w.cancel()
}

// watchedReader reports each read to its watchdog.
type watchedReader struct {
	r io.Reader
	w *watchdog
}

func (r watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.w.progressed(n)
	return n, err
}

// failure is a job failure with a reason, as the pool reports it.
func failure(reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &convert.Error{Message: msg, Reason: reason, Err: errors.New(msg)}
}

// refusal is the user's message for a destination the guard refused.
func refusal(err error) string {
	return webhook.Refusal(err) + " (an operator can allow private addresses with serve --fetch-allow-private)"
}

// fetch downloads job.SourceURL into a scratch file, at most limit bytes, and returns it open
// at offset 0 with its size. Failures the source causes are *convert.Error with a Reason.
func (r *remoteIO) fetch(ctx context.Context, job store.Job) (*os.File, int64, error) {
	shown := webhook.RedactURL(job.SourceURL)
	limit := r.maxInput
	if job.InputBytes > 0 && job.InputBytes < limit {
		limit = job.InputBytes
	}
	if err := r.checkURL(ctx, job.SourceURL); err != nil {
		if errors.Is(err, webhook.ErrForbiddenDestination) {
			return nil, 0, failure(ReasonSourceRefused, "source_url %s: %s", shown, refusal(err))
		}
		return nil, 0, failure(ReasonSourceUnreachable, "source_url %s: its host does not resolve", shown)
	}
	wctx, wd := newWatchdog(ctx, r.progress)
	defer wd.stop()
	req, err := http.NewRequestWithContext(wctx, http.MethodGet, job.SourceURL, nil)
	if err != nil {
		return nil, 0, failure(ReasonSourceUnreachable, "source_url %s: %s", shown, "not a request URL")
	}
	req.Header.Set("User-Agent", fetchUserAgent)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, r.transportFailure(ctx, wd, ReasonSourceUnreachable, "source_url "+shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, 0, failure(ReasonSourceUnreachable, "source_url %s answered %d", shown, resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, 0, failure(ReasonSourceTooLarge, "source_url %s is %d bytes, over the %d byte limit (%s)", shown, resp.ContentLength, limit, limitName(job, limit))
	}
	f, err := os.CreateTemp(r.scratch, "fetch-"+job.ID+"-*")
	if err != nil {
		return nil, 0, fmt.Errorf("%w: fetch scratch file: %w", blobstore.ErrStorage, err)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, io.LimitReader(watchedReader{resp.Body, wd}, limit+1))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, 0, fmt.Errorf("%w: fetch scratch file: %w", blobstore.ErrStorage, err)
		}
		return nil, 0, r.transportFailure(ctx, wd, ReasonSourceUnreachable, "source_url "+shown, err)
	}
	if n > limit {
		return nil, 0, failure(ReasonSourceTooLarge, "source_url %s sent more than the %d byte limit (%s)", shown, limit, limitName(job, limit))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, fmt.Errorf("fetch scratch file: %w", err)
	}
	keep = true
	_ = os.Remove(f.Name()) // open files outlive their name on Unix
	return f, n, nil
}

// limitName says which limit bounded a fetch.
func limitName(job store.Job, limit int64) string {
	if job.InputBytes > 0 && job.InputBytes == limit && limit < store.MaxInputBytes {
		return "the job's input_bytes"
	}
	return "the server's maximum input size"
}

// transportFailure describes a transfer that got no complete answer: refused by the guard
// (reason becomes source_refused for a fetch), cut by the watchdog, or failed in transport.
// A cancelled task's error is returned as it is.
func (r *remoteIO) transportFailure(ctx context.Context, wd *watchdog, reason, what string, err error) error {
	switch {
	case ctx.Err() != nil && !wd.stalled():
		return failure(reason, "%s: stopped: %v", what, context.Cause(ctx))
	case errors.Is(err, webhook.ErrForbiddenDestination) || errors.Is(err, errRedirectRefused):
		if reason == ReasonSourceUnreachable {
			reason = ReasonSourceRefused
		}
		var msg string
		if errors.Is(err, errRedirectRefused) && !errors.Is(err, webhook.ErrForbiddenDestination) {
			msg = fmt.Sprintf("more than %d redirects", maxFetchRedirects)
			if reason == ReasonSourceRefused {
				reason = ReasonSourceUnreachable
			}
		} else {
			msg = refusal(err)
		}
		return failure(reason, "%s: %s", what, msg)
	case wd.stalled() || isTimeout(err):
		// The dial, TLS and response-header timeouts are the progress deadline too: whichever
		// of them and the watchdog fires first, the stall is the same.
		return failure(reason, "%s: moved less than %d KiB in %s (--storage-progress-timeout)", what, remoteProgressBytes>>10, r.progress)
	}
	r.log.Info("remote transfer failed", "what", what, "error", webhook.RedactURLs(err.Error()))
	return failure(reason, "%s: no answer: %s", what, webhook.RedactURLs(rootCause(err)))
}

// isTimeout reports whether err is a network timeout (net.Error's Timeout).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// rootCause is the innermost error's text (net/http wraps the URL around it).
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// deliver PUTs the output open() gives to job.DeliverTo, retrying transient failures (no
// answer, 5xx, 429) with backoff while the task's time lasts; a 2xx is success.
func (r *remoteIO) deliver(ctx context.Context, job store.Job, open func(context.Context) (io.ReadCloser, int64, error)) error {
	what := "deliver_to " + webhook.RedactURL(job.DeliverTo.URL)
	for attempt := 1; ; attempt++ {
		status, transient, err := r.put(ctx, job.DeliverTo, what, open)
		if err == nil && status >= 200 && status <= 299 {
			return nil
		}
		if err == nil {
			err = failure(ReasonDeliveryFailed, "%s answered %d (attempt %d of at most %d)", what, status, attempt, maxDeliveryAttempts)
			transient = status == http.StatusTooManyRequests || status >= 500
		}
		if !transient || attempt >= maxDeliveryAttempts {
			return err
		}
		wait := r.backoff(attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// put makes one delivery attempt and returns the status; when none came, a *convert.Error
// (delivery_failed) and whether trying again may help (a connection or timeout failure, not
// the guard's refusal), or object storage's error reading the output.
func (r *remoteIO) put(ctx context.Context, d *store.Delivery, what string, open func(context.Context) (io.ReadCloser, int64, error)) (status int, transient bool, err error) {
	if err := r.checkURL(ctx, d.URL); err != nil {
		if errors.Is(err, webhook.ErrForbiddenDestination) {
			return 0, false, failure(ReasonDeliveryFailed, "%s: %s", what, refusal(err))
		}
		return 0, true, failure(ReasonDeliveryFailed, "%s: its host does not resolve", what)
	}
	wctx, wd := newWatchdog(ctx, r.progress)
	defer wd.stop()
	body, size, err := open(wctx)
	if err != nil {
		return 0, false, fmt.Errorf("open the output: %w", err)
	}
	defer body.Close()
	req, err := http.NewRequestWithContext(wctx, http.MethodPut, d.URL, watchedReader{body, wd})
	if err != nil {
		return 0, false, failure(ReasonDeliveryFailed, "%s: not a request URL", what)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	for name, value := range d.Headers {
		req.Header.Set(name, value)
	}
	req.Header.Set("User-Agent", fetchUserAgent)
	resp, err := r.client.Do(req)
	if err != nil {
		refused := errors.Is(err, webhook.ErrForbiddenDestination)
		return 0, !refused && ctx.Err() == nil, r.transportFailure(ctx, wd, ReasonDeliveryFailed, what, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, false, nil
}

// OpenInputContext opens the input of a claimed job: for a job with a source_url, the fetch
// (stored as the job's input in object storage first, as an upload is), else the input its
// start sealed.
func (f jobFiles) OpenInputContext(ctx context.Context, t convert.Task) (*os.File, error) {
	job := f.claimed(t.JobID)
	if job.SourceURL == "" || f.remote == nil {
		return f.OpenInput(t.JobID)
	}
	in, size, err := f.remote.fetch(ctx, job)
	if err == nil {
		if err = f.blobs.ImportInput(ctx, job.ID, in, size); err != nil {
			in.Close()
			in = nil
		} else if _, err = in.Seek(0, io.SeekStart); err != nil {
			in.Close()
			in = nil
		}
	}
	if err != nil && f.queue != nil && (errors.Is(err, blobstore.ErrStorage) || errors.Is(err, s3store.ErrStorage)) {
		// Not the source's fault: the attempt is retried.
		f.queue.mu.Lock()
		f.queue.inputFaults[claimKey{job.ID, job.Attempt}] = true
		f.queue.mu.Unlock()
	}
	return in, err
}

// DeliverOutput PUTs a claimed job's committed output to its deliver_to, if it has one.
func (f jobFiles) DeliverOutput(ctx context.Context, t convert.Task, _ convert.Output) error {
	job := f.claimed(t.JobID)
	if job.DeliverTo == nil || f.remote == nil {
		return nil
	}
	return f.remote.deliver(ctx, job, func(ctx context.Context) (io.ReadCloser, int64, error) {
		return f.blobs.OpenOutput(ctx, job.ID, job.Attempt)
	})
}

// ImportInput stores a fetched input as the job's upload in the data dir.
func (l localObjects) ImportInput(_ context.Context, jobID string, r io.ReadSeeker, size int64) error {
	return l.Store.ImportInput(jobID, r, size)
}

// OpenOutput opens the job's output in the data dir (one per job, whatever the attempt).
func (l localObjects) OpenOutput(_ context.Context, jobID string, _ int) (io.ReadCloser, int64, error) {
	f, out, err := l.Store.OpenOutput(jobID)
	if err != nil {
		return nil, 0, err
	}
	return f, out.Bytes, nil
}

// ImportInput stores a fetched input as the job's upload and its sealed copy in the bucket.
func (o s3Objects) ImportInput(ctx context.Context, jobID string, r io.ReadSeeker, size int64) error {
	_, err := o.s.ImportInput(ctx, jobID, r, size)
	return err
}

// OpenOutput streams the output of the job's attempt from the bucket.
func (o s3Objects) OpenOutput(ctx context.Context, jobID string, attempt int) (io.ReadCloser, int64, error) {
	return o.s.OpenOutput(ctx, jobID, attempt)
}
