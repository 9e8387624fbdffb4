package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// jobView is the Job object of SPEC.md plus DESIGN.md's fields.
type jobView struct {
	ID           string           `json:"id"`
	Status       string           `json:"status"`
	InputFormat  string           `json:"input_format"`
	TargetFormat string           `json:"target_format"`
	InputBytes   *int64           `json:"input_bytes"`
	Options      *convert.Options `json:"options"`
	Attempt      int              `json:"attempt"`
	ErrorCode    *string          `json:"error_code"`
	ErrorMessage *string          `json:"error_message"`
	ErrorReason  *string          `json:"error_reason"`
	ExpiresAt    time.Time        `json:"expires_at"`
	CreatedAt    time.Time        `json:"created_at"`
	StartedAt    *time.Time       `json:"started_at"`
	FinishedAt   *time.Time       `json:"finished_at"`
	Output       *outputView      `json:"output"`
	// Progress is present on running jobs only: 0 to 1 where the converter counts, else null.
	Progress json.RawMessage `json:"progress,omitempty"`
	// SourceURL (redacted) and DeliverTo are present only on jobs created with them.
	SourceURL string       `json:"source_url,omitempty"`
	DeliverTo *deliverView `json:"deliver_to,omitempty"`
}

// outputView carries a succeeded job's result with a freshly signed download URL.
type outputView struct {
	Bytes        int64  `json:"bytes"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresIn int    `json:"url_expires_in"`
	// Warnings lists what the conversion could not keep; always an array, empty when nothing.
	Warnings []warningView `json:"warnings"`
	// Verified is true when the output passed its format's re-read check.
	Verified bool `json:"verified"`
	// Cached is true when the output came from the conversion cache instead of a conversion.
	Cached bool `json:"cached"`
}

// warningView is one entry of output.warnings: a stable code and a message for people.
type warningView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// reservationView is the response of create.
type reservationView struct {
	Job             jobView `json:"job"`
	UploadURL       string  `json:"upload_url"`
	UploadExpiresIn int     `json:"upload_expires_in"`
}

// reservation is create's answer for j: the Job and its upload URL, which takes uploads for
// UploadURLTTL after the job's creation (SPEC: 900 s). A signed URL's expiry is a whole second,
// so it is rounded up: cut down to a second, the URL would stop up to a second early.
func (s *Server) reservation(j store.Job) reservationView {
	expires := j.CreatedAt.Add(UploadURLTTL)
	if whole := expires.Truncate(time.Second); whole.Before(expires) {
		expires = whole.Add(time.Second)
	}
	return reservationView{
		Job:             s.viewJob(j),
		UploadURL:       s.cfg.Blobs.UploadURL(j.ID, j.InputBytes, expires),
		UploadExpiresIn: int(UploadURLTTL / time.Second),
	}
}

type jobListView struct {
	Data    []jobView `json:"data"`
	HasMore bool      `json:"has_more"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) viewJob(j store.Job) jobView {
	v := jobView{
		ID:           j.ID,
		Status:       j.Status,
		InputFormat:  j.InputFormat,
		TargetFormat: j.TargetFormat,
		InputBytes:   &j.InputBytes,
		Options:      decodeOptions(j.Options),
		Attempt:      j.Attempt,
		ErrorCode:    optString(j.ErrorCode),
		ErrorMessage: optString(j.ErrorMessage),
		ErrorReason:  optString(j.ErrorReason),
		ExpiresAt:    j.ExpiresAt,
		CreatedAt:    j.CreatedAt,
		StartedAt:    j.StartedAt,
		FinishedAt:   j.FinishedAt,
		DeliverTo:    viewDeliverTo(j.DeliverTo),
	}
	if j.SourceURL != "" {
		v.SourceURL = webhook.RedactURL(j.SourceURL)
	}
	if j.Status == store.StatusRunning {
		v.Progress = s.progressJSON(j)
	}
	if j.Status == store.StatusSucceeded && j.Output != nil {
		// The URL is signed anew on every read, and never outlives the job.
		expires := s.now().Add(DownloadURLTTL).Truncate(time.Second)
		if j.ExpiresAt.Before(expires) {
			expires = j.ExpiresAt.Truncate(time.Second)
		}
		v.Output = &outputView{
			Bytes:        j.Output.Bytes,
			SHA256:       j.Output.SHA256,
			URL:          s.cfg.Blobs.DownloadURL(j, expires),
			URLExpiresIn: int(DownloadURLTTL / time.Second),
			Warnings:     make([]warningView, len(j.Output.Warnings)),
			Verified:     j.Output.Verified,
			Cached:       j.Output.Cached,
		}
		for i, w := range j.Output.Warnings {
			v.Output.Warnings[i] = warningView(w)
		}
	}
	return v
}

