package blobstore

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// startedSet is a Config.JobState backed by a map the test changes: a job is open until the
// test starts, finishes or removes it.
type startedSet struct {
	mu  sync.Mutex
	ids map[string]JobState
	err error
}

func (s *startedSet) set(id string, state JobState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]JobState{}
	}
	s.ids[id] = state
}

func (s *startedSet) start(id string)  { s.set(id, JobStarted) }
func (s *startedSet) finish(id string) { s.set(id, JobFinished) }
func (s *startedSet) remove(id string) { s.set(id, JobGone) }

func (s *startedSet) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *startedSet) JobState(id string) (JobState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id], s.err
}

func newStartedEnv(t *testing.T) (*testEnv, *startedSet) {
	e := newTestEnv(t)
	return e, e.started
}

// A job the job store calls started keeps its upload: PUTs are refused, before
// streaming and at commit.
func TestHandler_Put_RefusedWhenStarted(t *testing.T) {
	e, set := newStartedEnv(t)
	e.mustUpload("job_abc", "first")
	set.start("job_abc")
	wantError(t, e.put(e.uploadURL("job_abc", 6), "second"), 409, "upload_sealed")

	e.mustUpload("job_def", "first")
	pw, second := e.startPut("job_def", 6, "sec")
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

// OpenInput finds a started job's file under uploads/, prefers inputs/ (where
// versions before schema 2 sealed inputs), and Delete and JobIDs see both names.
func TestStore_InputsOfEarlierVersions(t *testing.T) {
	e, set := newStartedEnv(t)
	e.mustUpload("job_abc", "uploaded")
	set.start("job_abc")
	f, err := e.st.OpenInput("job_abc")
	if err != nil {
		t.Fatalf("OpenInput with the file under uploads/: %v", err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "uploaded" {
		t.Errorf("input = %q, want uploaded", b)
	}

	// An earlier version's sealed input, and a file under uploads/ too: after a reopen
	// (inputs/ is looked at only when it held files at Open), inputs/ wins, for OpenInput and
	// for Seal's size.
	if err := os.WriteFile(filepath.Join(e.dir, "inputs", "job_two"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "uploads", "job_two"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := e.st.OpenInput("job_two"); err != nil {
		t.Fatal(err)
	} else {
		b, _ = io.ReadAll(f)
		f.Close()
		if string(b) != "stale" {
			t.Errorf("before the reopen, input = %q, want uploads/'s stale", b)
		}
	}
	e.reopen()
	if n, err := e.seal("job_two"); err != nil || n != 3 {
		t.Fatalf("Seal = %d, %v; want 3 (inputs/job_two)", n, err)
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

	// DeleteInput removes both names while inputs/ held files at Open (a fresh store's skips
	// inputs/: nothing writes there).
	if err := os.WriteFile(filepath.Join(e.dir, "inputs", "job_three"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "uploads", "job_three"), []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteInput("job_three"); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"uploads", "inputs"} {
		if _, err := os.Stat(filepath.Join(e.dir, sub, "job_three")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after DeleteInput, %s/job_three: %v", sub, err)
		}
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

// Seal returns start's error as it is, and refuses to seal without Config.JobState.
func TestStore_Seal_StartErrorAndNoStarted(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_abc", "hello")
	errCommit := errors.New("commit failed")
	if err := e.st.Seal("job_abc", func(int64) error { return errCommit }); err != errCommit {
		t.Fatalf("Seal = %v, want start's error", err)
	}
	e.mustUpload("job_abc", "again") // the start failed, so the upload is still open

	plain := newTestEnvConfig(t, func(c *Config) { c.JobState = nil })
	plain.mustUpload("job_abc", "hello")
	called := false
	if err := plain.st.Seal("job_abc", func(int64) error { called = true; return nil }); !errors.Is(err, errNoJobState) || called {
		t.Fatalf("Seal without Config.JobState = %v (start called: %v), want errNoJobState", err, called)
	}
}

// A PUT that reaches its commit while Seal's start is running waits for the id lock and is
// then refused: the start and the upload cannot interleave.
func TestStore_Seal_PutWaitsForStart(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_abc", "first")
	pw, second := e.startPut("job_abc", 6, "sec")
	err := e.st.Seal("job_abc", func(size int64) error {
		io.WriteString(pw, "ond")
		pw.Close() // the PUT now heads for its commit, which needs the lock Seal holds
		waitFor(t, "the PUT to wait for the id lock", func() bool { return e.st.lockHolders("job_abc") == 2 })
		e.started.start("job_abc")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, <-second, 409, "upload_sealed")
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != "first" {
		t.Errorf("input = %q, want first", got)
	}
}
