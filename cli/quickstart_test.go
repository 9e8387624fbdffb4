package cli_test

import (
	"bytes"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// Issue 22, "a README walkthrough that a test runs literally": the first command of the
// README's first fenced block (the quick start, `go run . convert ...`) runs as written through
// sh -c from the repository root, with only TMPDIR pointed at the test's directory so that its
// mktemp -d lands there. It must print where it wrote sample.jpg, write a JPEG of
// testdata/images/sample.png's size there, and leave nothing else behind: no temporary data
// dir, nothing in the repository.
func TestDocs_READMEQuickStartRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary with go run")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command in PATH")
	}
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```")
	if !ok {
		t.Fatal("README has no fenced block")
	}
	_, rest, _ = strings.Cut(rest, "\n") // the info string (sh)
	block, _, _ := strings.Cut(rest, "```")
	command, _, _ := strings.Cut(block, "\n")
	if !strings.HasPrefix(command, "go run . convert ") {
		t.Fatalf("the README's first command is no longer the quick start's go run . convert: %q", command)
	}
	tmp := t.TempDir()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", command, err, out.String(), errOut.String())
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		t.Fatalf("TMPDIR holds %v, want only the output directory mktemp -d made", entries)
	}
	outDir := filepath.Join(tmp, entries[0].Name())
	if left, _ := os.ReadDir(outDir); len(left) != 1 || left[0].Name() != "sample.jpg" {
		t.Fatalf("the output directory holds %v, want sample.jpg alone", left)
	}
	jpg := filepath.Join(outDir, "sample.jpg")
	if !strings.HasPrefix(out.String(), "testdata/images/sample.png -> "+jpg+" (") {
		t.Fatalf("stdout does not say where sample.jpg went (%s):\n%s", jpg, out.String())
	}
	got := decodeFile(t, jpg)
	want := decodeFile(t, filepath.Join(root, "testdata", "images", "sample.png"))
	if got.format != "jpeg" || got.size != want.size {
		t.Fatalf("wrote a %s of %v, want a jpeg of sample.png's %v", got.format, got.size, want.size)
	}
	for _, stray := range []string{"sample.jpg", filepath.Join("testdata", "images", "sample.jpg")} {
		if _, err := os.Stat(filepath.Join(root, stray)); err == nil {
			t.Errorf("the quick start wrote %s into the repository", stray)
		}
	}
}

// decoded is an image file's format and size.
type decoded struct {
	format string
	size   image.Point
}

func decodeFile(t *testing.T, path string) decoded {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, format, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return decoded{format, img.Bounds().Size()}
}
