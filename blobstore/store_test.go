package blobstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOpen_GeneratesAndKeepsSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := Config{Dir: dir, PublicURL: "http://blob.test:8081/"}
	st1, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, secretFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode = %v, want 0600", fi.Mode().Perm())
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, secretFile))); len(got) != 64 {
		t.Errorf("secret has %d characters, want 64 hex", len(got))
	}
	for _, sub := range []string{"", "uploads", "inputs", "outputs", "tmp"} {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s/: %v, mode %v; want a 0700 directory", sub, err, fi.Mode().Perm())
		}
	}

	st2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Unix(1_800_000_000, 0)
	u := st1.UploadURL("job_abc", 5, exp)
	if got := st2.UploadURL("job_abc", 5, exp); got != u {
		t.Errorf("reopened store signs %s, want %s", got, u)
	}
	if !strings.HasPrefix(u, "http://blob.test:8081/uploads/job_abc?expires=1800000000&size=5&sig=") {
		t.Errorf("UploadURL = %s", u)
	}
	assertDirEmpty(t, filepath.Join(dir, "tmp"))
}

func TestOpen_RemovesStaleTemp(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tmp", "put-job_abc-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: dir, PublicURL: "http://x", Secret: testSecret}); err != nil {
		t.Fatal(err)
	}
	assertDirEmpty(t, filepath.Join(dir, "tmp"))
}

func TestOpen_InvalidConfig(t *testing.T) {
	dir := t.TempDir()
	shortFile := t.TempDir()
	if err := os.WriteFile(filepath.Join(shortFile, secretFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no dir", Config{PublicURL: "http://x"}},
		{"no public URL", Config{Dir: dir}},
		{"relative public URL", Config{Dir: dir, PublicURL: "blob:8081"}},
		{"ftp public URL", Config{Dir: dir, PublicURL: "ftp://x"}},
		{"public URL with query", Config{Dir: dir, PublicURL: "http://x/?a=b"}},
		{"short secret", Config{Dir: dir, PublicURL: "http://x", Secret: []byte("short")}},
		{"short secret file", Config{Dir: shortFile, PublicURL: "http://x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Open(tt.cfg); err == nil {
				t.Error("Open succeeded, want an error")
			}
		})
	}
}

func TestStore_InvalidID(t *testing.T) {
	st := newTestEnv(t).st
	for _, id := range []string{"", "job_", "abc", "job_a/b", "job_..", "../job_a", "job_a.meta", "JOB_a", "job_" + strings.Repeat("x", 65)} {
		calls := map[string]error{}
		calls["Seal"] = st.Seal(id, func(int64) error { return nil })
		_, calls["OpenInput"] = st.OpenInput(id)
		_, _, calls["OutputInfo"] = st.OutputInfo(id)
		calls["Delete"] = st.Delete(id)
		_, calls["WriteOutput"] = st.WriteOutput(id, OutputMeta{}, func(io.Writer) error { return nil })
		for name, err := range calls {
			if !errors.Is(err, ErrInvalidID) {
				t.Errorf("%s(%q) = %v, want ErrInvalidID", name, id, err)
			}
		}
	}
	if !validID("job_" + strings.Repeat("x", 64)) {
		t.Error("a 64-character id is valid")
	}
}

func TestStore_Seal_NothingUploaded(t *testing.T) {
	e := newTestEnv(t)
	if _, err := e.seal("job_abc"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Seal = %v, want ErrNotFound", err)
	}
	if _, err := e.st.OpenInput("job_abc"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenInput = %v, want ErrNotFound", err)
	}
}

func TestStore_Seal_Idempotent(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_abc", "hello")
	for i := range 3 {
		if n, err := e.seal("job_abc"); err != nil || n != 5 {
			t.Fatalf("Seal #%d = %d, %v; want 5, nil", i+1, n, err)
		}
	}
	assertDirEmpty(t, filepath.Join(e.dir, "inputs")) // sealing moves nothing
	f, err := e.st.OpenInput("job_abc")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Errorf("input = %q, want hello", b)
	}
}

func TestStore_WriteOutput(t *testing.T) {
	e := newTestEnv(t)
	meta := OutputMeta{ContentType: "image/webp", Filename: "photo.webp"}
	out := e.mustWriteOutput("job_abc", "converted", meta)
	sum := sha256.Sum256([]byte("converted"))
	if want := (Output{Bytes: 9, SHA256: hex.EncodeToString(sum[:])}); out != want {
		t.Errorf("WriteOutput = %+v, want %+v", out, want)
	}
	gotOut, gotMeta, err := e.st.OutputInfo("job_abc")
	if err != nil || gotOut != out || gotMeta != meta {
		t.Errorf("OutputInfo = %+v, %+v, %v; want %+v, %+v", gotOut, gotMeta, err, out, meta)
	}
	// A re-run replaces the output and its metadata together.
	out2 := e.mustWriteOutput("job_abc", "longer output", OutputMeta{})
	if gotOut, gotMeta, _ := e.st.OutputInfo("job_abc"); gotOut != out2 || gotMeta != (OutputMeta{}) {
		t.Errorf("after rewrite OutputInfo = %+v, %+v", gotOut, gotMeta)
	}
}

