package service_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestStart_SealSurvivesRestart is a stop right after start's bbolt commit, before any worker
// ran: the job is queued and its file is uploads/{id}, where Seal leaves it. After a restart on
// the same data dir, a PUT to the job is refused as sealed, and the worker converts the file
// that was uploaded; once it succeeded, the input is removed and the output kept.
func TestStart_SealSurvivesRestart(t *testing.T) {
	// The stop is staged by reopening the bbolt file and reading uploads/{id}; on PostgreSQL
	// and S3 the same guarantees are TestS3_PutAfterStartChangesNothing and the multinode kill test.
	testenv.BboltOnly(t, "reopens the bbolt file")
	testenv.LocalBlobsOnly(t, "reads the local blob store's files")
	dir := filepath.Join(t.TempDir(), "data")
	useDir := func(c *service.Config) { c.DataDir = dir }
	e1 := testenv.Start(t, useDir)
	key, accountID := e1.Key, e1.AccountID
	png := testenv.NoisePNG(t, 64, 48)
	res := e1.Create(key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e1.Upload(res.UploadURL, png), 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e1.Main.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// What survives: the start committed, as handleStartJob commits it inside Seal.
	st, err := testenv.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartJob(accountID, res.Job.ID, int64(len(png))); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	upload := filepath.Join(dir, "blobs", "uploads", res.Job.ID)
	if _, err := os.Stat(filepath.Join(dir, "blobs", "inputs", res.Job.ID)); !os.IsNotExist(err) {
		t.Fatalf("inputs/%s: %v, want it absent (Seal moves nothing)", res.Job.ID, err)
	}

	e2 := testenv.Start(t, useDir)
	// The same signed URL (the secret is kept in the data dir) on the new listener.
	uploadURL := e2.Main.BlobURL() + strings.TrimPrefix(res.UploadURL, e1.Main.BlobURL())
	other := bytes.Repeat([]byte{0xff}, len(png))
	// Sealed, or already converted by the worker of e2 (then finished): refused either way,
	// and the output below proves the refused PUT replaced nothing.
	if r := e2.Upload(uploadURL, other); r.Status != 409 || (r.ErrorCode() != "upload_sealed" && r.ErrorCode() != "job_finished") {
		t.Fatalf("PUT to the started job: %d %s, want 409 upload_sealed or job_finished", r.Status, r.Body)
	}
	j := e2.WaitFinished(key, res.Job.ID)
	if j.Status != "succeeded" || j.Output == nil {
		t.Fatalf("job %s: %+v", j.Status, j)
	}
	// Finished: the upload URL is closed and the input is gone; the output stays.
	testenv.MustStatus(t, e2.Upload(uploadURL, other), 409, "job_finished")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(upload); os.IsNotExist(err) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("uploads/%s 30 s after success: %v, want it removed", res.Job.ID, err)
		}
	}
	r := e2.Do("GET", j.Output.URL, "", nil)
	testenv.MustStatus(t, r, 200, "")
	img, err := jpeg.Decode(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 64 || b.Dy() != 48 {
		t.Fatalf("output is %dx%d, want the uploaded 64x48", b.Dx(), b.Dy())
	}
}
