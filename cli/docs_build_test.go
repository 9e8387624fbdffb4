package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// docBuildLine returns the `go build` line of the first sh block after marker in the file.
func docBuildLine(t *testing.T, path, marker string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %q", path, marker)
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	for _, line := range strings.Split(block, "\n") {
		if strings.Contains(line, "go build") {
			return line
		}
	}
	t.Fatalf("%s: no go build line in the block after %q:\n%s", path, marker, block)
	return ""
}

// The build lines of docs/operations.md (systemd) and the README's self-hosting section are the
// same release build (cgo-free, -tags nodynamic, so gen2brain/webp's dlopen path and its
// module github.com/ebitengine/purego stay out), and go accepts it as written: it runs with -n
// (print the plan, compile nothing) from the repository root and plans no purego package.
func TestDocs_BuildLinesAreTheReleaseBuild(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme := docBuildLine(t, filepath.Join(root, "README.md"), "### Self-hosting")
	ops := docBuildLine(t, filepath.Join(root, "docs", "operations.md"), "### systemd")
	if ops != readme {
		t.Errorf("docs/operations.md builds with\n\t%s\nthe README with\n\t%s", ops, readme)
	}
	for _, want := range []string{"CGO_ENABLED=0 ", " -tags nodynamic ", " -trimpath ", " -o convsvc ."} {
		if !strings.Contains(ops, want) {
			t.Errorf("docs/operations.md's build line lacks %q: %s", want, ops)
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command in PATH")
	}
	dry := strings.Replace(ops, "go build ", "go build -n ", 1)
	cmd := exec.Command("sh", "-c", dry)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", dry, err, out)
	}
	if !strings.Contains(string(out), "github.com/convsvc/convsvc/cli") {
		t.Fatalf("%s planned no convsvc package:\n%.2000s", dry, out)
	}
	if strings.Contains(string(out), "ebitengine/purego") {
		t.Errorf("%s plans github.com/ebitengine/purego: the nodynamic tag did not take", dry)
	}
}