// createJobRequest is the body of POST /v1/jobs; pointers and raw values let each problem get
// its own code (missing or mistyped: invalid_request; too big: file_too_large).
type createJobRequest struct {
	InputFormat  *string           `json:"input_format"`
	TargetFormat *string           `json:"target_format"`
	InputBytes   json.RawMessage   `json:"input_bytes"`
	Options      *convert.Options  `json:"options"`
	WebhookURL   *string           `json:"webhook_url"`
	Preset       *string           `json:"preset"`
	SourceURL    *string           `json:"source_url"`
	DeliverTo    *deliverToRequest `json:"deliver_to"`
	InputSHA256  *string           `json:"input_sha256"`
	Cache        *bool             `json:"cache"`
}

// decodeOptions reads the options a job was created with; nil when there were none.
func decodeOptions(raw json.RawMessage) *convert.Options {
	if len(raw) == 0 {
		return nil
	}
	var o convert.Options
	if json.Unmarshal(raw, &o) != nil || o.IsZero() {
		return nil
	}
	return &o
}

// createJob is a create body as its one decode read it; every field the handler uses comes
// from here, never from another look at the raw bytes.
type createJob struct {
	input, target string
	size          int64
	opts          convert.Options
	webhookURL    *string           // nil when absent
	preset        *string           // nil when absent
	sourceURL     *string           // nil when absent
	deliverTo     *deliverToRequest // nil when absent
	inputSHA256   *string           // nil when absent
	cache         *bool             // nil when absent (true)
}

// parseCreateJob validates a create body in the order the contract ranks problems; options are
// checked against the target later, once the formats are known to exist.
func parseCreateJob(body []byte) (createJob, error) {
	if input, target, size, ok := parsePlainCreate(body); ok {
		return createJob{input: input, target: target, size: size}, nil
	}
	var req createJobRequest
	input, target, size, opts, err := parseCreateJobInto(body, &req)
	return createJob{input: input, target: target, size: size, opts: opts, webhookURL: req.WebhookURL, preset: req.Preset,
		sourceURL: req.SourceURL, deliverTo: req.DeliverTo, inputSHA256: req.InputSHA256, cache: req.Cache}, err
}

// parseCreateJobStrict is parseCreateJob with encoding/json, for every body.
func parseCreateJobStrict(body []byte) (input, target string, size int64, opts convert.Options, err error) {
	var req createJobRequest
	return parseCreateJobInto(body, &req)
}

// parseCreateJobInto is parseCreateJobStrict decoding into req, for the fields it does not return.
func parseCreateJobInto(body []byte, req *createJobRequest) (input, target string, size int64, opts convert.Options, err error) {
	if err := decodeStrict(body, req); err != nil {
		return "", "", 0, opts, err
	}
	if req.Options != nil {
		opts = *req.Options
	}
	input, target, size, err = checkCreateFields(*req)
	return input, target, size, opts, err
}

