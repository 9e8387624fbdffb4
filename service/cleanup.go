package service

import (
	"errors"
	"log/slog"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/store"
)

// Dead jobs take no uploads, and keep no input: the blob store asks uploadState before and
// after every PUT, and the input of a job that finished (succeeded, failed, cancelled, size
// mismatch) is removed right after the transition, by whoever made it. The sweep removes what
// a crash between transition and removal left (sweepDeadInputs). Outputs stay until
// retention.

// uploadState is blobstore.Config.JobState on the job store.
func uploadState(st JobStore) func(string) (blobstore.JobState, error) {
	return func(jobID string) (blobstore.JobState, error) {
		s, err := st.JobUploadState(jobID)
		switch s {
		case store.UploadOpen:
			return blobstore.JobOpen, err
		case store.UploadSealed:
			return blobstore.JobStarted, err
		case store.UploadClosed:
			return blobstore.JobFinished, err
		default:
			return blobstore.JobGone, err
		}
	}
}

// dropInput removes a finished job's input, keeping its output.
func dropInput(blobs ObjectStorage, log *slog.Logger, job store.Job) {
	if !job.Finished() {
		return
	}
	if err := blobs.DeleteInput(job.ID); err != nil {
		log.Warn("delete the input of a finished job", "job_id", job.ID, "error", err)
	}
}

// apiStore is the job store as the API sees it: creating a job tells the sweeper its expiry,
// and a cancel also drops the job's input.
type apiStore struct {
	JobStore
	blobs   ObjectStorage
	log     *slog.Logger
	created func(expiresAt time.Time)
}

// CreateJob creates the job, then wakes the sweeper if the job expires before its next pass.
func (a apiStore) CreateJob(p store.CreateJobParams, render func(store.Job) (store.Response, error)) (store.Job, store.Response, error) {
	job, resp, err := a.JobStore.CreateJob(p, render)
	if err == nil && a.created != nil {
		a.created(job.ExpiresAt)
	}
	return job, resp, err
}

// CancelJob cancels the job and removes its input.
func (a apiStore) CancelJob(accountID, jobID string) (store.Job, error) {
	job, err := a.JobStore.CancelJob(accountID, jobID)
	if err == nil {
		dropInput(a.blobs, a.log, job)
	}
	return job, err
}

// apiBlobs is object storage as the API sees it: a start that cancels the job for a size
// mismatch also drops the upload.
type apiBlobs struct {
	ObjectStorage
	log *slog.Logger
}

// Seal seals the upload and runs start; after a size mismatch the cancelled job's upload goes
// (once Seal released the id's lock, which DeleteInput takes).
func (a apiBlobs) Seal(jobID string, start func(store.Upload) error) error {
	mismatch := false
	err := a.ObjectStorage.Seal(jobID, func(up store.Upload) error {
		err := start(up)
		mismatch = errors.Is(err, store.ErrSizeMismatch)
		return err
	})
	if mismatch {
		if derr := a.ObjectStorage.DeleteInput(jobID); derr != nil {
			a.log.Warn("delete the upload of a job cancelled for its size", "job_id", jobID, "error", derr)
		}
	}
	return err
}

// sweepDeadInputs removes the inputs of jobs that finished (or passed expires_at) but still
// have one: a crash came between the transition and dropInput, or crash recovery failed the
// job (max attempts).
func (m *Main) sweepDeadInputs() {
	ids, err := m.blobs.InputIDs()
	if err != nil {
		m.log.Warn("list job inputs", "error", err)
		return
	}
	for _, id := range ids {
		if state, err := m.store.JobUploadState(id); err == nil && state == store.UploadClosed {
			if err := m.blobs.DeleteInput(id); err != nil {
				m.log.Warn("delete the input of a finished job", "job_id", id, "error", err)
			}
		}
	}
}
