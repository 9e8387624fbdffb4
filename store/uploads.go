package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// UploadState is what a job is to its upload: whether a file may still land for it.
type UploadState int

const (
	// UploadOpen: the job was created, has not expired and waits for its file.
	UploadOpen UploadState = iota
	// UploadSealed: the job started; its upload is its input and must not change.
	UploadSealed
	// UploadClosed: the job succeeded, failed, was cancelled or is past expires_at; it takes no
	// file, and its input is no longer needed.
	UploadClosed
	// UploadGone: no such job.
	UploadGone
)

// JobUploadState tells the blob store whether a PUT may land for the job. It reads only the
// status, start and expiry fields of the record, since every PUT asks twice. A finished job is
// UploadClosed even if it started; a job past expires_at is UploadClosed before the sweep
// deletes it.
func (s *Store) JobUploadState(jobID string) (UploadState, error) {
	state := UploadGone
	now := s.opts.Now()
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		state, err = uploadState(tx, jobID, now)
		return err
	})
	return state, err
}

// ClosedUploads returns those of ids whose JobUploadState is UploadClosed, in their order,
// reading them in one transaction; the sweep of dead inputs checks a listing's ids with it.
func (s *Store) ClosedUploads(ids []string) ([]string, error) {
	var closed []string
	now := s.opts.Now()
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range ids {
			state, err := uploadState(tx, id, now)
			if err != nil {
				return err
			}
			if state == UploadClosed {
				closed = append(closed, id)
			}
		}
		return nil
	})
	return closed, err
}

// uploadState is JobUploadState in tx at now.
func uploadState(tx *bolt.Tx, jobID string, now time.Time) (UploadState, error) {
	data := tx.Bucket(bucketJobs).Get([]byte(jobID))
	if data == nil {
		return UploadGone, nil
	}
	var job Job
	if isJSONRecord(data) {
		if err := readJob(data, &job); err != nil {
			return UploadGone, fmt.Errorf("job %s: %w", jobID, err)
		}
	} else {
		err := eachField(data, func(f field) (err error) {
			switch f.num {
			case jobFieldStatus:
				job.Status, err = f.status()
			case jobFieldStartedAt:
				t, terr := f.time()
				job.StartedAt, err = &t, terr
			case jobFieldExpiresAt:
				job.ExpiresAt, err = f.time()
			}
			return err
		})
		if err != nil {
			return UploadGone, fmt.Errorf("decode record %q: %w", jobID, err)
		}
	}
	switch {
	case job.Finished() || !now.Before(job.ExpiresAt):
		return UploadClosed, nil
	case job.StartedAt != nil || job.Status != StatusCreated:
		return UploadSealed, nil
	default:
		return UploadOpen, nil
	}
}