// parsePlainCreate reads the create body nearly every client sends, in a single pass without
// allocating more than the two format strings: an object with exactly input_format and
// target_format (non-empty strings of printable ASCII without escapes) and input_bytes (a
// plain integer in range), in any order, with JSON whitespace anywhere. Anything else (options,
// another key, a duplicate, a problem to report) is left to the strict decoder: ok is false.
// When ok, the result is the strict decoder's (FuzzParsePlainCreate). encoding/json's
// reflection and big.Float sizes were 7% of the server's CPU per create under apibench.
func parsePlainCreate(body []byte) (input, target string, size int64, ok bool) {
	i := 0
	ws := func() {
		for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
			i++
		}
	}
	// str reads a string of printable ASCII without escapes; the opening quote is at i.
	str := func() (string, bool) {
		if i >= len(body) || body[i] != '"' {
			return "", false
		}
		start := i + 1
		for i = start; i < len(body) && body[i] != '"'; i++ {
			if c := body[i]; c < 0x20 || c == '\\' || c >= 0x7f {
				return "", false
			}
		}
		if i >= len(body) {
			return "", false
		}
		i++
		return string(body[start : i-1]), true
	}
	ws()
	if i >= len(body) || body[i] != '{' {
		return "", "", 0, false
	}
	i++
	var seen [3]bool
	for {
		ws()
		key, good := str()
		ws()
		if !good || i >= len(body) || body[i] != ':' {
			return "", "", 0, false
		}
		i++
		ws()
		switch key {
		case "input_format", "target_format":
			v, good := str()
			if !good || v == "" {
				return "", "", 0, false
			}
			if key == "input_format" && !seen[0] {
				input, seen[0] = v, true
			} else if key == "target_format" && !seen[1] {
				target, seen[1] = v, true
			} else {
				return "", "", 0, false
			}
		case "input_bytes":
			start := i
			for i < len(body) && body[i] >= '0' && body[i] <= '9' && i-start < 12 {
				size = size*10 + int64(body[i]-'0')
				i++
			}
			if seen[2] || i == start || body[start] == '0' || size > store.MaxInputBytes {
				return "", "", 0, false
			}
			seen[2] = true
		default:
			return "", "", 0, false
		}
		ws()
		if i >= len(body) {
			return "", "", 0, false
		}
		if body[i] == '}' {
			i++
			break
		}
		if body[i] != ',' {
			return "", "", 0, false
		}
		i++
	}
	ws()
	if i != len(body) || !seen[0] || !seen[1] || !seen[2] {
		return "", "", 0, false
	}
	return input, target, size, true
}

func checkCreateFields(req createJobRequest) (input, target string, size int64, err error) {
	switch {
	case req.InputFormat == nil || *req.InputFormat == "":
		return "", "", 0, errorf(CodeInvalidRequest, "input_format is required: a format id from GET /v1/formats")
	case req.TargetFormat == nil || *req.TargetFormat == "":
		// Required, as SPEC.md says, also beside a preset (where it must be the preset's target).
		return "", "", 0, errorf(CodeInvalidRequest, "target_format is required: a format id from GET /v1/formats (with a preset, the preset's target)")
	case len(req.InputBytes) == 0 || string(req.InputBytes) == "null":
		return "", "", 0, errorf(CodeInvalidRequest, "input_bytes is required: the exact size of the file in bytes (with source_url, the most the fetch may bring)")
	}
	n, ok := parseInteger(req.InputBytes)
	switch {
	case !ok:
		return "", "", 0, errorf(CodeInvalidRequest, "input_bytes must be a whole number of bytes")
	case n.Cmp(big.NewInt(1)) < 0:
		return "", "", 0, errorf(CodeInvalidRequest, "input_bytes must be at least 1")
	case n.Cmp(big.NewInt(store.MaxInputBytes)) > 0:
		return "", "", 0, errorf(CodeFileTooLarge, fmt.Sprintf("input_bytes is over the %d byte maximum", store.MaxInputBytes))
	}
	if req.TargetFormat != nil {
		target = *req.TargetFormat
	}
	return *req.InputFormat, target, n.Int64(), nil
}

