package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
)

// Stable error codes of the API. SPEC.md fixes the first group; DESIGN.md adds the rest.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnsupportedFormat    = "unsupported_format"
	CodeFileTooLarge         = "file_too_large"
	CodeSizeMismatch         = "size_mismatch"
	CodeUnauthorized         = "unauthorized"
	CodeLimitReached         = "limit_reached"
	CodeNotFound             = "not_found"
	CodeRateLimited          = "rate_limited"
	CodeStorageUnavailable   = "storage_unavailable"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeInvalidState         = "invalid_state"
	CodeIdempotencyMismatch  = "idempotency_mismatch"
	CodeRequestTooLarge      = "request_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeInternal             = "internal_error"
	CodeNotImplemented       = "not_implemented"
	// CodeChecksumMismatch is a start whose upload differs from create's input_sha256.
	CodeChecksumMismatch = "checksum_mismatch"
)

// Error is an API error: a stable code, a message for the client, and an internal cause for the logs.
type Error struct {
	Code    string
	Message string
	// Status overrides the code's usual status (unauthorized is 401 or 403).
	Status int
	Err    error
}

// Error formats the code, the message and the internal cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an Error with the code's usual status.
func errorf(code, message string) *Error { return &Error{Code: code, Message: message} }

// statusOf is the one place where error codes become HTTP statuses.
func statusOf(e *Error) int {
	if e.Status != 0 {
		return e.Status
	}
	switch e.Code {
	case CodeInvalidRequest, CodeUnsupportedFormat, CodeFileTooLarge, CodeSizeMismatch:
		return http.StatusBadRequest
	case CodeUnauthorized, CodePresetsOnly:
		return http.StatusForbidden
	case CodeLimitReached:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeInvalidState, CodeIdempotencyMismatch, CodeChecksumMismatch:
		return http.StatusConflict
	case CodeRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeRateLimited, CodeQueueFull:
		return http.StatusTooManyRequests
	case CodeStorageUnavailable:
		return http.StatusBadGateway
	case CodeNotImplemented:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

// asAPIError maps any error from the store, the blob store or the converters to an API error.
func asAPIError(err error) *Error {
	var apiErr *Error
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &maxBytes):
		return &Error{Code: CodeRequestTooLarge, Message: "the request body is over the 64 KiB limit", Err: err}
	case errors.Is(err, store.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: "no such job, or it expired", Err: err}
	case errors.Is(err, store.ErrUnauthorized):
		return &Error{Code: CodeUnauthorized, Message: "the API key is invalid or revoked", Err: err}
	case errors.Is(err, store.ErrRateLimited): // a write gate's (gatedResponse answers it with its headers)
		return &Error{Code: CodeRateLimited, Message: "too many writes in one minute for this key; retry after the Retry-After seconds", Err: err}
	case errors.Is(err, store.ErrLimitReached):
		return &Error{Code: CodeLimitReached, Message: "the account's monthly spend cap is reached; raise it or wait for next month", Err: err}
	case errors.Is(err, store.ErrQueueFull):
		return &Error{Code: CodeQueueFull, Message: "the account has max_queued jobs queued; start this job again after the Retry-After seconds, or when some of its queued jobs have started", Err: err}
	case errors.Is(err, store.ErrSizeMismatch):
		return &Error{Code: CodeSizeMismatch, Message: "the uploaded size differs from input_bytes; the job is cancelled, reserve a new one", Err: err}
	case errors.Is(err, store.ErrInvalidState):
		return &Error{Code: CodeInvalidState, Message: "the job has already finished", Err: err}
	case errors.Is(err, store.ErrChecksumMismatch):
		return &Error{Code: CodeChecksumMismatch, Message: "the uploaded bytes' SHA-256 differs from input_sha256; the job is cancelled and its reservation released, reserve a new one", Err: err}
	case errors.Is(err, store.ErrIdempotencyMismatch):
		return &Error{Code: CodeIdempotencyMismatch, Message: "this Idempotency-Key was used with a different request body", Err: err}
	case errors.Is(err, store.ErrInvalidArgument):
		return &Error{Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, store.ErrNotSupported):
		return &Error{Code: CodeNotImplemented, Message: "this server's database does not support this operation", Err: err}
	case errors.Is(err, convert.ErrUnsupported):
		return &Error{Code: CodeUnsupportedFormat, Message: err.Error(), Err: err}
	case errors.Is(err, blobstore.ErrStorage):
		return &Error{Code: CodeStorageUnavailable, Message: "object storage did not answer; retry with backoff", Err: err}
	case errors.Is(err, blobstore.ErrNotFound):
		return &Error{Code: CodeStorageUnavailable, Message: "nothing was uploaded for this job; PUT the file to upload_url, then start again", Err: err}
	default:
		return &Error{Code: CodeInternal, Message: "internal error; the request id identifies it in the server log", Err: err}
	}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError writes err in the API's error shape. Only internal errors are logged as errors.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := asAPIError(err)
	status := statusOf(e)
	if status >= 500 && e.Code != CodeStorageUnavailable && e.Code != CodeNotImplemented {
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r), "error", err)
	} else if e.Err != nil {
		s.log.DebugContext(r.Context(), "request refused", "request_id", requestID(r), "code", e.Code, "error", e.Err)
	}
	if e.Code == CodeQueueFull {
		w.Header().Set("Retry-After", strconv.Itoa(queueFullRetryAfter))
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
}

// marshalJSON encodes v without HTML escaping, so signed URLs keep a literal "&" that shell
// tools can cut out of the body; a view that writes its own JSON (selfEncoder) writes it.
func marshalJSON(v any) ([]byte, error) {
	if se, ok := v.(selfEncoder); ok {
		return se.encodeJSON()
	}
	return reflectJSON(v)
}

// reflectJSON is marshalJSON through encoding/json alone.
func reflectJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON writes v as the response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		slog.Error("encode response", "error", err)
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"could not encode the response"}}`)
	}
	writeRaw(w, status, body)
}

// jsonContentType and noSniff are shared header values: the map holds the same one-element
// slices for every response instead of a new pair each time. Nothing writes into a header
// value in place (Header.Add appends, which copies a full slice; net/http clones the map
// when the header is written), so sharing them is safe.
var (
	jsonContentType = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte("\n"))
}
