package client

// Status is a job's state.
type Status string

// The states of a job (SPEC.md's Job object).
const (
	StatusCreated   Status = "created"
	StatusUploaded  Status = "uploaded"
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Finished reports whether s is a final state: succeeded, failed or cancelled.
func (s Status) Finished() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// ErrorCode is a stable error code: an error response's code (APIError.Code) or a failed job's
// error_code (Job.ErrorCode).
type ErrorCode string

// The codes of error responses.
const (
	CodeInvalidRequest       ErrorCode = "invalid_request"
	CodeUnsupportedFormat    ErrorCode = "unsupported_format"
	CodeFileTooLarge         ErrorCode = "file_too_large"
	CodeSizeMismatch         ErrorCode = "size_mismatch"
	CodeUnauthorized         ErrorCode = "unauthorized"
	CodeLimitReached         ErrorCode = "limit_reached"
	CodeNotFound             ErrorCode = "not_found"
	CodeRateLimited          ErrorCode = "rate_limited"
	CodeStorageUnavailable   ErrorCode = "storage_unavailable"
	CodeMethodNotAllowed     ErrorCode = "method_not_allowed"
	CodeInvalidState         ErrorCode = "invalid_state"
	CodeIdempotencyMismatch  ErrorCode = "idempotency_mismatch"
	CodeRequestTooLarge      ErrorCode = "request_too_large"
	CodeUnsupportedMediaType ErrorCode = "unsupported_media_type"
	CodeInternal             ErrorCode = "internal_error"
)

// The error codes of a failed job.
const (
	CodeConversionFailed   ErrorCode = "conversion_failed"
	CodeExpiredOrExhausted ErrorCode = "expired_or_exhausted"
	CodeWorkerShutdown     ErrorCode = "worker_shutdown"
)
