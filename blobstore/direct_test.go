package blobstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the process's user and system CPU time so far: a benchmark whose wall time
// is mostly the disk's (fsync) shows its own cost in it.
func processCPU(t testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sha256Hex is the lowercase hex SHA-256 of b.
func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// writeThroughDup writes data through a duplicate of f's descriptor, as a worker process
// that was passed the descriptor does: the Store sees none of the writes.
func writeThroughDup(t testing.TB, f *os.File, data []byte) {
	t.Helper()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	other := os.NewFile(uintptr(fd), "other-writer")
	defer other.Close()
	for len(data) > 0 { // uneven writes, as an encoder's
		n := min(len(data), 100_003)
		if _, err := other.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
}

func TestPendingOutput_FileWrittenByAnotherWriter(t *testing.T) {
	e := newTestEnv(t)
	data := bytes.Repeat([]byte("0123456789abcdef-"), 200_000) // 3.4 MB: many chunks
	p, err := e.st.CreateOutput("job_direct")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	f, err := p.File()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.File(); err == nil {
		t.Error("a second File succeeded; want an error")
	}
	writeThroughDup(t, f, data)
	if _, err := p.Write([]byte("x")); err == nil {
		t.Error("Write after File succeeded; want an error (the file is another writer's)")
	}
	if r, n, err := p.Written(); err != nil || n != int64(len(data)) {
		t.Fatalf("Written = %d, %v; want %d", n, err, len(data))
	} else if b, _ := io.ReadAll(io.NewSectionReader(r, 0, n)); !bytes.Equal(b, data) {
		t.Fatal("Written reads other bytes than were written")
	}
	out, err := p.Commit(OutputMeta{ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	want := Output{Bytes: int64(len(data)), SHA256: sha256Hex(data)}
	if out != want {
		t.Fatalf("Commit = %+v, want %+v", out, want)
	}
	info, _, err := e.st.OutputInfo("job_direct")
	if err != nil || info != want {
		t.Fatalf("OutputInfo = %+v, %v; want %+v", info, err, want)
	}
	resp := e.do("GET", e.downloadURL("job_direct", want.Bytes), nil, 0, nil)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, data) || resp.Header.Get("ETag") != `"`+want.SHA256+`"` {
		t.Fatalf("download: status %d, %d bytes, ETag %s; want 200, the bytes written, ETag of their hash", resp.StatusCode, len(got), resp.Header.Get("ETag"))
	}
}

func TestPendingOutput_FileEmptyOutput(t *testing.T) {
	e := newTestEnv(t)
	p, err := e.st.CreateOutput("job_empty")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.File(); err != nil {
		t.Fatal(err)
	}
	out, err := p.Commit(OutputMeta{})
	if want := (Output{Bytes: 0, SHA256: sha256Hex(nil)}); err != nil || out != want {
		t.Fatalf("Commit = %+v, %v; want %+v", out, err, want)
	}
}

// A conversion that fails or is cancelled after writing part of the output through File
// leaves nothing: the pool discards the output.
func TestPendingOutput_FileDiscardLeavesNothing(t *testing.T) {
	e := newTestEnv(t)
	p, err := e.st.CreateOutput("job_failed")
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.File()
	if err != nil {
		t.Fatal(err)
	}
	writeThroughDup(t, f, bytes.Repeat([]byte{1}, 1<<20))
	p.Discard()
	if _, _, err := e.st.OutputInfo("job_failed"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OutputInfo after Discard = %v, want ErrNotFound", err)
	}
	if fileExists(t, filepath.Join(e.dir, "outputs", "job_failed")) {
		t.Fatal("outputs/job_failed exists after Discard")
	}
	assertDirEmpty(t, filepath.Join(e.dir, "tmp"))
}

// An output written through File replaces an earlier one whole, as one written through Write.
func TestPendingOutput_FileReplacesOutput(t *testing.T) {
	e := newTestEnv(t)
	e.mustWriteOutput("job_again", strings.Repeat("old", 1000), OutputMeta{})
	p, err := e.st.CreateOutput("job_again")
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.File()
	if err != nil {
		t.Fatal(err)
	}
	writeThroughDup(t, f, []byte("new"))
	if _, err := p.Commit(OutputMeta{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(e.dir, "outputs", "job_again")); got != "new" {
		t.Fatalf("output = %q, want %q", got, "new")
	}
}

// The upload's SHA-256 is taken while the PUT's body is received and kept with the file
// (UploadSHA256 reads it back without hashing the file again); where the filesystem keeps no
// attribute, UploadSHA256 hashes the file, with the same answer.
func TestStore_UploadSHA256(t *testing.T) {
	body := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 400_000) // 10.4 MB: hashed beside the writes
	for _, attrs := range []bool{true, false} {
		name := "attribute"
		if !attrs {
			name = "read back"
		}
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t)
			e.st.metaAttrs = attrs
			if _, err := e.st.UploadSHA256("job_none"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("UploadSHA256 with no upload = %v, want ErrNotFound", err)
			}
			e.mustUpload("job_hashed", body)
			want := sha256Hex([]byte(body))
			f, err := os.Open(filepath.Join(e.dir, "uploads", "job_hashed"))
			if err != nil {
				t.Fatal(err)
			}
			attr, aerr := getAttr(f, uploadAttr)
			f.Close()
			switch {
			case attrs && aerr != nil && !errors.Is(aerr, errNoMetaAttr):
				t.Fatal(aerr)
			case attrs && aerr == nil && string(attr) != want:
				t.Fatalf("the upload's attribute = %q, want the body's SHA-256 %s", attr, want)
			case !attrs && !errors.Is(aerr, errNoMetaAttr):
				t.Fatalf("attribute %q (%v) with attributes off, want none", attr, aerr)
			}
			// Inside Seal, as a start's cache lookup calls it (no deadlock on the id lock).
			var got string
			err = e.st.Seal("job_hashed", func(int64) error {
				var err error
				got, err = e.st.UploadSHA256("job_hashed")
				e.started.start("job_hashed")
				return err
			})
			if err != nil || got != want {
				t.Fatalf("UploadSHA256 = %q, %v; want %s", got, err, want)
			}
			// An input the server fetched itself (source_url) is hashed as it is written too.
			if err := e.st.ImportInput("job_imported", strings.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
			f, err = os.Open(filepath.Join(e.dir, "uploads", "job_imported"))
			if err != nil {
				t.Fatal(err)
			}
			attr, aerr = getAttr(f, uploadAttr)
			f.Close()
			if attrs && aerr == nil && string(attr) != want || attrs && aerr != nil && !errors.Is(aerr, errNoMetaAttr) {
				t.Fatalf("the imported input's attribute = %q (%v), want %s", attr, aerr, want)
			}
			if got, err := e.st.UploadSHA256("job_imported"); err != nil || got != want {
				t.Fatalf("UploadSHA256 of an imported input = %q, %v; want %s", got, err, want)
			}
		})
	}
}

// An attribute that is not a SHA-256 (damaged, or set by something else) is not believed.
func TestStore_UploadSHA256DamagedAttribute(t *testing.T) {
	e := newTestEnv(t)
	e.mustUpload("job_damaged", "some bytes")
	f, err := os.OpenFile(filepath.Join(e.dir, "uploads", "job_damaged"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = setAttr(f, uploadAttr, []byte("not a hash"))
	f.Close()
	if errors.Is(err, errNoMetaAttr) {
		t.Skip("the filesystem keeps no user attributes")
	} else if err != nil {
		t.Fatal(err)
	}
	if got, err := e.st.UploadSHA256("job_damaged"); err != nil || got != sha256Hex([]byte("some bytes")) {
		t.Fatalf("UploadSHA256 = %q, %v; want the file's hash", got, err)
	}
}

// BenchmarkWorkerOutput is what storing a worker process's output costs the server, for a
// 2.6 MB output (the 12 MP JPEG of docs/benchmarks.md): "scratch" is the worker writing into
// a scratch file that the server then copies into the output (written twice, hashed beside
// the copy), "direct" the worker writing into the output's own file (File), hashed by reading
// it back; both end with Commit (fsync, attribute, rename, directory fsync). The writes stand
// in for the worker's and are timed too.
func BenchmarkWorkerOutput(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstu-"), 2_670_440/32)
	for _, mode := range []string{"scratch", "direct"} {
		b.Run(mode, func(b *testing.B) {
			e := newTestEnv(b)
			scratch := b.TempDir()
			b.SetBytes(int64(len(data)))
			i := 0
			cpu0 := processCPU(b)
			defer func() { b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				i++
				p, err := e.st.CreateOutput(fmt.Sprintf("job_bench%d", i)) // a new output, as each job's
				if err != nil {
					b.Fatal(err)
				}
				if mode == "direct" {
					f, err := p.File()
					if err != nil {
						b.Fatal(err)
					}
					writeThroughDup(b, f, data)
				} else {
					tmp, err := os.CreateTemp(scratch, "output-*")
					if err != nil {
						b.Fatal(err)
					}
					os.Remove(tmp.Name())
					writeThroughDup(b, tmp, data)
					if _, err := tmp.Seek(0, io.SeekStart); err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(p, tmp); err != nil {
						b.Fatal(err)
					}
					tmp.Close()
				}
				if _, err := p.Commit(OutputMeta{ContentType: "image/jpeg"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
