package blobstore

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"
)

// Handler returns the object-storage HTTP handler: PUT /uploads/{id} with an
// upload URL, GET and HEAD /outputs/{id} with a download URL. Transfers that stop making
// progress are cut after DefaultProgressTimeout.
func (s *Store) Handler() http.Handler { return s.HandlerWith(HandlerConfig{}) }

// HandlerWith is Handler tuned by c.
func (s *Store) HandlerWith(c HandlerConfig) http.Handler {
	timeout := c.progressTimeout()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveHTTP(w, r, timeout) })
}

func (s *Store) serveHTTP(w http.ResponseWriter, r *http.Request, progressTimeout time.Duration) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.RawPath != "" { // a re-escaped path is not the URL we signed
		s.writeError(w, r, ErrNotFound)
		return
	}
	req, err := s.verifyURL(r.Method, r.URL.Path, r.URL.RawQuery)
	if err == nil {
		if req.upload {
			err = s.put(w, r, req, progressTimeout)
		} else {
			err = s.get(w, r, req, progressTimeout)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
	}
}

// put streams the body to a temp file and renames it to uploads/{id}. Nothing
// but the complete, synced body of the signed size is ever renamed into place. A body that
// stops making progress for progressTimeout is cut (408 transfer_stalled, connection
// closed), its temp file removed and the URL free for a retry.
func (s *Store) put(w http.ResponseWriter, r *http.Request, req signedRequest, progressTimeout time.Duration) error {
	if r.ContentLength < 0 {
		return errLengthRequired
	}
	if r.ContentLength != req.size {
		return clientErrorf(errSizeMismatch,
			"This URL takes exactly %d bytes, the size reserved for the job, but Content-Length is %d. Send the file that was reserved, or reserve a new job for this one.",
			req.size, r.ContentLength)
	}
	// Refused before a byte of the body is read: a dead job takes no upload.
	if err := s.checkUpload(req.id); err != nil {
		return err
	}
	if !s.beginUpload(req.id) {
		return errUploadInProgress
	}
	defer s.endUpload(req.id)

	cw, err := s.createTemp("put-" + req.id)
	if err != nil {
		return fmt.Errorf("%w: upload %s: %w", ErrStorage, req.id, err)
	}
	defer cw.discard()

	// size+1 so a body longer than announced is noticed, not silently cut.
	body := newProgressReader(w, r.Body, progressTimeout)
	region := trace.StartRegion(r.Context(), "blob.put.receive")
	_, err = cw.ReadFrom(io.LimitReader(body, req.size+1))
	region.End()
	switch {
	case cw.err != nil:
		return fmt.Errorf("%w: upload %s: %w", ErrStorage, req.id, cw.err)
	case body.stalled:
		w.Header().Set("Connection", "close")
		return clientErrorf(errTransferStalled,
			"The upload stopped after %d of %d bytes: no progress for %s. Send the whole file again.", cw.n, req.size, progressTimeout)
	case err != nil || cw.n < req.size:
		return clientErrorf(errSizeMismatch,
			"The upload ended after %d of the %d bytes announced. Send the whole file again.", cw.n, req.size)
	case cw.n > req.size:
		return clientErrorf(errSizeMismatch,
			"The upload is longer than the %d bytes reserved for the job. Send the file that was reserved.", req.size)
	}
	region = trace.StartRegion(r.Context(), "blob.put.sync")
	err = cw.finish(s.metaAttrs)
	region.End()
	if err != nil {
		return fmt.Errorf("%w: upload %s: %w", ErrStorage, req.id, err)
	}

	region = trace.StartRegion(r.Context(), "blob.put.publish")
	unlock := s.lockID(req.id)
	err = s.commitUpload(req.id, cw.f.Name())
	unlock()
	region.End()
	if err != nil {
		return err
	}
	cw.kept = true

	sum := cw.sum()
	w.Header().Set("ETag", `"`+sum+`"`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}{cw.n, sum})
}

// commitUpload renames a complete temp file to uploads/{id}, replacing any
// earlier upload, unless the job started (Seal), finished or is gone. The caller
// holds the id lock, which Seal holds while the job store records the start.
func (s *Store) commitUpload(id, tmp string) error {
	if err := s.checkUpload(id); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.uploads, id)); err != nil {
		return fmt.Errorf("%w: upload %s: %w", ErrStorage, id, err)
	}
	if err := syncDir(s.uploads); err != nil {
		return fmt.Errorf("%w: upload %s: %w", ErrStorage, id, err)
	}
	return nil
}

// checkUpload asks Config.JobState whether the job still takes an upload, before
// the body streams and again at commit under the id lock: a started job's upload
// is sealed, a finished (or cancelled, or expired) job and a job that no longer
// exists take nothing. Without Config.JobState every upload is taken.
func (s *Store) checkUpload(id string) error {
	if s.jobState == nil {
		return nil
	}
	state, err := s.jobState(id)
	if err != nil {
		return fmt.Errorf("%w: upload %s: ask the job store about the job: %w", ErrStorage, id, err)
	}
	switch state {
	case JobOpen:
		return nil
	case JobStarted:
		return errSealed
	case JobFinished:
		return errJobFinished
	default:
		return clientErrorf(ErrNotFound, "The job this URL was issued for no longer exists (it expired or was deleted). Reserve a new job.")
	}
}

// beginUpload claims the id for one streaming PUT; false if another holds it.
func (s *Store) beginUpload(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.inflight[id]; busy {
		return false
	}
	s.inflight[id] = struct{}{}
	return true
}

func (s *Store) endUpload(id string) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}

// get serves outputs/{id} with http.ServeContent, which handles Range,
// conditional requests, HEAD and sendfile.
func (s *Store) get(w http.ResponseWriter, r *http.Request, req signedRequest, progressTimeout time.Duration) error {
	f, side, err := s.openOutput(req.id)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: download %s: %w", ErrStorage, req.id, err)
	}
	if fi.Size() != side.Bytes || req.size != side.Bytes {
		return clientErrorf(ErrNotFound,
			"No output of the signed size exists at this URL. Ask the API for a fresh download URL.")
	}
	h := w.Header()
	h.Set("ETag", `"`+side.SHA256+`"`)
	ct := side.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	cd := "attachment"
	if side.Filename != "" {
		if v := mime.FormatMediaType("attachment", map[string]string{"filename": side.Filename}); v != "" {
			cd = v
		}
	}
	h.Set("Content-Disposition", cd)
	// The URL is a capability: shared caches must not keep the file, and a
	// re-run job may replace it, so browsers revalidate with the ETag.
	h.Set("Cache-Control", "private, no-cache")
	// A reader that stops is cut after progressTimeout without progress.
	pw := &progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: progressTimeout}
	defer pw.done()
	defer trace.StartRegion(r.Context(), "blob.get.send").End()
	http.ServeContent(&jsonErrors{ResponseWriter: pw, s: s, r: r}, r, "", fi.ModTime(), f)
	return nil
}

// jsonErrors turns the plain-text errors http.ServeContent writes into the
// store's JSON errors, and passes everything else through (including
// io.ReaderFrom, which gives sendfile).
type jsonErrors struct {
	http.ResponseWriter
	s      *Store
	r      *http.Request
	failed bool
}

func (j *jsonErrors) WriteHeader(code int) {
	if code < 400 {
		j.ResponseWriter.WriteHeader(code)
		return
	}
	j.failed = true
	var err error
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		err = errRangeNotSatisfiable
	case http.StatusPreconditionFailed:
		err = errPreconditionFailed
	default:
		err = fmt.Errorf("%w: serving output failed with status %d", ErrStorage, code)
	}
	j.s.writeError(j.ResponseWriter, j.r, err)
}

func (j *jsonErrors) Write(p []byte) (int, error) {
	if j.failed {
		return len(p), nil
	}
	return j.ResponseWriter.Write(p)
}

func (j *jsonErrors) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := j.ResponseWriter.(io.ReaderFrom); ok && !j.failed {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{j}, src)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }
