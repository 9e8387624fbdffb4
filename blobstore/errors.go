package blobstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"
)

// Sentinel errors returned by Store methods; match them with errors.Is.
var (
	// ErrNotFound means the requested object (upload, input or output) does not exist.
	ErrNotFound = errors.New("blobstore: not found")
	// ErrInvalidID means a job id does not match ^job_[A-Za-z0-9]{1,64}$.
	ErrInvalidID = errors.New("blobstore: invalid job id")
	// ErrStorage wraps every local file-system failure, so callers can answer "storage unavailable".
	ErrStorage = errors.New("blobstore: storage unavailable")
)

// IsStorageFull reports whether err is, or wraps, a file system with no room left for a write:
// no space (ENOSPC), a quota reached (EDQUOT), or a file over the process's size limit
// (EFBIG). The blob store's faults wrap the system's error, so it tells a full disk apart
// from a broken one (EIO, a missing directory), which stays "storage unavailable".
func IsStorageFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// Errors that only the HTTP handler produces; each maps to one row of httpStatus.
var (
	errInvalidRequest      = errors.New("blobstore: malformed signed URL")
	errInvalidSignature    = errors.New("blobstore: invalid signature")
	errURLExpired          = errors.New("blobstore: signed URL expired")
	errMethodNotAllowed    = errors.New("blobstore: method not allowed")
	errLengthRequired      = errors.New("blobstore: Content-Length required")
	errSizeMismatch        = errors.New("blobstore: size mismatch")
	errSealed              = errors.New("blobstore: upload sealed")
	errJobFinished         = errors.New("blobstore: job finished")
	errUploadInProgress    = errors.New("blobstore: upload in progress")
	errTransferStalled     = errors.New("blobstore: transfer stalled")
	errNoMetaAttr          = errors.New("blobstore: no metadata attribute")
	errRangeNotSatisfiable = errors.New("blobstore: range not satisfiable")
	errPreconditionFailed  = errors.New("blobstore: precondition failed")
	errCORSRefused         = errors.New("blobstore: cross-origin request refused")
)

// clientError gives a handler error a message for the client that is more
// specific than the default one of its kind. It never carries internal detail.
type clientError struct {
	kind  error
	msg   string
	allow string // Allow header value, for errMethodNotAllowed
}

func (e *clientError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *clientError) Unwrap() error { return e.kind }

// clientErrorf returns an error of kind whose client message is the formatted text.
func clientErrorf(kind error, format string, args ...any) error {
	return &clientError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// httpStatus is the one place that maps an error to an HTTP status, a stable
// error code and the default message telling the user what to do.
func httpStatus(err error) (status int, code, msg string) {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidID):
		return http.StatusNotFound, "not_found",
			"Nothing exists at this URL. Check that the URL is exactly the one the API returned."
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed",
			"This method is not allowed here: upload URLs take PUT, download URLs take GET or HEAD."
	case errors.Is(err, errInvalidRequest):
		return http.StatusBadRequest, "invalid_request",
			"The URL's query is malformed. Use the signed URL exactly as the API returned it."
	case errors.Is(err, errInvalidSignature):
		return http.StatusForbidden, "invalid_signature",
			"The URL's signature does not match. Use the signed URL exactly as the API returned it, with the method it was issued for."
	case errors.Is(err, errURLExpired):
		return http.StatusForbidden, "url_expired",
			"This signed URL has expired. Ask the API for a new one."
	case errors.Is(err, errLengthRequired):
		return http.StatusLengthRequired, "length_required",
			"Send the file with a Content-Length header equal to the reserved size; chunked uploads are not accepted."
	case errors.Is(err, errSizeMismatch):
		return http.StatusBadRequest, "size_mismatch",
			"The body must be exactly the number of bytes reserved for this job."
	case errors.Is(err, errSealed):
		return http.StatusConflict, "upload_sealed",
			"The job was started, so its upload is sealed. Reserve a new job to upload another file."
	case errors.Is(err, errJobFinished):
		return http.StatusConflict, "job_finished",
			"The job has finished, was cancelled or expired, so it takes no upload. Reserve a new job to convert a file."
	case errors.Is(err, errUploadInProgress):
		return http.StatusConflict, "upload_in_progress",
			"Another upload to this URL is still in progress. Wait for it to finish, then retry if needed."
	case errors.Is(err, errTransferStalled):
		return http.StatusRequestTimeout, "transfer_stalled",
			"The transfer made no progress for too long and was cut. Send the whole file again."
	case errors.Is(err, errRangeNotSatisfiable):
		return http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable",
			"The requested byte range lies outside the file. Request a range within its size, or omit the Range header."
	case errors.Is(err, errPreconditionFailed):
		return http.StatusPreconditionFailed, "precondition_failed",
			"The file no longer matches the If-Match or If-Unmodified-Since condition. Fetch it again without the condition."
	case errors.Is(err, errCORSRefused):
		return http.StatusForbidden, "cors_refused",
			"This origin or method may not use object storage from a browser."
	case errors.Is(err, ErrStorage) && IsStorageFull(err):
		return http.StatusInsufficientStorage, "insufficient_storage",
			"Object storage has no room left for this file. Retry later, once the operator has freed space."
	case errors.Is(err, ErrStorage):
		return http.StatusServiceUnavailable, "storage_unavailable",
			"Object storage could not complete the request. Retry with backoff."
	default:
		return http.StatusInternalServerError, "internal_error",
			"Object storage failed unexpectedly. Retry with backoff."
	}
}

// writeError writes err as a JSON error body; server-side failures are logged,
// client mistakes are not worth more than a debug line.
func (s *Store) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := httpStatus(err)
	var ce *clientError
	if errors.As(err, &ce) {
		msg = ce.msg
		if ce.allow != "" {
			w.Header().Set("Allow", ce.allow)
		}
	}
	// r.URL.Path only: the query holds the signature, which must never be logged.
	if status >= 500 {
		s.log.Error("blobstore: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	} else {
		s.log.Debug("blobstore: request rejected", "method", r.Method, "path", r.URL.Path, "status", status, "code", code)
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Del("Content-Disposition")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = code, msg
	_ = json.NewEncoder(w).Encode(body) // the client may be gone; nothing to do about it
}
