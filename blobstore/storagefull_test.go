package blobstore

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testfs"
)

// TestUpload_DiskFull puts the blob store on a real 1 MiB file system: an upload larger than
// the disk, and a small one once other files filled it, answer 507 insufficient_storage in
// the JSON error shape and leave no file behind; once space is free the same URL takes the
// file.
func TestUpload_DiskFull(t *testing.T) {
	dir := testfs.SmallDir(t, 1<<20)
	e := newTestEnvConfig(t, func(c *Config) { c.Dir = dir })
	e.dir = dir // where the cleanup looks for temporary files left behind
	leftovers := func() []string {
		t.Helper()
		var names []string
		for _, sub := range []string{"uploads", "tmp"} {
			entries, err := os.ReadDir(filepath.Join(dir, sub))
			if err != nil {
				t.Fatal(err)
			}
			for _, de := range entries {
				names = append(names, sub+"/"+de.Name())
			}
		}
		return names
	}

	big := strings.Repeat("x", 2<<20)
	wantError(t, e.put(e.uploadURL("job_big", int64(len(big))), big), http.StatusInsufficientStorage, "insufficient_storage")
	if left := leftovers(); len(left) != 0 {
		t.Fatalf("a refused upload left %v", left)
	}

	testfs.Fill(t, dir, "filler")
	small := strings.Repeat("y", 5000)
	wantError(t, e.put(e.uploadURL("job_small", int64(len(small))), small), http.StatusInsufficientStorage, "insufficient_storage")
	if left := leftovers(); len(left) != 0 {
		t.Fatalf("a refused upload left %v", left)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	e.mustUpload("job_small", small)
	if size, err := e.seal("job_small"); err != nil || size != int64(len(small)) {
		t.Fatalf("seal after space was freed: %d, %v", size, err)
	}
}
