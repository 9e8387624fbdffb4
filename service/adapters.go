package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/trace"
	"sync"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/worker"
)

// Worker processes write outputs straight into the files object storage keeps them in until
// Commit: the local blob store's temporary file, S3's scratch file.
var (
	_ worker.DirectOutput = (*pendingOutput)(nil)
	_ worker.DirectOutput = (*s3Output)(nil)
)

// jobQueue lets the worker pool claim and finish jobs in the store. It sees every outcome, so
// it logs the workers' transitions and feeds the conversion metrics.
type jobQueue struct {
	store   JobStore
	blobs   ObjectStorage
	log     *slog.Logger
	metrics *metrics
	// cancel stops a running conversion (the pool's Cancel); set once the pool exists.
	cancel func(jobID string) bool
	// maxAttempts bounds the attempts of a job whose output could not be stored.
	maxAttempts int
	// jobDone (optional) is told of every finished conversion: the memory trimmer's JobDone.
	jobDone func()

	mu     sync.Mutex
	claims map[claimKey]time.Time // when each running attempt was claimed
	// beats stops the heartbeat of each running attempt, on a leased store.
	beats map[claimKey]func()
	// running is the job record of each job this node claimed, by id (the newest attempt):
	// the workers open the input its start sealed (Job.Upload) and write the attempt's output.
	running map[string]store.Job
	// inputFaults are the attempts whose input object storage could not deliver: their
	// conversion_failed outcome is storage's fault, so the job is requeued instead.
	inputFaults map[claimKey]bool
	// outputFaults are the first fault of the blob store under each attempt's output, which
	// says whether the disk was full (storageReason).
	outputFaults map[claimKey]error
}

type claimKey struct {
	jobID   string
	attempt int
}

func newJobQueue(st JobStore, blobs ObjectStorage, log *slog.Logger, m *metrics, maxAttempts int) *jobQueue {
	return &jobQueue{store: st, blobs: blobs, log: log, metrics: m, maxAttempts: maxAttempts, claims: map[claimKey]time.Time{}, beats: map[claimKey]func(){},
		running: map[string]store.Job{}, inputFaults: map[claimKey]bool{}, outputFaults: map[claimKey]error{}}
}

// Claim moves the oldest queued job to running and remembers when, for the duration metric.
// A job whose identical twin is converting (single flight, Job.WaitFor) waits for it and is
// answered from the cache, and the next job is claimed (cache.go).
func (q *jobQueue) Claim(ctx context.Context) (convert.Task, bool, error) {
	var job store.Job
	for {
		var ok bool
		var err error
		region := trace.StartRegion(ctx, "job.claim")
		job, ok, err = q.store.ClaimJob()
		region.End()
		if err != nil || !ok {
			return convert.Task{}, false, err
		}
		q.mu.Lock()
		q.claims[claimKey{job.ID, job.Attempt}] = time.Now()
		q.running[job.ID] = job
		q.mu.Unlock()
		q.startHeartbeat(job.ID, job.Attempt)
		logTransition(q.log, job)
		if job.WaitFor == "" {
			break
		}
		if answered, err := q.awaitTwin(ctx, &job); err != nil {
			return convert.Task{}, false, err
		} else if !answered {
			break // convert it after all
		}
	}
	task := convert.Task{JobID: job.ID, InputFormat: job.InputFormat, TargetFormat: job.TargetFormat, Attempt: job.Attempt}
	if len(job.Options) > 0 {
		if err := json.Unmarshal(job.Options, &task.Options); err != nil {
			// Validated at create, so only a damaged record gets here; the converter sees defaults.
			q.log.Error("job options unreadable", "job_id", job.ID, "error", err)
		}
	}
	return task, true, nil
}

// Finish records a worker's outcome in the store, logs the transition and counts the conversion.
// An output the blob store could not keep (convert.CodeStorageError) is not the input's fault:
// the job goes back to the queue until --max-attempts, and the fault is counted.
func (q *jobQueue) Finish(_ context.Context, o convert.Outcome) error {
	q.mu.Lock()
	inputFault := q.inputFaults[claimKey{o.Task.JobID, o.Task.Attempt}]
	q.mu.Unlock()
	if inputFault && o.Code == convert.CodeConversionFailed {
		o.Code, o.Message = convert.CodeStorageError, "object storage could not deliver the input"
	}
	if o.Code == convert.CodeStorageError {
		return q.requeue(o)
	}
	if o.Code == convert.CodeWorkerCrashed {
		if o.Task.Attempt < q.maxAttempts {
			return q.requeue(o)
		}
		// Its last attempt: it ends as a job whose server crashed every time would.
		o.Code, o.Reason = store.CodeExpiredOrExhausted, "worker_crashed"
		o.Message = fmt.Sprintf("the worker process died during each of %d attempts (--max-attempts %d)", o.Task.Attempt, q.maxAttempts)
	}
	outcome := store.Outcome{ErrorCode: o.Code, ErrorMessage: o.Message, ErrorReason: o.Reason}
	if o.Code == "" && o.Output != nil {
		outcome.Output = &store.Output{Bytes: o.Output.Bytes, SHA256: o.Output.SHA256, Verified: o.Output.Verified}
		for _, w := range o.Output.Warnings {
			outcome.Output.Warnings = append(outcome.Output.Warnings, store.Warning{Code: w.Code, Message: w.Message})
		}
	}
	q.stopHeartbeat(o.Task.JobID, o.Task.Attempt)
	region := trace.StartRegion(context.Background(), "job.finish")
	job, err := q.store.FinishJob(o.Task.JobID, o.Task.Attempt, outcome)
	region.End()
	q.observe(o, err)
	if err != nil {
		if o.Output != nil && (errors.Is(err, store.ErrNotFound) || (errors.Is(err, store.ErrInvalidState) && !q.shared())) {
			// Cancelled or expired meanwhile: the result has no job to belong to. On a shared
			// store a refused attempt may be a stale one whose job runs again (same files), so
			// its files stay until retention deletes the job.
			if derr := q.blobs.Delete(o.Task.JobID); derr != nil {
				q.log.Warn("delete orphaned output", "job_id", o.Task.JobID, "error", derr)
			}
		}
		return err
	}
	if job.ErrorCode != "" {
		logTransition(q.log, job, slog.String("error_code", job.ErrorCode))
	} else {
		logTransition(q.log, job)
	}
	return nil
}

// requeue returns a job whose output could not be stored to the queue, or fails it
// conversion_failed, saying why, once its attempts are used up.
func (q *jobQueue) requeue(o convert.Outcome) error {
	if q.metrics != nil && o.Code == convert.CodeStorageError {
		q.metrics.storageErrors.WithLabelValues("output").Inc()
	}
	q.mu.Lock()
	fault := q.outputFaults[claimKey{o.Task.JobID, o.Task.Attempt}]
	q.mu.Unlock()
	q.stopHeartbeat(o.Task.JobID, o.Task.Attempt)
	job, requeued, err := q.store.RequeueJob(o.Task.JobID, o.Task.Attempt, q.maxAttempts, storageReason(fault, o.Message))
	q.observe(o, err)
	if err != nil {
		return err
	}
	reason := o.Code
	switch {
	case requeued:
	case !time.Now().Before(job.ExpiresAt):
		reason = "expired"
	default:
		reason = o.Code + "_max_attempts"
	}
	logTransition(q.log, job, slog.String("reason", reason))
	return nil
}

// storageReason is what a job whose output could not be stored is told (its error_message if
// no attempt could): "storage full" when the blob store's disk had no room (ENOSPC, EDQUOT,
// EFBIG), else "storage unavailable" and what the worker reported.
func storageReason(fault error, message string) string {
	if fault != nil && blobstore.IsStorageFull(fault) {
		return "storage full: the service's disk has no room left for the output; the operator must free space"
	}
	return "storage unavailable: " + message
}

// noteOutputFault remembers the first fault of the blob store under an attempt's output.
func (q *jobQueue) noteOutputFault(key claimKey, err error) {
	q.mu.Lock()
	if _, ok := q.outputFaults[key]; !ok {
		q.outputFaults[key] = err
	}
	q.mu.Unlock()
}

// observe counts a conversion's outcome and its time since the claim.
func (q *jobQueue) observe(o convert.Outcome, finishErr error) {
	claimed, ok := q.dropClaim(claimKey{o.Task.JobID, o.Task.Attempt})
	if q.jobDone != nil {
		q.jobDone()
	}
	if q.metrics == nil {
		return
	}
	var d time.Duration
	if ok {
		d = time.Since(claimed)
	}
	outcome := outcomeSucceeded
	switch {
	case errors.Is(finishErr, store.ErrInvalidState):
		outcome = outcomeCancelled
	case errors.Is(finishErr, store.ErrNotFound):
		outcome = outcomeExpired
	case finishErr != nil:
		outcome = outcomeError
	case o.Code != "":
		outcome = o.Code
	}
	q.metrics.conversion(o.Task.InputFormat, o.Task.TargetFormat, outcome, d)
	switch {
	case o.Reason == convert.ReasonOutputInvalid:
		q.metrics.outputCheck(o.Task.TargetFormat, "invalid")
	case o.Code == "" && o.Output != nil && o.Output.Verified:
		q.metrics.outputCheck(o.Task.TargetFormat, "verified")
	case o.Code == "" && o.Output != nil:
		q.metrics.outputCheck(o.Task.TargetFormat, "unchecked")
	}
}

// logTransition logs a job's move to its current status with its id and attempt, and extra
// attributes after them.
func logTransition(log *slog.Logger, job store.Job, extra ...slog.Attr) {
	var buf [5]slog.Attr
	attrs := httpapi.AppendJobAttrs(buf[:0], job)
	log.LogAttrs(context.Background(), slog.LevelInfo, "job transition", append(attrs, extra...)...)
}

// jobFiles lets the worker pool read inputs and write outputs in object storage.
type jobFiles struct {
	blobs ObjectStorage
	queue *jobQueue
	// shared: the job store is shared by several nodes, where a job whose outcome was refused
	// may be running again as a newer attempt on the same files.
	shared bool
	// remote fetches source_url inputs and delivers to deliver_to (remote.go).
	remote *remoteIO
}

