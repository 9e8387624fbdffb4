//go:build unix

package document

import (
	"path/filepath"
	"syscall"
	"testing"
)

// noOpenFile returns the path of a named pipe: opening it for reading blocks until a writer
// comes, so a converter that tried to read it would hang the test instead of passing.
func noOpenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret-pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