// TestStore_CreateOutput: an output written through CreateOutput is invisible until Commit,
// Discard before Commit leaves nothing, Discard after Commit keeps it, and an invalid content
// type at Commit stores nothing.
func TestStore_CreateOutput(t *testing.T) {
	e := newTestEnv(t)
	if _, err := e.st.CreateOutput("../job"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("CreateOutput(../job) = %v, want ErrInvalidID", err)
	}
	body := strings.Repeat("converted ", 100_000) // several chunks: the hashing goroutine runs
	p, err := e.st.CreateOutput("job_abc")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, body)
	if _, _, err := e.st.OutputInfo("job_abc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("OutputInfo before Commit = %v, want ErrNotFound", err)
	}
	meta := OutputMeta{ContentType: "text/plain", Filename: "a.txt"}
	out, err := p.Commit(meta)
	p.Discard()
	sum := sha256.Sum256([]byte(body))
	if want := (Output{Bytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}); err != nil || out != want {
		t.Fatalf("Commit = %+v, %v; want %+v", out, err, want)
	}
	if got, gotMeta, err := e.st.OutputInfo("job_abc"); err != nil || got != out || gotMeta != meta {
		t.Errorf("OutputInfo after Commit and Discard = %+v, %+v, %v", got, gotMeta, err)
	}
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))

	p, err = e.st.CreateOutput("job_def")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, body)
	p.Discard()
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))

	p, err = e.st.CreateOutput("job_def")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, "x")
	if _, err := p.Commit(OutputMeta{ContentType: "not a type"}); err == nil {
		t.Error("Commit accepted an invalid content type")
	}
	p.Discard()
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))
	if _, _, err := e.st.OutputInfo("job_def"); !errors.Is(err, ErrNotFound) {
		t.Errorf("OutputInfo of discarded outputs = %v, want ErrNotFound", err)
	}
}

// A failing producer leaves nothing behind, and an earlier output untouched.
func TestStore_WriteOutput_Atomic(t *testing.T) {
	e := newTestEnv(t)
	boom := errors.New("converter failed")
	failing := func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("partial", 1<<18)) // more than the write buffer
		return boom
	}
	if _, err := e.st.WriteOutput("job_abc", OutputMeta{}, failing); !errors.Is(err, boom) {
		t.Fatalf("WriteOutput = %v, want it to wrap the producer's error", err)
	}
	assertDirEmpty(t, filepath.Join(e.dir, "outputs"))
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))
	if _, _, err := e.st.OutputInfo("job_abc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("OutputInfo = %v, want ErrNotFound", err)
	}

	first := e.mustWriteOutput("job_abc", "first", OutputMeta{})
	if _, err := e.st.WriteOutput("job_abc", OutputMeta{}, failing); !errors.Is(err, boom) {
		t.Fatalf("WriteOutput = %v, want it to wrap the producer's error", err)
	}
	if got, _, err := e.st.OutputInfo("job_abc"); err != nil || got != first {
		t.Errorf("OutputInfo after a failed rewrite = %+v, %v; want %+v", got, err, first)
	}

	func() {
		defer func() { recover() }()
		e.st.WriteOutput("job_panic", OutputMeta{}, func(w io.Writer) error {
			io.WriteString(w, "x")
			panic("converter bug")
		})
	}()
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))

	if _, err := e.st.WriteOutput("job_abc", OutputMeta{ContentType: "not a type"}, failing); err == nil {
		t.Error("WriteOutput accepted an invalid content type")
	}
}

func TestStore_Delete(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_a", "in")
	e.seal("job_a")
	e.mustWriteOutput("job_a", "out", OutputMeta{})
	e.mustUpload("job_b", "pending")
	e.mustWriteOutput("job_c", "orphan output", OutputMeta{})

	ids, err := e.st.JobIDs()
	if err != nil || !slices.Equal(ids, []string{"job_a", "job_b", "job_c"}) {
		t.Fatalf("JobIDs = %v, %v; want [job_a job_b job_c]", ids, err)
	}
	for _, id := range ids {
		if err := e.st.Delete(id); err != nil {
			t.Fatalf("Delete(%s): %v", id, err)
		}
	}
	if err := e.st.Delete("job_never"); err != nil {
		t.Errorf("Delete of an absent job = %v, want nil", err)
	}
	for _, sub := range []string{"uploads", "inputs", "outputs"} {
		assertDirEmpty(t, filepath.Join(e.dir, sub))
	}
	if ids, _ := e.st.JobIDs(); len(ids) != 0 {
		t.Errorf("JobIDs after Delete = %v", ids)
	}
}

func TestStore_Check(t *testing.T) {
	e := newTestEnv(t)
	if err := e.st.Check(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.dir, "tmp")); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Check(); !errors.Is(err, ErrStorage) {
		t.Errorf("Check without tmp/ = %v, want ErrStorage", err)
	}
	os.Mkdir(filepath.Join(e.dir, "tmp"), 0o700)
}
