//go:build !unix

package document

import (
	"os"
	"path/filepath"
	"testing"
)

// noOpenFile returns the path of a file that outputs must not mention (no named pipes here).
func noOpenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret-file")
	if err := os.WriteFile(p, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
