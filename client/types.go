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
	// CodePresetsOnly: the key may only create jobs from a preset (CreateJobRequest.Preset).
	CodePresetsOnly        ErrorCode = "presets_only"
	CodeTooManyConnections ErrorCode = "too_many_connections"
	// CodeQueueFull: a start while the account has its max_queued jobs queued (429 with
	// Retry-After; the job stays as it was, start it again).
	CodeQueueFull ErrorCode = "queue_full"
	// CodeConnectionFailed is no answer of the server: OnRetry sees it (with Status 0) before
	// an upload is sent again after its connection failed.
	CodeConnectionFailed ErrorCode = "connection_failed"
)

// The error codes of a failed job.
const (
	CodeConversionFailed   ErrorCode = "conversion_failed"
	CodeExpiredOrExhausted ErrorCode = "expired_or_exhausted"
	CodeWorkerShutdown     ErrorCode = "worker_shutdown"
)

// WarningCode names what a succeeded conversion could not keep (Output.Warnings). Later
// versions of the service may add codes; treat an unknown one as a plain warning.
type WarningCode string

// The warning codes of a succeeded job's output (the OpenAPI document's WarningCode).
const (
	WarnSheetsDropped       WarningCode = "sheets_dropped"        // a workbook's other sheets were not converted
	WarnGlyphsMissing       WarningCode = "glyphs_missing"        // characters no font can draw show as boxes
	WarnTextNotRendered     WarningCode = "text_not_rendered"     // text was not drawn
	WarnMetadataDropped     WarningCode = "metadata_dropped"      // EXIF, XMP or other metadata was not kept
	WarnColorProfileDropped WarningCode = "color_profile_dropped" // an ICC profile was not kept
	WarnAnimationDropped    WarningCode = "animation_dropped"     // only the first frame was kept
	WarnAlphaDropped        WarningCode = "alpha_dropped"         // transparency was flattened onto a background
	WarnBitDepthReduced     WarningCode = "bit_depth_reduced"     // samples lost bits (16-bit to 8-bit)
	WarnImagesDropped       WarningCode = "images_dropped"        // embedded images were left out
	WarnLinksDropped        WarningCode = "links_dropped"         // hyperlinks were reduced to their text
	WarnFormattingDropped   WarningCode = "formatting_dropped"    // styles, formulas or merged cells became values
	WarnPermissionsDropped  WarningCode = "permissions_dropped"   // file modes were not kept
	WarnPagesDropped        WarningCode = "pages_dropped"         // only one page of a document became an image
	WarnImageResized        WarningCode = "image_resized"         // shrunk to the largest size the target holds
	WarnQualityReduced      WarningCode = "quality_reduced"       // quality lowered to fit max_bytes
)

// Warning is one thing a succeeded conversion could not keep.
type Warning struct {
	Code    WarningCode `json:"code"`
	Message string      `json:"message"`
}
