package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/store"
)

// BatchStore is what the batch endpoints need from the job database (both stores implement it).
type BatchStore interface {
	CreateBatch(p store.CreateBatchParams, render func(store.Batch, []store.Job) (store.Response, error)) (store.Batch, []store.Job, store.Response, error)
	Batch(accountID, batchID string) (store.Batch, []store.Job, error)
	CancelBatch(accountID, batchID string) (store.Batch, []store.Job, error)
}

// maxBatchBodyBytes bounds a batch's body: 500 create bodies with options fit in it.
const maxBatchBodyBytes = 1 << 20

// batchStartWorkers is how many of a batch's jobs its start seals at once: enough to share
// the embedded store's group commits, few enough to leave object storage to others.
const batchStartWorkers = 4

// Batch statuses: open until every job of the batch reached a final state.
const (
	batchOpen     = "open"
	batchFinished = "finished"
)

// batchReservationView is the answer of POST /v1/batches: the batch id and one create answer
// per item, in the request's order.
type batchReservationView struct {
	ID   string            `json:"id"`
	Jobs []reservationView `json:"jobs"`
}

// batchCounts counts a batch's jobs by state.
type batchCounts struct {
	Created   int `json:"created"`
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// batchView is a batch as GET /v1/batches/{id} shows it.
type batchView struct {
	ID         string      `json:"id"`
	Status     string      `json:"status"`
	Total      int         `json:"total"`
	Counts     batchCounts `json:"counts"`
	JobIDs     []string    `json:"job_ids"`
	CreatedAt  time.Time   `json:"created_at"`
	ExpiresAt  time.Time   `json:"expires_at"`
	FinishedAt *time.Time  `json:"finished_at"`
}

func viewBatch(b store.Batch, jobs []store.Job) batchView {
	v := batchView{ID: b.ID, Status: batchOpen, Total: len(b.JobIDs), JobIDs: b.JobIDs,
		CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt, FinishedAt: b.FinishedAt}
	if v.JobIDs == nil {
		v.JobIDs = []string{}
	}
	if b.FinishedAt != nil {
		v.Status = batchFinished
	}
	for _, j := range jobs {
		switch j.Status {
		case store.StatusCreated, store.StatusUploaded:
			v.Counts.Created++
		case store.StatusQueued:
			v.Counts.Queued++
		case store.StatusRunning:
			v.Counts.Running++
		case store.StatusSucceeded:
			v.Counts.Succeeded++
		case store.StatusFailed:
			v.Counts.Failed++
		case store.StatusCancelled:
			v.Counts.Cancelled++
		}
	}
	return v
}

// BatchJSON renders a finished batch as batch.finished carries it (the dispatcher's renderer).
func (s *Server) BatchJSON(snap store.BatchSnapshot) ([]byte, error) {
	return reflectJSON(struct {
		Batch batchView `json:"batch"`
	}{viewBatch(snap.Batch, snap.Jobs)})
}

func (s *Server) routeBatches(handle func(method, path string, h httprouter.Handle)) {
	handle("POST", "/v1/batches", s.withKey(true, s.handleCreateBatch))
	handle("GET", "/v1/batches/:id", s.withKey(false, s.handleGetBatch))
	handle("POST", "/v1/batches/:id/start", s.withKey(true, s.handleStartBatch))
	handle("POST", "/v1/batches/:id/cancel", s.withKey(true, s.handleCancelBatch))
	for _, method := range []string{"GET", "HEAD"} {
		handle(method, "/v1/batches/:id/archive", s.withKey(false, s.handleBatchArchive))
	}
}

// itemError names the batch item a problem is in, keeping its code.
func itemError(i int, err error) error {
	e := asAPIError(err)
	return &Error{Code: e.Code, Status: e.Status, Message: fmt.Sprintf("jobs[%d]: %s", i, e.Message), Err: e.Err}
}

// parseBatch reads a batch body: {"jobs": [create bodies]}, each validated as POST /v1/jobs
// validates its body. The first bad item refuses the whole batch, naming its index.
func (s *Server) parseBatch(r *http.Request, key store.APIKey, body []byte, hashRequest bool) (store.CreateBatchParams, error) {
	items, err := decodeBatch(body)
	if err != nil {
		return store.CreateBatchParams{}, err
	}
	p := store.CreateBatchParams{AccountID: key.AccountID, Jobs: make([]store.CreateJobParams, len(items))}
	hash := sha256.New()
	for i, parsed := range items {
		jp, err := s.createParams(r, key, parsed, hashRequest)
		if err != nil {
			return store.CreateBatchParams{}, itemError(i, err)
		}
		p.Jobs[i] = jp
		fmt.Fprintf(hash, "%s\n", jp.RequestHash)
	}
	if hashRequest {
		p.RequestHash = "batch:" + hex.EncodeToString(hash.Sum(nil))
	}
	return p, nil
}

// decodeBatch reads a batch body's shape and each item as a create body, before anything is
// looked up: 1 to MaxBatchJobs objects, the first bad one named by its index.
func decodeBatch(body []byte) ([]createJob, error) {
	var req struct {
		Jobs *[]json.RawMessage `json:"jobs"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if req.Jobs == nil {
		return nil, errorf(CodeInvalidRequest, "jobs is required: an array of create bodies, as POST /v1/jobs takes")
	}
	if err := store.CheckBatchSize(len(*req.Jobs)); err != nil {
		return nil, &Error{Code: CodeInvalidRequest, Err: err,
			Message: fmt.Sprintf("a batch has 1 to %d jobs, this one %d; split it into several batches", store.MaxBatchJobs, len(*req.Jobs))}
	}
	items := make([]createJob, len(*req.Jobs))
	for i, raw := range *req.Jobs {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return nil, itemError(i, errorf(CodeInvalidRequest, "each item is a create body: a JSON object"))
		}
		parsed, err := parseCreateJob(raw)
		if err != nil {
			return nil, itemError(i, err)
		}
		items[i] = parsed
	}
	return items, nil
}

func (s *Server) handleCreateBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	idemKey, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readJSONBodyMax(w, r, maxBatchBodyBytes)
	var maxBytes *http.MaxBytesError
	if errors.As(err, &maxBytes) {
		err = &Error{Code: CodeRequestTooLarge, Message: fmt.Sprintf("a batch's body is at most %d KiB; split it into several batches", maxBatchBodyBytes>>10), Err: err}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.parseBatch(r, key, body, idemKey != "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p.IdempotencyKey = idemKey
	began := s.now()
	batch, jobs, resp, err := s.cfg.Store.CreateBatch(p, func(b store.Batch, jobs []store.Job) (store.Response, error) {
		v := batchReservationView{ID: b.ID, Jobs: make([]reservationView, len(jobs))}
		for i, j := range jobs {
			v.Jobs[i] = s.reservation(j)
		}
		body, err := marshalJSON(v)
		return store.Response{Status: http.StatusOK, Body: body}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if batch.ID != "" && !batch.CreatedAt.Before(began.Truncate(time.Microsecond)) {
		queued := false
		for _, j := range jobs {
			s.logTransition(r, j, slog.String("batch_id", batch.ID))
			queued = queued || j.Status == store.StatusQueued
		}
		if queued {
			s.cfg.Workers.Notify() // source_url items: queued at create
		}
	}
	writeRaw(w, resp.Status, resp.Body)
}

func (s *Server) handleGetBatch(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	q, err := strictQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > int(maxWait/time.Second) {
			s.writeError(w, r, errorf(CodeInvalidRequest, "wait must be a whole number of seconds from 0 to 60"))
			return
		}
		wait = time.Duration(n) * time.Second
	}
	id := ps.ByName("id")
	if wait > 0 {
		if !s.waits.acquire(key.ID) {
			wait = 0
		} else {
			defer s.waits.release(key.ID)
		}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Subscribe before reading: the finish of the batch's last job signals the batch id.
		changed, release := s.cfg.Store.WaitChange(id)
		batch, jobs, err := s.cfg.Store.Batch(key.AccountID, id)
		if err != nil || batch.FinishedAt != nil || wait == 0 {
			release()
			if err != nil {
				s.writeError(w, r, batchNotFound(err))
			} else {
				writeJSON(w, http.StatusOK, viewBatch(batch, jobs))
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

// batchNotFound words a missing batch as a batch.
func batchNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Code: CodeNotFound, Message: "no such batch, or it expired", Err: err}
	}
	return err
}

// handleStartBatch starts every created job of the batch whose upload is there, as
// POST /v1/jobs/{id}/start would, and answers the batch. A job with nothing uploaded stays
// created (upload it and start again: repeating the call is safe); one whose upload has the
// wrong size is cancelled, as start does. A storage fault or the spend cap stops the call with
// that error; what was started stays started.
func (s *Server) handleStartBatch(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	id := ps.ByName("id")
	_, jobs, err := s.cfg.Store.Batch(key.AccountID, id)
	if err != nil {
		s.writeError(w, r, batchNotFound(err))
		return
	}
	began := s.now()
	work := make(chan store.Job)
	var mu sync.Mutex
	var stop error
	queued := 0
	var wg sync.WaitGroup
	for range min(batchStartWorkers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				job, err := s.startBatchJob(key, j.ID)
				mu.Lock()
				switch {
				case err == nil && job.Status == store.StatusQueued:
					queued++
					if movedSince(job.StartedAt, began) {
						s.logTransition(r, job, slog.String("batch_id", id))
					}
				case errors.Is(err, store.ErrSizeMismatch):
					s.logTransition(r, job, slog.String("reason", CodeSizeMismatch), slog.String("batch_id", id))
				case err != nil && stop == nil:
					stop = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		mu.Lock()
		stopped := stop != nil
		mu.Unlock()
		if stopped || r.Context().Err() != nil {
			break
		}
		if j.Status == store.StatusCreated {
			work <- j
		}
	}
	close(work)
	wg.Wait()
	if queued > 0 {
		s.cfg.Workers.Notify()
	}
	if stop != nil {
		s.writeError(w, r, stop)
		return
	}
	batch, jobs, err := s.cfg.Store.Batch(key.AccountID, id)
	if err != nil {
		s.writeError(w, r, batchNotFound(err))
		return
	}
	writeJSON(w, http.StatusOK, viewBatch(batch, jobs))
}

// startBatchJob seals and starts one job of a batch. Nothing uploaded is not an error here:
// the job stays created. The size mismatch comes back as store.ErrSizeMismatch with the
// cancelled job.
func (s *Server) startBatchJob(key store.APIKey, jobID string) (store.Job, error) {
	var job store.Job
	started := false
	err := s.cfg.Blobs.Seal(jobID, func(up store.Upload) error {
		var err error
		started = true
		job, err = s.cfg.Store.StartSealedJob(key.AccountID, jobID, up)
		return err
	})
	if !started {
		apiErr := asAPIError(err)
		if apiErr.Code == CodeStorageUnavailable && errors.Is(err, blobstore.ErrNotFound) {
			return store.Job{}, nil
		}
		if apiErr.Code == CodeInternal {
			return store.Job{}, &Error{Code: CodeStorageUnavailable, Message: "object storage did not answer; retry with backoff", Err: err}
		}
		return store.Job{}, apiErr
	}
	return job, err
}

func (s *Server) handleCancelBatch(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	began := s.now()
	batch, jobs, err := s.cfg.Store.CancelBatch(key.AccountID, ps.ByName("id"))
	if err != nil {
		s.writeError(w, r, batchNotFound(err))
		return
	}
	for _, j := range jobs {
		if j.Status == store.StatusCancelled && movedSince(j.FinishedAt, began) {
			s.logTransition(r, j, slog.String("reason", "cancel_request"), slog.String("batch_id", batch.ID))
			s.cfg.Workers.Cancel(j.ID)
		}
	}
	writeJSON(w, http.StatusOK, viewBatch(batch, jobs))
}
