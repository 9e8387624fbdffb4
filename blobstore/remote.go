package blobstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ImportInput stores size bytes of r as the job's input (uploads/{jobID}, where Seal and
// OpenInput find it), for an input the server fetched itself (create's source_url) rather
// than one a client PUT. It writes a temporary file, hashing it as an upload is (UploadSHA256),
// fsyncs it and renames it into place under the id's lock, so a reader sees the whole input or
// none; it replaces an earlier import of the same job. r must hold exactly size bytes.
func (s *Store) ImportInput(jobID string, r io.Reader, size int64) error {
	if !validID(jobID) {
		return ErrInvalidID
	}
	cw, err := s.createTemp("import-" + jobID)
	if err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	defer cw.discard()
	if _, err := cw.ReadFrom(r); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	if cw.n != size {
		return fmt.Errorf("blobstore: import input %s: %d bytes, expected %d", jobID, cw.n, size)
	}
	if err := cw.finish(s.metaAttrs); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	unlock := s.lockID(jobID)
	defer unlock()
	if err := os.Rename(cw.f.Name(), filepath.Join(s.uploads, jobID)); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	cw.kept = true
	if err := syncDir(s.uploads); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	return nil
}

// OpenOutput opens the job's committed output for reading, with its size; ErrNotFound when
// there is none. The caller closes the file.
func (s *Store) OpenOutput(jobID string) (*os.File, Output, error) {
	if !validID(jobID) {
		return nil, Output{}, ErrInvalidID
	}
	f, side, err := s.openOutput(jobID)
	if err != nil {
		return nil, Output{}, err
	}
	return f, Output{Bytes: side.Bytes, SHA256: side.SHA256}, nil
}
