package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/store"
)

// s3Objects is an S3 bucket (s3store) as ObjectStorage: clients upload and download through
// URLs presigned by the S3 API itself, the start copies the upload to a key no URL can write
// and records it (size, ETag, version id), workers read that copy, outputs go under the
// attempt's key and a download presigns the key of the attempt the job store recorded.
type s3Objects struct {
	s *s3store.Store
	// extension names the first extension of a job's output format (its target, or zip for
	// several pages), for the download's filename.
	extension func(job store.Job) string
}

// UploadURL presigns the PUT of the job's input, with its size signed as Content-Length.
func (o s3Objects) UploadURL(jobID string, size int64, expires time.Time) string {
	u, err := o.s.UploadURL(jobID, size, expires)
	if err != nil {
		return "" // only an invalid id or size, which the API never passes
	}
	return u
}

// DownloadURL presigns the GET of the output of the attempt that succeeded, as
// "<job id>.<extension>" (the name the workers store it with).
func (o s3Objects) DownloadURL(job store.Job, expires time.Time) string {
	if job.Output == nil {
		return ""
	}
	name := job.ID
	if o.extension != nil {
		if ext := o.extension(job); ext != "" {
			name += "." + ext
		}
	}
	u, err := o.s.DownloadURL(job.ObjectID(), job.Output.Attempt, name, "", expires)
	if err != nil {
		return ""
	}
	return u
}

// Seal reads what the upload is and runs start with it, so the start transaction records it.
func (o s3Objects) Seal(jobID string, start func(store.Upload) error) error {
	return o.s.Seal(jobID, func(info s3store.UploadInfo) error {
		return start(store.Upload{Size: info.Size, ETag: info.ETag, VersionID: info.VersionID, SHA256: info.SHA256})
	})
}

// Check proves the bucket answers with the credentials.
func (o s3Objects) Check() error { return o.s.Check() }

// OpenInput downloads exactly the object the start recorded into scratch space. A job with no
// record (started by an older version) reads the current object, if its size is the reserved one.
func (o s3Objects) OpenInput(job store.Job) (*os.File, error) {
	if job.Upload != nil {
		return o.s.OpenInput(job.ID, s3store.UploadInfo{Size: job.Upload.Size, ETag: job.Upload.ETag, VersionID: job.Upload.VersionID})
	}
	var f *os.File
	err := o.s.Seal(job.ID, func(info s3store.UploadInfo) error {
		if info.Size != job.InputBytes {
			return fmt.Errorf("open input %s: %d bytes, reserved %d: %w", job.ID, info.Size, job.InputBytes, s3store.ErrInputChanged)
		}
		var err error
		f, err = o.s.OpenInput(job.ID, info)
		return err
	})
	return f, err
}

// CreateOutput starts the output of the job's attempt under its own key.
func (o s3Objects) CreateOutput(jobID string, attempt int) (convert.OutputFile, error) {
	p, err := o.s.CreateOutput(jobID, attempt)
	if err != nil {
		return nil, storageError(err)
	}
	return &s3Output{p: p}, nil
}

// Delete removes the job's upload and every attempt's output.
func (o s3Objects) Delete(jobID string) error { return o.s.Delete(jobID) }

// DeleteInput removes the job's upload.
func (o s3Objects) DeleteInput(jobID string) error { return o.s.DeleteInput(jobID) }

// JobIDs lists the jobs that have objects.
func (o s3Objects) JobIDs() ([]string, error) { return o.s.JobIDs() }

// InputIDs lists the jobs that have an upload.
func (o s3Objects) InputIDs() ([]string, error) { return o.s.InputIDs() }

// JobIDsAfter lists up to limit jobs after after that have objects.
func (o s3Objects) JobIDsAfter(after string, limit int) ([]string, error) {
	return o.s.JobIDsAfter(after, limit)
}

// InputIDsAfter lists up to limit jobs after after that have an upload.
func (o s3Objects) InputIDsAfter(after string, limit int) ([]string, error) {
	return o.s.InputIDsAfter(after, limit)
}

// s3Output is an s3store output with convert's types: scratch-disk and S3 faults are
// convert.StorageErrors, so the job is retried instead of failed.
type s3Output struct {
	p     *s3store.PendingOutput
	fault error
}

// Write appends to the output's scratch file.
func (o *s3Output) Write(b []byte) (int, error) {
	n, err := o.p.Write(b)
	if err != nil {
		se := &convert.StorageError{Err: err}
		if o.fault == nil {
			o.fault = se
		}
		return n, se
	}
	return n, nil
}

// StorageErr is the first fault of the scratch disk under the output's writes, or nil.
func (o *s3Output) StorageErr() error { return o.fault }

// File hands the output's scratch file to a worker process, which writes the output straight
// into it (worker.DirectOutput); Commit uploads it from there.
func (o *s3Output) File() (*os.File, error) {
	f, err := o.p.File()
	if err != nil {
		return nil, o.WriteFailed(err)
	}
	return f, nil
}

// WriteFailed records the fault of the scratch disk under a worker process's writes to File.
func (o *s3Output) WriteFailed(err error) error {
	se := &convert.StorageError{Err: err}
	if o.fault == nil {
		o.fault = se
	}
	return se
}

// Discard drops the output unless it was committed.
func (o *s3Output) Discard() { o.p.Discard() }

// Written returns the output written so far, for the check before Commit.
func (o *s3Output) Written() (io.ReaderAt, int64, error) {
	r, n, err := o.p.Written()
	if err != nil {
		return nil, 0, &convert.StorageError{Err: err}
	}
	return r, n, nil
}

// Commit uploads the output under the attempt's key.
func (o *s3Output) Commit(meta convert.OutputMeta) (convert.Output, error) {
	out, err := o.p.Commit(blobstore.OutputMeta{ContentType: meta.ContentType, Filename: meta.Filename})
	if err != nil {
		return convert.Output{}, &convert.StorageError{Err: err}
	}
	return convert.Output{Bytes: out.Bytes, SHA256: out.SHA256}, nil
}

// ParseObjectStorage splits an --object-storage value: "" or "local" is the blob store in the
// data dir (ok false); s3://BUCKET/PREFIX names a bucket and a key prefix.
func ParseObjectStorage(v string) (bucket, prefix string, ok bool, err error) {
	if v == "" || v == "local" {
		return "", "", false, nil
	}
	rest, found := strings.CutPrefix(v, "s3://")
	if !found {
		return "", "", false, fmt.Errorf("object storage %q: want s3://BUCKET[/PREFIX] or local", v)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", false, fmt.Errorf("object storage %q: the bucket is missing (s3://BUCKET[/PREFIX])", v)
	}
	return bucket, strings.Trim(prefix, "/"), true, nil
}

// isInputFault reports whether opening an input failed for object storage's sake (retry the
// job), not the input's.
func isInputFault(err error) bool {
	return errors.Is(err, s3store.ErrStorage) && !errors.Is(err, s3store.ErrInputChanged)
}
