package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// One-shot AVIF and JPEG XL conversions keep the codecs' compiled WebAssembly in
// CONVSVC_WASM_CACHE_DIR like PDFium's: the first process compiles and writes it, the next ones
// load it (AVIF encode 1.05 s -> 0.23 s, docs/benchmarks.md) and write nothing more, and the
// outputs are the same bytes as with the cache off.
func TestConvert_WASMCodecCompilationCache(t *testing.T) {
	childProcessOnly(t)
	root := testenv.RepoRoot(t)
	images := filepath.Join(root, "testdata", "images")
	cases := []struct{ in, to, out string }{
		{"sample.png", "avif", "sample.avif"},
		{"sample.avif", "png", "sample.png"},
		{"sample.jxl", "png", "sample.png"},
	}
	run := func(cacheDir, in, to, out string) []byte {
		t.Helper()
		dir := t.TempDir()
		cmd := exec.Command(binary, "convert", filepath.Join(images, in), "--to", to, "--output-dir", dir)
		cmd.Env = append(os.Environ(), "CONVSVC_WASM_CACHE_DIR="+cacheDir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("convert %s --to %s with CONVSVC_WASM_CACHE_DIR=%s: %v\n%s", in, to, cacheDir, err, b)
		}
		b, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := func(dir string) map[string]int64 {
		m := map[string]int64{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					m[p] = fi.Size()
				}
			}
			return nil
		})
		return m
	}

	cache := filepath.Join(t.TempDir(), "wasm")
	first := make([][]byte, len(cases))
	for i, c := range cases {
		first[i] = run(cache, c.in, c.to, c.out)
	}
	// One module serves AVIF both ways, one JPEG XL's decoding.
	kept := files(cache)
	if len(kept) != 2 {
		t.Errorf("%d compiled modules in the cache after AVIF and JPEG XL, want 2: %v", len(kept), kept)
	}
	for i, c := range cases {
		if again := run(cache, c.in, c.to, c.out); !bytes.Equal(first[i], again) {
			t.Errorf("%s -> %s with the cached module differs from the first", c.in, c.to)
		}
		if off := run("off", c.in, c.to, c.out); !bytes.Equal(first[i], off) {
			t.Errorf("%s -> %s without a cache differs", c.in, c.to)
		}
	}
	if now := files(cache); len(now) != len(kept) {
		t.Errorf("later runs compiled again: %v, was %v", now, kept)
	} else {
		for p, size := range kept {
			if now[p] != size {
				t.Errorf("%s was rewritten: %d bytes, was %d", p, now[p], size)
			}
		}
	}
}
