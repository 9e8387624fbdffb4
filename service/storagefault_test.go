package service_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testfs"
	"github.com/convsvc/convsvc/service"
)

// breakDir replaces a directory of the blob store with a regular file, a real fault of the
// filesystem under it (tests run as root, where a read-only mode would not stop a write), and
// returns the function that mends it.
func breakDir(t *testing.T, dir string) (mend func()) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

var storageErrorsMetric = regexp.MustCompile(`(?m)^convsvc_storage_errors_total\{op="output"\} (\d+)`)

func storageErrors(t *testing.T, e *testenv.Env) int {
	t.Helper()
	resp, err := http.Get(e.Main.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := storageErrorsMetric.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no convsvc_storage_errors_total in /metrics")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

var csvInput = []byte("name,n\na,1\nb,2\n")

// TestStorageFault_OutputNotStoredIsRetriedNotFailed: when the blob store cannot keep the
// output (its outputs directory is broken), the input is not blamed: every attempt goes back
// to the queue and counts as a storage error, until --max-attempts fails it conversion_failed
// with a message that says storage was unavailable, its cent released. Mended, the next job
// converts.
func TestStorageFault_OutputNotStoredIsRetriedNotFailed(t *testing.T) {
	testenv.LocalBlobsOnly(t, "makes the local blob store's directories fail (TestS3_StorageUnavailable is S3's)")
	e := testenv.Start(t, func(c *service.Config) { c.MaxAttempts = 3; c.Workers = 1 })
	mend := breakDir(t, filepath.Join(e.Cfg.DataDir, "blobs", "outputs"))
	j := e.Convert(e.Key, "csv", "json", csvInput)
	if code := errorCode(j); j.Status != "failed" || code != "conversion_failed" || j.Attempt != 3 ||
		!strings.HasPrefix(errorMessage(j), "storage unavailable: ") {
		t.Fatalf("job after a persistent storage fault: status %s code %q message %q attempt %d, want failed conversion_failed \"storage unavailable: ...\" after 3 attempts",
			j.Status, code, errorMessage(j), j.Attempt)
	}
	if got := storageErrors(t, e); got != 3 {
		t.Fatalf("convsvc_storage_errors_total %d, want 3", got)
	}
	if r := e.Account(e.AccountID)["reserved_cents"]; r != float64(0) {
		t.Fatalf("reserved_cents %v, want 0", r)
	}
	mend()
	if j := e.Convert(e.Key, "csv", "json", csvInput); j.Status != "succeeded" {
		t.Fatalf("after mending: %+v", j)
	}
}

// TestStorageFault_TransientFaultThenSuccess: a fault that goes away (the output's temporary
// directory broken, then mended while the job is retried) ends in success on a later attempt.
func TestStorageFault_TransientFaultThenSuccess(t *testing.T) {
	testenv.LocalBlobsOnly(t, "makes the local blob store's directories fail (TestS3_StorageUnavailable is S3's)")
	e := testenv.Start(t, func(c *service.Config) { c.MaxAttempts = 1_000_000; c.Workers = 1 })
	res := e.Create(e.Key, "csv", "json", int64(len(csvInput)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, csvInput), 200, "")
	mend := breakDir(t, filepath.Join(e.Cfg.DataDir, "blobs", "tmp"))
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	deadline := time.Now().Add(60 * time.Second)
	for storageErrors(t, e) < 2 {
		if time.Now().After(deadline) {
			j := e.Get(e.Key, res.Job.ID, 0)
			t.Fatalf("no retry after a storage fault: job %s, code %q, attempt %d", j.Status, errorCode(j), j.Attempt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mend()
	j := e.WaitFinished(e.Key, res.Job.ID)
	if j.Status != "succeeded" || j.Attempt < 2 {
		t.Fatalf("job after a transient storage fault: status %s attempt %d, want succeeded on a later attempt", j.Status, j.Attempt)
	}
}

// TestStorageFault_DiskFull puts the blob store on a real file system that is full: the job's
// output cannot be written (ENOSPC), every attempt goes back to the queue, and the last one
// fails the job conversion_failed with "storage full" in its message, not
// expired_or_exhausted, its cent released. Once space is free, a job converts.
func TestStorageFault_DiskFull(t *testing.T) {
	testenv.LocalBlobsOnly(t, "fills the local blob store's file system")
	data := filepath.Join(t.TempDir(), "data")
	blobs := filepath.Join(data, "blobs")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testfs.SmallDir(t, 1<<20), blobs); err != nil {
		t.Fatal(err)
	}
	e := testenv.Start(t, func(c *service.Config) { c.DataDir = data; c.MaxAttempts = 2; c.Workers = 1 })
	res := e.Create(e.Key, "csv", "json", int64(len(csvInput)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, csvInput), 200, "")
	testfs.Fill(t, blobs, "filler")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	j := e.WaitFinished(e.Key, res.Job.ID)
	if code := errorCode(j); j.Status != "failed" || code != "conversion_failed" || j.Attempt != 2 ||
		!strings.HasPrefix(errorMessage(j), "storage full: ") {
		t.Fatalf("job on a full disk: status %s code %q message %q attempt %d, want failed conversion_failed \"storage full: ...\" after 2 attempts",
			j.Status, code, errorMessage(j), j.Attempt)
	}
	if r := e.Account(e.AccountID)["reserved_cents"]; r != float64(0) {
		t.Fatalf("reserved_cents %v, want 0", r)
	}
	if err := os.Remove(filepath.Join(blobs, "filler")); err != nil {
		t.Fatal(err)
	}
	if j := e.Convert(e.Key, "csv", "json", csvInput); j.Status != "succeeded" {
		t.Fatalf("after freeing space: %+v", j)
	}
}

func errorMessage(j testenv.Job) string {
	if j.ErrorMessage == nil {
		return ""
	}
	return *j.ErrorMessage
}

func errorCode(j testenv.Job) string {
	if j.ErrorCode == nil {
		return ""
	}
	return string(*j.ErrorCode)
}
