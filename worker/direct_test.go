package worker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/testing/testfs"
)

// fileOutput is a DirectOutput on a real file, as the local blob store's pending output is:
// the worker process writes the file through its descriptor; nothing comes through Write.
type fileOutput struct {
	f      *os.File
	writes int   // calls of Write: there must be none
	failed error // what WriteFailed was told
}

func newFileOutput(t *testing.T, dir string) *fileOutput {
	t.Helper()
	f, err := os.CreateTemp(dir, "output-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &fileOutput{f: f}
}

func (o *fileOutput) Write(p []byte) (int, error) { o.writes++; return len(p), nil }
func (o *fileOutput) File() (*os.File, error)     { return o.f, nil }
func (o *fileOutput) WriteFailed(err error) error {
	o.failed = err
	return &convert.StorageError{Err: err}
}

// contents reads the whole file, whatever its offset.
func (o *fileOutput) contents(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(o.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The worker writes a DirectOutput's file itself: the same bytes the scratch-file path
// copies into a writer, with nothing passing through Write.
func TestPool_DirectOutput(t *testing.T) {
	p := newPool(t, 1)
	png := readSample(t, "images/sample.png")
	task := convert.Task{JobID: "direct", InputFormat: "png", TargetFormat: "jpeg"}
	var copied bytes.Buffer
	if _, err := p.Run(context.Background(), task, inputFile(t, png), &copied, ""); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same worker, reused after a direct job
		out := newFileOutput(t, t.TempDir())
		if _, err := p.Run(context.Background(), task, inputFile(t, png), out, ""); err != nil {
			t.Fatal(err)
		}
		if got := out.contents(t); !bytes.Equal(got, copied.Bytes()) {
			t.Fatalf("the direct output is %d bytes, the copied one %d: want the same bytes", len(got), copied.Len())
		}
		if out.writes != 0 || out.failed != nil {
			t.Fatalf("Write called %d times, WriteFailed with %v: want neither", out.writes, out.failed)
		}
	}
	if s := p.Stats(); s.Starts != 1 {
		t.Fatalf("stats %+v, want one worker for every job", s)
	}
}

// A conversion that fails after the worker wrote part of a DirectOutput answers the
// conversion's error; the output's owner discards what was written (the pool does, as for
// any failed job). Its check failing is such a case: the worker wrote half a PNG.
func TestPool_DirectOutputFailedConversion(t *testing.T) {
	p := newPool(t, 1)
	out := newFileOutput(t, t.TempDir())
	_, err := p.Run(context.Background(), convert.Task{JobID: "cut", InputFormat: "cut-png", TargetFormat: "png"}, inputFile(t, readSample(t, "images/sample.png")), out, "")
	var ce *convert.Error
	if !errors.As(err, &ce) || ce.Reason != convert.ReasonOutputInvalid {
		t.Fatalf("Run = %v, want the output check's failure", err)
	}
	if out.failed != nil {
		t.Fatalf("WriteFailed(%v) for a conversion's failure; want it only for the disk's", out.failed)
	}
}

// A full disk under a DirectOutput is the disk's fault, told to the output with its errno, so
// the job is retried and its message says "storage full".
func TestPool_DirectOutputDiskFull(t *testing.T) {
	dir := testfs.SmallDir(t, 1<<20)
	p := newPool(t, 1)
	out := newFileOutput(t, dir)
	testfs.Fill(t, dir, "filler")
	_, err := p.Run(context.Background(), convert.Task{JobID: "full", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, readSample(t, "images/sample.png")), out, "")
	var se *convert.StorageError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Run = %v, want a StorageError wrapping ENOSPC", err)
	}
	if !errors.Is(out.failed, syscall.ENOSPC) {
		t.Fatalf("WriteFailed got %v, want ENOSPC", out.failed)
	}
	// The worker stays usable.
	next := newFileOutput(t, t.TempDir())
	if _, err := p.Run(context.Background(), convert.Task{JobID: "next", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, readSample(t, "images/sample.png")), next, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
}
