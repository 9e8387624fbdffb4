package store

import (
	"encoding/json"
	"errors"
	"time"
)

// Job states, as SPEC.md names them.
const (
	StatusCreated   = "created"
	StatusUploaded  = "uploaded" // reserved by the spec; never used
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Job failure codes, as SPEC.md names them.
const (
	CodeConversionFailed   = "conversion_failed"
	CodeExpiredOrExhausted = "expired_or_exhausted"
	CodeWorkerShutdown     = "worker_shutdown"
)

// Sentinel errors returned by Store methods; httpapi maps each to a status in one place.
var (
	ErrNotFound            = errors.New("not found")
	ErrUnauthorized        = errors.New("API key invalid or revoked")
	ErrLimitReached        = errors.New("spend cap reached")
	ErrSizeMismatch        = errors.New("uploaded size differs from input_bytes")
	ErrInvalidState        = errors.New("job is in the wrong state for this operation")
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	ErrInvalidArgument     = errors.New("invalid argument")
	// ErrChecksumMismatch is a start whose upload's SHA-256 differs from create's
	// input_sha256: the job is cancelled and its reservation released, as for a size mismatch.
	ErrChecksumMismatch = errors.New("uploaded bytes differ from input_sha256")
	// ErrNotSupported is an operation this kind of store does not have (a backup of
	// PostgreSQL through the API); httpapi answers 501 not_implemented.
	ErrNotSupported = errors.New("not supported by this store")
)

// Job is a conversion job as stored.
type Job struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Seq       uint64 `json:"seq"` // creation order within the database
	// PrevJobID is the account's job created before this one, if it still exists: an
	// account's jobs form a list, newest first, that starts at Account.LastJobID.
	PrevJobID    string `json:"-"`
	Status       string `json:"status"`
	InputFormat  string `json:"input_format"`
	TargetFormat string `json:"target_format"`
	InputBytes   int64  `json:"input_bytes"`
	// Options are the conversion options as the client sent them (validated JSON), or nil.
	Options      json.RawMessage `json:"options,omitempty"`
	Attempt      int             `json:"attempt"`
	ErrorCode    string          `json:"error_code,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	// ErrorReason is a finer reason beside ErrorCode (docs/decisions.md: memory_exceeded,
	// worker_crashed, ...), or "".
	ErrorReason string     `json:"error_reason,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Output      *Output    `json:"output,omitempty"`
	// Upload is the sealed input the start recorded, when object storage identifies it by
	// more than its size (S3: ETag, version id); the workers read exactly that object.
	Upload *Upload `json:"upload,omitempty"`
	// SourceURL is where a worker fetches the input (create's source_url) instead of an
	// upload; "" for an uploaded input. Such a job is queued at create.
	SourceURL string `json:"source_url,omitempty"`
	// DeliverTo is where a worker PUTs the output after converting (create's deliver_to), or nil.
	DeliverTo *Delivery `json:"deliver_to,omitempty"`
	// InputSHA256 is the input's SHA-256 (lowercase hex) as create's input_sha256 promised
	// it, checked at start; "" when the client sent none.
	InputSHA256 string `json:"input_sha256,omitempty"`
	// CacheBase is the conversion's part of its cache key (CacheKey): what is converted to
	// what, how, and by which converter versions, without the input; "" when the job neither
	// looks up nor stores a cached output (cache off, "cache": false, an unversioned path).
	CacheBase string `json:"cache_base,omitempty"`
	// HitCents is what a job answered from the conversion cache was charged: the
	// --cache-hit-cents (Options.CacheHitCents) of the moment it was answered. nil for any
	// other job, and for a hit recorded before the price existed: Charge is 1 cent.
	HitCents *int64 `json:"hit_cents,omitempty"`
	// WaitFor is set by ClaimJob and FinishFromCache, not stored: another job with the same
	// cache key is converting, and the worker waits for it (FinishFromCache) instead of
	// converting the same input twice.
	WaitFor string `json:"-"`
}

// Charge is the cents the job's success moves from its reservation to the month's spend:
// its HitCents when the conversion cache answered it, 1 (SPEC.md) otherwise.
func (j Job) Charge() int64 {
	if j.HitCents != nil {
		return *j.HitCents
	}
	return 1
}

