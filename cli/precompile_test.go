package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// `convsvc precompile` fills the compilation cache with every WebAssembly codec, so the first
// one-shot PDF and AVIF conversions after it load the compiled code: they add nothing to the
// cache. With the cache off it says so and fails.
func TestPrecompile_FirstConversionsLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles PDFium, libavif and libjxl: seconds of CPU")
	}
	root := testenv.RepoRoot(t)
	cache := t.TempDir()
	run := func(env string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "CONVSVC_WASM_CACHE_DIR="+env)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("convsvc %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	files := func() []string {
		var names []string
		filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, d.Name())
			}
			return nil
		})
		return names
	}
	if out := run(cache, "precompile"); !strings.Contains(out, "compiled in "+cache) {
		t.Errorf("precompile said %q", out)
	}
	filled := files()
	if len(filled) != 4 { // PDFium, AVIF, JPEG XL and the marker
		t.Fatalf("after precompile the cache holds %q, want 3 modules and a marker", filled)
	}
	out := t.TempDir()
	run(cache, "convert", filepath.Join(root, "testdata", "documents", "sample.pdf"), "--to", "png", "--output-dir", out)
	run(cache, "convert", filepath.Join(root, "testdata", "images", "sample.png"), "--to", "avif", "--output-dir", out)
	if after := files(); len(after) != len(filled) {
		t.Errorf("the conversions after precompile compiled again: %q, was %q", after, filled)
	}

	cmd := exec.Command(binary, "precompile")
	cmd.Env = append(os.Environ(), "CONVSVC_WASM_CACHE_DIR=off")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "off") {
		t.Errorf("precompile with the cache off: %v, %s", err, b)
	}
}
