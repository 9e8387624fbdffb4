package blobstore

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// startedSet is a Config.Started backed by a set the test changes.
type startedSet struct {
	mu  sync.Mutex
	ids map[string]bool
	err error
}

func (s *startedSet) start(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
}

func (s *startedSet) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *startedSet) Started(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id], s.err
}

func newStartedEnv(t *testing.T) (*testEnv, *startedSet) {
	var set startedSet
	return newTestEnvConfig(t, func(c *Config) { c.Started = set.Started }), &set
}

// A job the job store calls started keeps its upload even though Seal's rename
// never happened (a crash undid it): PUTs are refused, before streaming and at commit.
func TestHandler_Put_RefusedWhenStarted(t *testing.T) {
	e, set := newStartedEnv(t)
	e.mustUpload("job_abc", "first")
	set.start("job_abc")
	wantError(t, e.put(e.uploadURL("job_abc", 6), "second"), 409, "upload_sealed")

	e.mustUpload("job_def", "first")
	pw, second := e.startPut("job_def", 6)
	io.WriteString(pw, "sec")
	waitFor(t, "the second PUT to stream", func() bool { return e.tmpHasUpload("job_def") })
	set.start("job_def")
	io.WriteString(pw, "ond")
	pw.Close()
	wantError(t, <-second, 409, "upload_sealed")

	for _, id := range []string{"job_abc", "job_def"} {
		if got := readFile(t, filepath.Join(e.dir, "uploads", id)); got != "first" {
			t.Errorf("uploads/%s = %q, want first", id, got)
		}
	}
	e.mustUpload("job_other", "not started") // the hook is per job

	set.fail(errors.New("database closed"))
	wantError(t, e.put(e.uploadURL("job_xyz", 3), "abc"), 503, "storage_unavailable")
}

// OpenInput finds a started job's file under uploads/ when the rename was lost,
// prefers inputs/, and Delete and JobIDs see both names.
func TestStore_LostSealRename(t *testing.T) {
	e, set := newStartedEnv(t)
	e.mustUpload("job_abc", "uploaded")
	set.start("job_abc") // the start committed; Seal's rename did not survive
	f, err := e.st.OpenInput("job_abc")
	if err != nil {
		t.Fatalf("OpenInput with the file under uploads/: %v", err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "uploaded" {
		t.Errorf("input = %q, want uploaded", b)
	}

	// Both names at once (a file system that kept both links): inputs/ wins.
	e.mustUpload("job_two", "old")
	if _, err := e.st.Seal("job_two"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "uploads", "job_two"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = e.st.OpenInput("job_two")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(f)
	f.Close()
	if string(b) != "old" {
		t.Errorf("input = %q, want the sealed old", b)
	}

	ids, err := e.st.JobIDs()
	if err != nil || !slices.Equal(ids, []string{"job_abc", "job_two"}) {
		t.Fatalf("JobIDs = %v, %v", ids, err)
	}
	for _, id := range ids {
		if err := e.st.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"uploads", "inputs"} {
		assertDirEmpty(t, filepath.Join(e.dir, sub))
	}
}
