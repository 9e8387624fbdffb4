package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestFormatsDocIsCurrent keeps docs/formats.md equal to what the registry generates.
func TestFormatsDocIsCurrent(t *testing.T) {
	out, err := run(t, "formats", "--markdown")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.RepoRoot(t), "docs", "formats.md")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("docs/formats.md is stale: run `go run . formats --markdown > docs/formats.md`")
	}
}
