package service

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
)

// jobQueue lets the worker pool claim and finish jobs in the store.
type jobQueue struct {
	store *store.Store
	blobs *blobstore.Store
	log   *slog.Logger
}

func (q jobQueue) Claim(context.Context) (convert.Task, bool, error) {
	job, ok, err := q.store.ClaimJob()
	if err != nil || !ok {
		return convert.Task{}, false, err
	}
	q.log.Info("job running", "job_id", job.ID, "attempt", job.Attempt)
	task := convert.Task{JobID: job.ID, InputFormat: job.InputFormat, TargetFormat: job.TargetFormat, Attempt: job.Attempt}
	if len(job.Options) > 0 {
		if err := json.Unmarshal(job.Options, &task.Options); err != nil {
			// Validated at create, so only a damaged record gets here; the converter sees defaults.
			q.log.Error("job options unreadable", "job_id", job.ID, "error", err)
		}
	}
	return task, true, nil
}

func (q jobQueue) Finish(_ context.Context, o convert.Outcome) error {
	outcome := store.Outcome{ErrorCode: o.Code, ErrorMessage: o.Message}
	if o.Code == "" && o.Output != nil {
		outcome.Output = &store.Output{Bytes: o.Output.Bytes, SHA256: o.Output.SHA256}
	}
	job, err := q.store.FinishJob(o.Task.JobID, o.Task.Attempt, outcome)
	if err != nil {
		if o.Output != nil && (errors.Is(err, store.ErrInvalidState) || errors.Is(err, store.ErrNotFound)) {
			// Cancelled or expired meanwhile: the result has no job to belong to.
			if derr := q.blobs.Delete(o.Task.JobID); derr != nil {
				q.log.Warn("delete orphaned output", "job_id", o.Task.JobID, "error", derr)
			}
		}
		return err
	}
	q.log.Info("job "+job.Status, "job_id", job.ID, "attempt", job.Attempt, "error_code", job.ErrorCode)
	return nil
}

// jobFiles lets the worker pool read inputs and write outputs in the blob store.
type jobFiles struct{ blobs *blobstore.Store }

func (f jobFiles) OpenInput(jobID string) (*os.File, error) { return f.blobs.OpenInput(jobID) }

func (f jobFiles) WriteOutput(jobID string, meta convert.OutputMeta, write func(io.Writer) error) (convert.Output, error) {
	out, err := f.blobs.WriteOutput(jobID, blobstore.OutputMeta{ContentType: meta.ContentType, Filename: meta.Filename}, write)
	return convert.Output{Bytes: out.Bytes, SHA256: out.SHA256}, err
}

func (f jobFiles) DeleteOutput(jobID string) error { return f.blobs.Delete(jobID) }
