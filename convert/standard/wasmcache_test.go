package standard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FillWasmCache leaves PDFium, AVIF and JPEG XL compiled in the cache directory, with the
// marker that makes the next call (the next server start) skip them; "off" writes nothing.
func TestFillWasmCache(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles PDFium, libavif and libjxl: seconds of CPU")
	}
	list := func(dir string) (modules, markers []string) {
		t.Helper()
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if strings.HasPrefix(d.Name(), "convsvc-filled-") {
					markers = append(markers, d.Name())
				} else {
					modules = append(modules, path)
				}
			}
			return nil
		})
		return modules, markers
	}

	t.Setenv("CONVSVC_WASM_CACHE_DIR", "off")
	if err := FillWasmCache(); err != nil {
		t.Fatalf("with the cache off: %v", err)
	}

	dir := t.TempDir()
	t.Setenv("CONVSVC_WASM_CACHE_DIR", dir)
	if err := FillWasmCache(); err != nil {
		t.Fatal(err)
	}
	modules, markers := list(dir)
	if len(modules) != 3 || len(markers) != 1 {
		t.Fatalf("after filling: compiled modules %q, markers %q; want 3 and 1", modules, markers)
	}
	// The marker stands for the fill: the next call compiles and writes nothing.
	for _, m := range modules {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := FillWasmCache(); err != nil {
		t.Fatal(err)
	}
	if again, _ := list(dir); len(again) != 0 {
		t.Errorf("a second fill with the marker there wrote %q", again)
	}
}
