//go:build unix

package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// A first one-shot `convsvc convert` of a PDF page, with an empty compilation cache
// (CONVSVC_WASM_CACHE_DIR, default under the user's cache dir), renders it in wazero's
// interpreter and leaves `convsvc precompile` filling the cache in the background, holding the
// cache directory's fill lock until it is done; the next process loads the compiled code and
// compiles nothing. "off" keeps nothing. The output is the same every way.
func TestConvert_PDFiumCompilationCache(t *testing.T) {
	childProcessOnly(t)
	root := testenv.RepoRoot(t)
	pdf := filepath.Join(root, "testdata", "documents", "sample.pdf")
	run := func(cacheDir string) []byte {
		t.Helper()
		out := t.TempDir()
		cmd := exec.Command(binary, "convert", pdf, "--to", "png", "--output-dir", out)
		cmd.Env = append(os.Environ(), "CONVSVC_WASM_CACHE_DIR="+cacheDir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("convert with CONVSVC_WASM_CACHE_DIR=%s: %v\n%s", cacheDir, err, b)
		}
		png, err := os.ReadFile(filepath.Join(out, "sample.png"))
		if err != nil {
			t.Fatal(err)
		}
		return png
	}
	files := func(dir string) int {
		n := 0
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}

	cache := filepath.Join(t.TempDir(), "wasm")
	first := run(cache)
	// The background fill holds the lock on the directory from before the run ended.
	lock, err := os.Open(cache)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	kept := files(cache)
	if kept != 4 { // PDFium, AVIF, JPEG XL and the fill's marker
		t.Fatalf("%d files in %s after the first PDF conversion's background fill, want 4", kept, cache)
	}
	if second := run(cache); !bytes.Equal(first, second) {
		t.Errorf("the PNG rendered with the cached module differs from the first")
	}
	if files(cache) != kept {
		t.Errorf("the second run compiled again: %d files in the cache, want %d", files(cache), kept)
	}
	if off := run("off"); !bytes.Equal(first, off) {
		t.Errorf("the PNG rendered without a cache differs")
	}
}