func (s *Server) handleCreateJob(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	idemKey, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readJSONBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	parsed, err := parseCreateJob(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	params, err := s.createParams(r, key, parsed, idemKey != "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	params.IdempotencyKey = idemKey
	params.Gate = writeGate(r) // the key's check and write count, in the create's round trip
	s.checkCachedOutput(r.Context(), params)
	began := s.now()
	job, resp, err := s.cfg.Store.CreateJob(params, func(j store.Job) (store.Response, error) {
		// A source_url job has started already: its upload URL, issued as SPEC.md says for
		// every job, takes nothing (the upload is sealed).
		body, err := marshalJSON(s.reservation(j))
		return store.Response{Status: http.StatusOK, Body: body}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if job.ID != "" && !job.CreatedAt.Before(began.Truncate(time.Microsecond)) {
		s.logTransition(r, job)
		if job.Status == store.StatusQueued {
			s.cfg.Workers.Notify() // a source_url job: queued at create
		}
	}
	writeRaw(w, resp.Status, resp.Body)
}

// idempotencyKey is the request's Idempotency-Key header ("" when absent), at most 255
// characters; create and batch create read it alike.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if len(k) > 255 {
		return "", errorf(CodeInvalidRequest, "Idempotency-Key is longer than 255 characters")
	}
	return k, nil
}

// createParams validates one create body (parsed) for key in the order the contract ranks
// problems and returns the store's parameters; hashRequest fills RequestHash, which only a
// repeat under the same Idempotency-Key compares. POST /v1/jobs and each item of
// POST /v1/batches go through it.
func (s *Server) createParams(r *http.Request, key store.APIKey, parsed createJob, hashRequest bool) (store.CreateJobParams, error) {
	input, target, size, opts := parsed.input, parsed.target, parsed.size, parsed.opts
	// The idempotency hash covers the request as sent: a preset's name, not what it expands to.
	reqTarget, reqOpts := target, opts
	preset, err := s.createPreset(parsed.preset, key, &target, &opts)
	if err != nil {
		return store.CreateJobParams{}, err
	}
	if _, err := s.cfg.Catalog.Path(input, target); err != nil {
		return store.CreateJobParams{}, &Error{Code: CodeUnsupportedFormat, Err: err,
			Message: fmt.Sprintf("%s cannot be converted to %s; GET /v1/formats/%s lists its targets", strconv.Quote(input), strconv.Quote(target), input)}
	}
	targetFormat, _ := s.cfg.Catalog.Format(target)
	inputFormat, _ := s.cfg.Catalog.Format(input)
	if err := errors.Join(opts.ValidateConversion(inputFormat, targetFormat, s.cfg.Catalog.PagesApply(input, target)), opts.ValidateInput(input), opts.ValidateSource(inputFormat),
		s.cfg.Catalog.ValidatePages(input, target, opts)); err != nil {
		return store.CreateJobParams{}, &Error{Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	}
	if input == target && len(opts.ChangingOptions()) == 0 {
		// SPEC: the target "must differ from input_format", and create's 400s are
		// unsupported_format or file_too_large; a same-format transform is an addition.
		return store.CreateJobParams{}, errorf(CodeUnsupportedFormat, fmt.Sprintf("converting %s to %s changes nothing without an option; set one of: %s",
			input, target, strings.Join(convert.SameFormatOptions(targetFormat), ", ")))
	}
	webhookURL, err := s.createWebhookURL(r, parsed.webhookURL)
	if err != nil {
		return store.CreateJobParams{}, err
	}
	if webhookURL != "" && s.cfg.Webhooks == nil {
		return store.CreateJobParams{}, errorf(CodeInvalidRequest, "webhook_url is not available on this server")
	}
	var sourceURL string
	if parsed.sourceURL != nil {
		if err := checkRemoteURL("source_url", *parsed.sourceURL); err != nil {
			return store.CreateJobParams{}, err
		}
		sourceURL = *parsed.sourceURL
	}
	deliverTo, err := checkDeliverTo(parsed.deliverTo)
	if err != nil {
		return store.CreateJobParams{}, err
	}
	var rawOpts json.RawMessage
	if !opts.IsZero() {
		rawOpts, _ = json.Marshal(opts) // canonical: same options, same bytes, same idempotency hash
	}
	inputSHA256, err := checkInputSHA256(parsed.inputSHA256, sourceURL)
	if err != nil {
		return store.CreateJobParams{}, err
	}
	if err := s.storage.err(s.now()); err != nil {
		return store.CreateJobParams{}, &Error{Code: CodeStorageUnavailable, Message: "object storage is not answering; retry with backoff", Err: err}
	}
	params := store.CreateJobParams{
		AccountID:    key.AccountID,
		InputFormat:  input,
		TargetFormat: target,
		InputBytes:   size,
		Options:      rawOpts,
		WebhookURL:   webhookURL,
		SourceURL:    sourceURL,
		DeliverTo:    deliverTo,
		InputSHA256:  inputSHA256,
	}
	// A job that fetches its input or delivers its output takes no part in the cache: a hit
	// would skip the fetch or the delivery.
	if sourceURL == "" && deliverTo == nil && (parsed.cache == nil || *parsed.cache) {
		params.CacheBase = s.cacheBase(key.AccountID, input, target, rawOpts)
	}
	if hashRequest {
		// Only a repeat under the same Idempotency-Key compares requests.
		hashed := fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s", input, target, size, rawOpts)
		if preset != "" {
			reqRaw, _ := json.Marshal(reqOpts)
			hashed = fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s\x00preset=%s", input, reqTarget, size, reqRaw, preset)
		}
		if webhookURL != "" {
			hashed = fmt.Appendf(hashed, "\x00%s", webhookURL)
		}
		hashed = append(hashed, remoteHash(sourceURL, deliverTo)...)
		if inputSHA256 != "" || parsed.cache != nil {
			hashed = fmt.Appendf(hashed, "\x00sha256=%s\x00cache=%s", inputSHA256, params.CacheBase)
		}
		hash := sha256.Sum256(hashed)
		params.RequestHash = hex.EncodeToString(hash[:])
	}
	return params, nil
}

// logTransition logs a job's move to its current status, caused by request r, with extra
// attributes after the job's.
func (s *Server) logTransition(r *http.Request, job store.Job, extra ...slog.Attr) {
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	var buf [6]slog.Attr
	attrs := AppendJobAttrs(append(buf[:0], slog.String("request_id", requestID(r))), job)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "job transition", append(attrs, extra...)...)
}

// AppendJobAttrs appends what every "job transition" log line says of the job (id, attempt,
// status, account), for the API's lines and the workers' alike.
func AppendJobAttrs(attrs []slog.Attr, job store.Job) []slog.Attr {
	return append(attrs, slog.String("job_id", job.ID), slog.Int("attempt", job.Attempt),
		slog.String("status", job.Status), slog.String("account_id", job.AccountID))
}

// movedSince reports whether t (a transition's time) is at or after began, i.e. whether this
// request made the transition rather than finding it done.
func movedSince(t *time.Time, began time.Time) bool {
	return t != nil && !t.Before(began.Truncate(time.Microsecond))
}

func (s *Server) handleGetJob(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	var wait time.Duration
	q, err := strictQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > int(maxWait/time.Second) {
			s.writeError(w, r, errorf(CodeInvalidRequest, "wait must be a whole number of seconds from 0 to 60"))
			return
		}
		wait = time.Duration(n) * time.Second
	}
	// changed_from=STATUS returns as soon as the job's status is no longer STATUS, so a client
	// sees every move (queued, running, done) without polling. A finished job is answered at
	// once: its status never changes again.
	changedFrom := r.URL.Query().Get("changed_from")
	if changedFrom != "" && !validStatus(changedFrom) {
		s.writeError(w, r, errorf(CodeInvalidRequest, "changed_from must be one of created, queued, running, succeeded, failed, cancelled"))
		return
	}
	id := ps.ByName("id")
	if wait > 0 {
		if !s.waits.acquire(key.ID) {
			wait = 0 // the key holds MaxWaitsPerKey polls: answer as it is (?wait is a hint)
		} else {
			defer s.waits.release(key.ID)
		}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Subscribe before reading, so a change between the read and the wait is not missed.
		var changed <-chan struct{}
		var release func()
		var job store.Job
		if jr := takeJobRead(r, id); jr != nil { // read with the key (withJobKey)
			changed, release, job, err = jr.changed, jr.release, jr.job, jr.err
		} else {
			changed, release = s.cfg.Store.WaitChange(id)
			job, err = s.cfg.Store.Job(key.AccountID, id)
		}
		if err != nil || job.Finished() || wait == 0 || (changedFrom != "" && job.Status != changedFrom) {
			release()
			if err != nil {
				s.writeError(w, r, err)
			} else {
				writeJSON(w, http.StatusOK, s.viewJob(job))
			}
			return
		}
		select {
		case <-changed:
			release()
		case <-deadline.C:
			release()
			wait = 0
		case <-r.Context().Done():
			release()
			return
		}
	}
}

func (s *Server) handleListJobs(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	q, err := strictQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := store.ListParams{Limit: 20, StartingAfter: q.Get("starting_after"), Status: q.Get("status")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.writeError(w, r, errorf(CodeInvalidRequest, "limit must be a whole number from 1 to 100"))
			return
		}
		p.Limit = n
	}
	switch p.Status {
	case "", store.StatusCreated, store.StatusUploaded, store.StatusQueued, store.StatusRunning,
		store.StatusSucceeded, store.StatusFailed, store.StatusCancelled:
	default:
		s.writeError(w, r, errorf(CodeInvalidRequest, "status must be one of created, queued, running, succeeded, failed, cancelled"))
		return
	}
	jobs, more, err := s.cfg.Store.ListJobs(key.AccountID, p)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, r, &Error{Code: CodeInvalidRequest, Message: "starting_after names no job of this account", Err: err})
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := jobListView{Data: make([]jobView, 0, len(jobs)), HasMore: more}
	for _, j := range jobs {
		out.Data = append(out.Data, s.viewJob(j))
	}
	writeJSON(w, http.StatusOK, out)
}

// validStatus reports whether v is a job status of the contract.
func validStatus(v string) bool {
	switch v {
	case store.StatusCreated, store.StatusUploaded, store.StatusQueued, store.StatusRunning,
		store.StatusSucceeded, store.StatusFailed, store.StatusCancelled:
		return true
	}
	return false
}

func (s *Server) handleStartJob(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	id := ps.ByName("id")
	// Seal reads nothing but the upload's size, so it runs first; StartJob checks that the job
	// is the key's and still created (an already started one comes back unchanged).
	began := s.now()
	var job store.Job
	started := false // Seal called start: err is the job store's
	err := s.cfg.Blobs.Seal(id, func(up store.Upload) error {
		var err error
		started = true
		up.Gate = writeGate(r) // the key's check and write count, in the start's round trip
		job, err = s.cfg.Store.StartSealedJob(key.AccountID, id, up)
		return err
	})
	if !started {
		// No upload, or storage failed: the job's own state comes first (not the key's, or
		// expired: 404; already started: safe to repeat).
		job, jobErr := s.cfg.Store.Job(key.AccountID, id)
		switch {
		case jobErr != nil:
			s.writeError(w, r, jobErr)
		case job.Status != store.StatusCreated:
			writeJSON(w, http.StatusOK, s.viewJob(job))
		default:
			apiErr := asAPIError(err)
			if apiErr.Code == CodeInternal {
				apiErr = &Error{Code: CodeStorageUnavailable, Message: "object storage did not answer; retry with backoff", Err: err}
			}
			s.writeError(w, r, apiErr)
		}
		return
	}
	if errors.Is(err, store.ErrSizeMismatch) && movedSince(job.FinishedAt, began) {
		s.logTransition(r, job, slog.String("reason", CodeSizeMismatch))
	}
	if errors.Is(err, store.ErrChecksumMismatch) && movedSince(job.FinishedAt, began) {
		s.logTransition(r, job, slog.String("reason", CodeChecksumMismatch))
	}
	if err == nil && job.Status == store.StatusSucceeded && movedSince(job.FinishedAt, began) {
		s.logTransition(r, job, slog.String("reason", "cache_hit"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if job.Status == store.StatusQueued {
		if movedSince(job.StartedAt, began) {
			s.logTransition(r, job)
		}
		s.cfg.Workers.Notify()
	}
	writeJSON(w, http.StatusOK, s.viewJob(job))
}

func (s *Server) handleCancelJob(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	began := s.now()
	job, err := s.cfg.Store.CancelJobWith(key.AccountID, ps.ByName("id"), writeGate(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if movedSince(job.FinishedAt, began) {
		s.logTransition(r, job, slog.String("reason", "cancel_request"))
	}
	s.cfg.Workers.Cancel(job.ID)
	writeJSON(w, http.StatusOK, s.viewJob(job))
}
