package service

import (
	"sync/atomic"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/store"
)

// Dead jobs take no uploads, and keep no input: the blob store asks uploadState before and
// after every PUT, and the input of a job that finished (succeeded, failed, cancelled, size
// mismatch, expired, out of attempts) is removed right after the transition committed. Both
// job stores report every such transition, whoever made it (the API's cancel or start, a
// worker, crash recovery, a lease reaper, an expiry), to their FinishHook, which is
// jobFinished here; the input cleaner's goroutines delete the inputs. The sweep removes what a
// crash between the commit and the deletion left, or what the cleaner's queue had no room for
// (sweepDeadInputs). Outputs stay until retention.

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

// Input cleaner sizes: cleanerQueue finished jobs wait at most (the sweep takes the rest),
// cleanerWorkers delete in parallel (S3 deletes are round trips), and at stop they go on
// with what is queued (the jobs a graceful drain finished) for at most cleanerDrain.
const (
	cleanerQueue   = 4096
	cleanerWorkers = 4
	cleanerDrain   = 5 * time.Second
)

// inputCleaner deletes the inputs of finished jobs off the store's callers: the FinishHook
// runs in the goroutine that made the transition, which may hold the blob store's lock on the
// job's id (a start that cancels for a size mismatch runs inside Seal) or answer an API call.
type inputCleaner struct {
	queue    chan string
	overflow atomic.Bool // a job did not fit in the queue since the last sweep
}

func newInputCleaner() *inputCleaner {
	return &inputCleaner{queue: make(chan string, cleanerQueue)}
}

// jobFinished is both job stores' FinishHook: it queues the finished job's input for
// deletion. It never blocks; a job that does not fit waits for the next sweep.
func (m *Main) jobFinished(job store.Job) {
	m.cache.finished(job)
	select {
	case m.cleaner.queue <- job.ID:
	default:
		if !m.cleaner.overflow.Swap(true) {
			m.log.Warn("input cleanup queue full: finished jobs' inputs wait for the sweep's dead-input pass (each input at least every ten sweeps)", "queue", cleanerQueue, "sweep_interval", m.cfg.SweepInterval)
		}
	}
}

// startInputCleaner starts the goroutines that delete queued inputs, once object storage is
// open (jobs that finished before, in crash recovery, wait in the queue); they stop with m,
// after what was queued by then or cleanerDrain, whichever comes first. What is left waits
// for the sweep at the next start.
func (m *Main) startInputCleaner() {
	for range cleanerWorkers {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				select {
				case <-m.stop:
					m.drainInputCleaner(time.Now().Add(cleanerDrain))
					return
				case id := <-m.cleaner.queue:
					m.deleteInput(id)
				}
			}
		}()
	}
}

// drainInputCleaner deletes what is queued until the queue is empty or the deadline passed.
func (m *Main) drainInputCleaner(deadline time.Time) {
	for time.Now().Before(deadline) {
		select {
		case id := <-m.cleaner.queue:
			m.deleteInput(id)
		default:
			return
		}
	}
}

// deleteInput removes a finished job's input, keeping its output.
func (m *Main) deleteInput(id string) {
	if err := m.blobs.DeleteInput(id); err != nil {
		m.log.Warn("delete the input of a finished job", "job_id", id, "error", err)
	}
}

// apiStore is the job store as the API sees it: creating a job tells the sweeper its expiry.
type apiStore struct {
	JobStore
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

// sweepDeadInputs removes the inputs of jobs that finished (or passed expires_at) but still
// have one: a crash came between the commit and the input cleaner, the cleaner's queue was
// full, or a PUT to S3's presigned URL landed after the job finished. It checks every input
// when whole, else the next turn of the listing (fileCursor).
func (m *Main) sweepDeadInputs(whole bool) {
	m.cleaner.overflow.Store(false)
	ids, err := m.inputTurn.ids(whole, m.blobs.InputIDs, m.blobs.InputIDsAfter)
	if err != nil {
		m.log.Warn("list job inputs", "error", err)
		return
	}
	m.inBatches(ids, m.store.ClosedUploads, "check job inputs' jobs", m.deleteInput)
}