// Delivery is a caller's destination for a job's output: a URL the output is PUT to (usually
// a presigned object-storage URL) and the headers sent with it. Nothing else is kept.
type Delivery struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Upload is the object a start sealed: its size and, where object storage has them (S3), the
// ETag and version id that name exactly that object, so a PUT after start changes nothing.
type Upload struct {
	Size int64 `json:"size"`
	// SHA256 is the sealed upload's SHA-256 (lowercase hex) where object storage knows it (the
	// local blob store hashes every upload as it is received); not stored on the job.
	SHA256    string `json:"-"`
	ETag      string `json:"etag,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	// Gate, when set, is the start request's key check and write count, which the store runs
	// before the start in the same transaction (WriteGate); not stored on the job.
	Gate *WriteGate `json:"-"`
}

// Finished reports whether the job reached a final state.
func (j *Job) Finished() bool {
	return j.Status == StatusSucceeded || j.Status == StatusFailed || j.Status == StatusCancelled
}

// holdsReservation reports whether the job's cent is still reserved against its account.
func (j *Job) holdsReservation() bool {
	return j.Status == StatusCreated || j.Status == StatusQueued || j.Status == StatusRunning
}

// Output describes a succeeded job's result file.
type Output struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Attempt is the attempt that wrote the output (set by FinishJob): object storage that
	// keeps outputs per attempt (S3) serves this one.
	Attempt int `json:"attempt,omitempty"`
	// Warnings lists what the conversion could not keep, in the order reported; nil when nothing.
	Warnings []Warning `json:"warnings,omitempty"`
	// Verified is true when the output passed its format's re-read check before the job
	// succeeded (docs/reliability.md, "Outputs checked before success").
	Verified bool `json:"verified,omitempty"`
	// Cached is true when the output was taken from the conversion cache instead of converted
	// for this job (output.cached).
	Cached bool `json:"cached,omitempty"`
	// Object is the job whose stored output holds the bytes when that is another job (a cache
	// hit); "" for the job's own. Outputs held this way are reference-counted (store/cache.go).
	Object string `json:"object,omitempty"`
}

// ObjectID is the job id under which the output's bytes are stored: Object, or the job's own.
func (j *Job) ObjectID() string {
	if j.Output != nil && j.Output.Object != "" {
		return j.Output.Object
	}
	return j.ID
}

// Warning is something a succeeded conversion could not keep: a stable code (convert's
// Warn* constants) and a message for people.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Account is a customer with a monthly spend cap.
type Account struct {
	ID            string           `json:"id"`
	Name          string           `json:"name"`
	SpendCapCents int64            `json:"spend_cap_cents"`
	ReservedCents int64            `json:"reserved_cents"`
	MonthlySpend  map[string]int64 `json:"monthly_spend"` // "2006-01" (UTC) -> cents
	// PurgedSuccesses counts, per month, the cents of succeeded jobs that retention deleted
	// (Job.Charge: one per job, or a cache hit's price), so the ledger
	// stays checkable against the jobs that remain.
	PurgedSuccesses map[string]int64 `json:"purged_successes,omitempty"`
	CreatedAt       time.Time        `json:"created_at"`
	// LastJobID is the account's newest job, the head of its list (Job.PrevJobID); a job
	// that no longer exists ends the list.
	LastJobID string `json:"-"`
	// MaxRunning is the most jobs of the account running at once (claims skip the account
	// meanwhile); nil is no limit.
	MaxRunning *int64 `json:"max_running,omitempty"`
	// MaxQueued is the most jobs of the account queued at once (a start past it is
	// ErrQueueFull); nil is no limit.
	MaxQueued *int64 `json:"max_queued,omitempty"`
}

// SpentCents is the account's spend in the calendar month (UTC) that contains t.
func (a *Account) SpentCents(t time.Time) int64 {
	return a.MonthlySpend[monthOf(t)]
}

// APIKey is a live key's record; only the SHA-256 of the secret is kept.
type APIKey struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Prefix    string     `json:"prefix"`
	Hash      []byte     `json:"hash"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// PresetsOnly limits the key to jobs created from a preset (create's "preset").
	PresetsOnly bool `json:"presets_only,omitempty"`
}

// CreateJobParams is a validated job reservation request.
type CreateJobParams struct {
	AccountID    string
	InputFormat  string
	TargetFormat string
	InputBytes   int64
	Options      json.RawMessage
	// IdempotencyKey, when set, makes a repeat with the same RequestHash replay the first response.
	IdempotencyKey string
	RequestHash    string
	// WebhookURL, when set, also receives the job's events, signed with the account's webhook
	// signing secret (which it must have); the caller checked the URL.
	WebhookURL string
	// SourceURL, when set, is fetched by a worker instead of an upload: the job is created
	// queued (started_at set) and InputBytes is an upper bound on the fetch.
	SourceURL string
	// DeliverTo, when set, receives the output by PUT after the conversion.
	DeliverTo *Delivery
	// InputSHA256, when set, is the input's SHA-256 (lowercase hex): create looks the cache
	// up with it, and start checks the upload against it (ErrChecksumMismatch).
	InputSHA256 string
	// CacheBase, when set, makes the job take part in the conversion cache (Job.CacheBase).
	CacheBase string
	// Gate, when set, is the request's key check and write count, which the store runs
	// before the create in the same transaction (WriteGate); nil when the server counted the
	// write already.
	Gate *WriteGate
}

// Response is a rendered HTTP response kept for idempotent replay.
type Response struct {
	Status int    `json:"status"`
	Body   []byte `json:"body"`
}

// Outcome is how a running job ended, as reported by a worker.
type Outcome struct {
	Output       *Output // set on success
	ErrorCode    string  // set on failure
	ErrorMessage string
	ErrorReason  string // a finer reason beside ErrorCode, or ""
}

// ListParams selects a page of an account's jobs, newest first.
type ListParams struct {
	Limit         int
	StartingAfter string
	Status        string
}

func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }
