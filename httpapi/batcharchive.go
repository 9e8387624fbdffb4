package httpapi

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// ManifestName is the archive's first entry: every item's outcome.
const ManifestName = "manifest.json"

// manifestView is manifest.json: the batch and one entry per item, in the request's order.
type manifestView struct {
	BatchID string         `json:"batch_id"`
	Status  string         `json:"status"`
	Items   []manifestItem `json:"items"`
}

// manifestItem is one item's outcome; file names its entry in the archive when it succeeded.
type manifestItem struct {
	Index        int     `json:"index"`
	JobID        string  `json:"job_id"`
	Status       string  `json:"status"`
	InputFormat  string  `json:"input_format"`
	TargetFormat string  `json:"target_format"`
	File         *string `json:"file"`
	Bytes        *int64  `json:"bytes"`
	SHA256       *string `json:"sha256"`
	// Warnings lists what a succeeded conversion could not keep; null unless it succeeded.
	Warnings     []warningView `json:"warnings"`
	ErrorCode    *string       `json:"error_code"`
	ErrorReason  *string       `json:"error_reason"`
	ErrorMessage *string       `json:"error_message"`
}

// archiveEntry is one output in the archive.
type archiveEntry struct {
	name string
	job  store.Job
	size int64
}

// archivePlan is what an archive holds, decided before a byte is written: its manifest (in
// memory: a few hundred bytes an item) and the outputs it streams one after the other.
type archivePlan struct {
	manifest []byte
	entries  []archiveEntry
	modified time.Time
}

// planArchive builds the manifest and the list of outputs of a batch's jobs. Entries are named
// by the item's index, zero-padded so they sort, and the target's extension.
func (s *Server) planArchive(b store.Batch, jobs []store.Job) (archivePlan, error) {
	byID := make(map[string]store.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	width := len(strconv.Itoa(max(len(b.JobIDs)-1, 0)))
	m := manifestView{BatchID: b.ID, Status: batchOpen, Items: make([]manifestItem, 0, len(b.JobIDs))}
	if b.FinishedAt != nil {
		m.Status = batchFinished
	}
	plan := archivePlan{modified: b.CreatedAt}
	if b.FinishedAt != nil {
		plan.modified = *b.FinishedAt
	}
	for i, id := range b.JobIDs {
		j, ok := byID[id]
		if !ok {
			continue
		}
		item := manifestItem{Index: i, JobID: j.ID, Status: j.Status, InputFormat: j.InputFormat, TargetFormat: j.TargetFormat,
			ErrorCode: optString(j.ErrorCode), ErrorReason: optString(j.ErrorReason), ErrorMessage: optString(j.ErrorMessage)}
		if j.Status == store.StatusSucceeded && j.Output != nil {
			name := fmt.Sprintf("%0*d", width, i)
			if f, ok := s.cfg.Catalog.Format(j.TargetFormat); ok && len(f.Extensions) > 0 {
				name += "." + f.Extensions[0]
			}
			item.File, item.Bytes, item.SHA256 = &name, &j.Output.Bytes, &j.Output.SHA256
			item.Warnings = make([]warningView, len(j.Output.Warnings))
			for k, w := range j.Output.Warnings {
				item.Warnings[k] = warningView(w)
			}
			plan.entries = append(plan.entries, archiveEntry{name: name, job: j, size: j.Output.Bytes})
		}
		m.Items = append(m.Items, item)
	}
	body, err := reflectJSON(m)
	if err != nil {
		return archivePlan{}, err
	}
	plan.manifest = append(body, '\n')
	return plan, nil
}

// size is the exact length of the zip write produces, or -1 when it needs ZIP64 records
// (over 4 GiB or 65535 entries), whose length this does not predict. Each entry is stored
// (outputs are mostly compressed already, and a stored entry's length is known before its
// bytes are read): a local header with the extended-timestamp field, the data, a data
// descriptor, and a central directory record; then the end record. TestBatchArchive_Size
// holds it to archive/zip's output.
func (p archivePlan) size() int64 {
	const localHeader, descriptor, centralHeader, endRecord = 30, 16, 46, 22
	var timestampExtra int64 // archive/zip writes the extended timestamp only for a set time
	if !p.modified.IsZero() {
		timestampExtra = 9
	}
	entry := func(name string, n int64) (local, central int64) {
		return localHeader + int64(len(name)) + timestampExtra + n + descriptor, centralHeader + int64(len(name)) + timestampExtra
	}
	local, central := entry(ManifestName, int64(len(p.manifest)))
	for _, e := range p.entries {
		if e.size >= math.MaxUint32 {
			return -1
		}
		l, c := entry(e.name, e.size)
		local, central = local+l, central+c
	}
	if len(p.entries)+1 >= math.MaxUint16 || local >= math.MaxUint32 || local+central >= math.MaxUint32 {
		return -1
	}
	return local + central + endRecord
}

// etag names the finished archive's bytes: the manifest holds every output's SHA-256.
func (p archivePlan) etag() string {
	h := sha256.Sum256(p.manifest)
	return `"` + hex.EncodeToString(h[:16]) + `"`
}

// write streams the zip to w: the manifest, then each output read from object storage as it
// is copied, so memory stays one copy buffer whatever the archive's size.
func (p archivePlan) write(ctx context.Context, w io.Writer, open func(context.Context, store.Job) (io.ReadCloser, error)) error {
	zw := zip.NewWriter(w)
	add := func(name string, body func(io.Writer) error) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: p.modified})
		if err != nil {
			return err
		}
		return body(fw)
	}
	err := add(ManifestName, func(fw io.Writer) error {
		_, err := fw.Write(p.manifest)
		return err
	})
	if err != nil {
		return err
	}
	for _, e := range p.entries {
		err := add(e.name, func(fw io.Writer) error {
			rc, err := open(ctx, e.job)
			if err != nil {
				return fmt.Errorf("open the output of %s: %w", e.job.ID, err)
			}
			defer rc.Close()
			n, err := io.Copy(fw, io.LimitReader(rc, e.size+1))
			if err == nil && n != e.size {
				err = fmt.Errorf("the output of %s is %d bytes, recorded %d", e.job.ID, n, e.size)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// handleBatchArchive streams a zip of the batch's succeeded outputs and manifest.json. Once
// the batch is finished its bytes never change: the answer has a length, an ETag and serves
// Range (a range re-reads the archive up to its start, streaming, and sends only the range).
// Before that it streams what has succeeded so far, without them.
func (s *Server) handleBatchArchive(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	if _, err := strictQuery(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	batch, jobs, err := s.cfg.Store.Batch(key.AccountID, ps.ByName("id"))
	if err != nil {
		s.writeError(w, r, batchNotFound(err))
		return
	}
	plan, err := s.planArchive(batch, jobs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", `attachment; filename="`+batch.ID+`.zip"`)
	h.Set("X-Content-Type-Options", "nosniff")
	size := plan.size()
	if batch.FinishedAt != nil && size >= 0 {
		h.Set("ETag", plan.etag())
		rs := &archiveReader{size: size, gen: func(ctx context.Context, w io.Writer) error {
			return plan.write(ctx, w, s.openOutput)
		}, ctx: r.Context()}
		defer rs.Close()
		http.ServeContent(w, r, "", plan.modified, rs)
		if err := rs.failure(); err != nil {
			s.log.ErrorContext(r.Context(), "batch archive cut short", "request_id", requestID(r), "batch_id", batch.ID, "error", err)
		}
		return
	}
	if size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if err := plan.write(r.Context(), w, s.openOutput); err != nil && r.Context().Err() == nil {
		s.log.ErrorContext(r.Context(), "batch archive cut short", "request_id", requestID(r), "batch_id", batch.ID, "error", err)
		panic(http.ErrAbortHandler) // the client must not take a truncated zip for a whole one
	}
}

// openOutput opens a succeeded job's output in object storage (the attempt that wrote it).
func (s *Server) openOutput(ctx context.Context, j store.Job) (io.ReadCloser, error) {
	if j.Output == nil {
		return nil, fmt.Errorf("job %s has no output", j.ID)
	}
	rc, _, err := s.cfg.Blobs.OpenOutput(ctx, j.ObjectID(), j.Output.Attempt)
	return rc, err
}

// archiveReader is a finished archive as an io.ReadSeeker for http.ServeContent, without the
// archive in memory: a read at an offset runs the archive's writer into a pipe and skips to
// the offset, and a seek elsewhere starts over.
type archiveReader struct {
	size int64
	gen  func(ctx context.Context, w io.Writer) error
	ctx  context.Context
	off  int64 // where the next Read reads
	pos  int64 // where pr is
	pr   *io.PipeReader
	mu   sync.Mutex
	err  error // the writer's failure, for the log
}

// failure is the archive writer's failure, if it had one.
func (a *archiveReader) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Read reads from the archive at the current offset.
func (a *archiveReader) Read(p []byte) (int, error) {
	if a.off >= a.size {
		return 0, io.EOF
	}
	if a.pr == nil || a.pos != a.off {
		a.Close()
		pr, pw := io.Pipe()
		a.pr, a.pos = pr, 0
		go func() {
			err := a.gen(a.ctx, pw)
			if err != nil && !errors.Is(err, io.ErrClosedPipe) {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
			pw.CloseWithError(err)
		}()
		if a.off > 0 {
			n, err := io.CopyN(io.Discard, pr, a.off)
			a.pos = n
			if err != nil {
				return 0, fmt.Errorf("skip to byte %d of the archive: %w", a.off, err)
			}
		}
	}
	if rest := a.size - a.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := a.pr.Read(p)
	a.off += int64(n)
	a.pos += int64(n)
	if err == io.EOF && a.off < a.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Seek moves the offset; the archive is read again from its start on the next Read if needed.
func (a *archiveReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += a.off
	case io.SeekEnd:
		offset += a.size
	default:
		return 0, errors.New("archive: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("archive: negative position")
	}
	a.off = offset
	return offset, nil
}

// Close stops the archive's writer, if one runs.
func (a *archiveReader) Close() error {
	if a.pr != nil {
		a.pr.Close()
		a.pr = nil
	}
	return nil
}
