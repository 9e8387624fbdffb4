package blobstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ImportInput stores size bytes of r as the job's input (uploads/{jobID}, where Seal and
// OpenInput find it), for an input the server fetched itself (create's source_url) rather
// than one a client PUT. It writes a temporary file, fsyncs it and renames it into place
// under the id's lock, so a reader sees the whole input or none; it replaces an earlier
// import of the same job. r must hold exactly size bytes.
func (s *Store) ImportInput(jobID string, r io.Reader, size int64) error {
	if !validID(jobID) {
		return ErrInvalidID
	}
	f, err := os.CreateTemp(s.tmp, "import-"+jobID+"-*")
	if err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	kept := false
	defer func() {
		if !kept {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	if n != size {
		return fmt.Errorf("blobstore: import input %s: %d bytes, expected %d", jobID, n, size)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	unlock := s.lockID(jobID)
	defer unlock()
	if err := os.Rename(f.Name(), filepath.Join(s.uploads, jobID)); err != nil {
		return fmt.Errorf("%w: import input %s: %w", ErrStorage, jobID, err)
	}
	kept = true
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