// claimed is the record of the job as this node claimed it (only its id when unknown).
func (f jobFiles) claimed(jobID string) store.Job {
	if f.queue != nil {
		f.queue.mu.Lock()
		defer f.queue.mu.Unlock()
		if j, ok := f.queue.running[jobID]; ok {
			return j
		}
	}
	return store.Job{ID: jobID}
}

// OpenInput opens the input the job's start sealed. A fault of object storage is remembered,
// so that the attempt is retried rather than failed.
func (f jobFiles) OpenInput(jobID string) (*os.File, error) {
	job := f.claimed(jobID)
	region := trace.StartRegion(context.Background(), "job.open_input")
	in, err := f.blobs.OpenInput(job)
	region.End()
	if err != nil && isInputFault(err) && f.queue != nil {
		f.queue.mu.Lock()
		f.queue.inputFaults[claimKey{job.ID, job.Attempt}] = true
		f.queue.mu.Unlock()
	}
	return in, err
}

// CreateOutput starts the output of the job's claimed attempt in object storage. The blob
// store's faults under it are remembered, so that the job is told whether the disk was full.
func (f jobFiles) CreateOutput(jobID string) (convert.OutputFile, error) {
	job := f.claimed(jobID)
	out, err := f.blobs.CreateOutput(jobID, job.Attempt)
	if f.queue == nil {
		return out, err
	}
	key := claimKey{job.ID, job.Attempt}
	if err != nil {
		f.queue.noteOutputFault(key, err)
	} else if p, ok := out.(*pendingOutput); ok {
		p.onFault = func(err error) { f.queue.noteOutputFault(key, err) }
	}
	return out, err
}

// storageError marks the blob store's own faults (blobstore.ErrStorage: disk full, read-only
// or missing directories) as convert.StorageErrors.
func storageError(err error) error {
	if errors.Is(err, blobstore.ErrStorage) {
		return &convert.StorageError{Err: err}
	}
	return err
}

// pendingOutput is a blob store output with convert's types. It remembers the first fault of
// the disk under its writes, which are the disk's alone, so a converter that reports a write
// error in its own words still leaves the job to be retried (convert.StorageError).
type pendingOutput struct {
	p     *blobstore.PendingOutput
	fault error
	// onFault (optional) is told each fault of the disk under the output's writes and commit.
	onFault func(error)
}

// Write appends to the output; its error is the disk's.
func (o *pendingOutput) Write(b []byte) (int, error) {
	n, err := o.p.Write(b)
	if err != nil {
		err = o.record(err)
	}
	return n, err
}

// ReadFrom appends r to the output; an error that is not r's is the disk's.
func (o *pendingOutput) ReadFrom(r io.Reader) (int64, error) {
	src := &readErr{r: r}
	n, err := o.p.ReadFrom(src)
	if err != nil && (src.err == nil || !errors.Is(err, src.err)) {
		err = o.record(err)
	}
	return n, err
}

func (o *pendingOutput) record(err error) error {
	se := &convert.StorageError{Err: err}
	if o.fault == nil {
		o.fault = se
	}
	if o.onFault != nil {
		o.onFault(err)
	}
	return se
}

// File hands the output's own file to a worker process, which writes the output straight
// into it (worker.DirectOutput): written once, where it is kept, not copied from scratch space.
func (o *pendingOutput) File() (*os.File, error) {
	f, err := o.p.File()
	if err != nil {
		return nil, o.record(err)
	}
	return f, nil
}

// WriteFailed records the fault of the disk under a worker process's writes to File, as a
// failed Write would.
func (o *pendingOutput) WriteFailed(err error) error { return o.record(err) }

// StorageErr is the first fault of the disk under the output's writes, or nil.
func (o *pendingOutput) StorageErr() error { return o.fault }

// Discard removes the output unless it was committed.
func (o *pendingOutput) Discard() { o.p.Discard() }

// Written returns the output written so far, for the check before Commit.
func (o *pendingOutput) Written() (io.ReaderAt, int64, error) {
	r, n, err := o.p.Written()
	if err != nil {
		return nil, 0, o.record(err)
	}
	return r, n, nil
}

// Commit stores the output atomically as the job's.
func (o *pendingOutput) Commit(meta convert.OutputMeta) (convert.Output, error) {
	out, err := o.p.Commit(blobstore.OutputMeta{ContentType: meta.ContentType, Filename: meta.Filename})
	if err != nil && o.onFault != nil {
		o.onFault(err)
	}
	return convert.Output{Bytes: out.Bytes, SHA256: out.SHA256}, storageError(err)
}

// readErr remembers the error of the reader it wraps.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// DeleteOutput removes a job's files after its outcome was refused; on a shared store it
// leaves them to retention, since a newer attempt of the job may be using them.
func (f jobFiles) DeleteOutput(jobID string) error {
	if f.shared {
		return nil
	}
	return f.blobs.Delete(jobID)
}
