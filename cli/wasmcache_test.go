package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// A one-shot `convsvc convert` of a PDF keeps PDFium's compiled WebAssembly on disk
// (CONVSVC_WASM_CACHE_DIR, default under the user's cache dir), so the next process loads it
// instead of compiling it again (1.85 s and 330 MB -> 0.10 s and 93 MB, docs/benchmarks.md);
// "off" keeps nothing. The output is the same either way.
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
	if files(cache) == 0 {
		t.Fatalf("no compiled module kept in %s after a PDF conversion", cache)
	}
	kept := files(cache)
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
