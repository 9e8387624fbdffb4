package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/store"
)

// TestS3_InputFaultRequeues: when S3 cannot deliver a claimed job's input (the endpoint does
// not answer), the worker's conversion_failed outcome is storage's fault: the job goes back to
// the queue with its attempt counted instead of failing; the input a worker opens is the one
// the start sealed (Job.Upload reaches OpenInput).
func TestS3_InputFaultRequeues(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, _, err := st.EnsureDefaultAccount(10)
	if err != nil {
		t.Fatal(err)
	}
	// An endpoint where nothing listens: every request is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	s3, err := s3store.New(s3store.Options{Endpoint: dead, Region: "us-east-1", Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, ScratchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	objects := s3Objects{s: s3}
	q := newJobQueue(st, objects, log, nil, 3)
	files := jobFiles{blobs: objects, queue: q}

	job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 5},
		func(j store.Job) (store.Response, error) { return store.Response{Status: 200, Body: []byte("{}")}, nil })
	if err != nil {
		t.Fatal(err)
	}
	up := store.Upload{Size: 5, ETag: `"abc"`, VersionID: "v1"}
	if _, err := st.StartSealedJob(acct.ID, job.ID, up); err != nil {
		t.Fatal(err)
	}
	task, ok, err := q.Claim(context.Background())
	if err != nil || !ok || task.JobID != job.ID || task.Attempt != 1 {
		t.Fatalf("claim: %+v %v %v", task, ok, err)
	}
	if got := files.claimed(job.ID); got.Upload == nil || *got.Upload != up {
		t.Fatalf("the worker sees upload %+v, want the sealed %+v", got.Upload, up)
	}
	if _, err := files.OpenInput(job.ID); !errors.Is(err, s3store.ErrStorage) {
		t.Fatalf("open input on a dead endpoint: %v, want s3store.ErrStorage", err)
	}
	// What the pool reports when OpenInput fails.
	if err := q.Finish(context.Background(), convert.Outcome{Task: task, Code: convert.CodeConversionFailed, Message: "internal error: could not read the input"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Job(acct.ID, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusQueued || got.Attempt != 1 || got.ErrorCode != "" {
		t.Fatalf("after an input fault: %s attempt %d %q, want queued attempt 1", got.Status, got.Attempt, got.ErrorCode)
	}
	if len(q.running) != 0 || len(q.inputFaults) != 0 {
		t.Fatalf("queue keeps %d running and %d faults after the outcome", len(q.running), len(q.inputFaults))
	}
}
