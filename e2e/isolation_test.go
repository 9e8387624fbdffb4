package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// TestFaults_ProcessIsolation runs the poison converters in worker processes (--isolation
// process, the default on Linux): a converter that allocates past its memory cap is killed and
// its job fails memory_exceeded naming the cap while a job on the other worker succeeds; one
// that ignores its context is killed at the timeout and leaves no abandoned conversion; one
// that kills its process fails only its own job, after --max-attempts, as worker_crashed; the
// server serves throughout, and /metrics counts every start, kill and crash.
func TestFaults_ProcessIsolation(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--isolation", "process", "--workers", "2", "--conversion-timeout", "4s",
		"--max-conversion-memory", "64MiB", "--max-attempts", "2", "--drain-timeout", "1s")
	c := &client.Client{BaseURL: p.URL, Key: p.Key}

	alloc := mustSubmit(t, c, "poison-alloc", "poison-out", []byte("x"))
	slow := mustSubmit(t, c, "poison-slow", "poison-out", []byte("y"))
	j := waitStatus(t, c, alloc, "")
	if j.Status != "failed" || deref((*string)(j.ErrorCode)) != "conversion_failed" || deref(j.ErrorReason) != "memory_exceeded" ||
		!strings.Contains(deref(j.ErrorMessage), "memory cap of ") {
		t.Fatalf("poison-alloc: %s (reason %q)", j.Error(), deref(j.ErrorReason))
	}
	if j := waitStatus(t, c, slow, ""); j.Status != "succeeded" || j.ErrorReason != nil {
		t.Fatalf("the job beside it: %s", j.Error())
	}
	waitMetric(t, p.URL, `convsvc_worker_kills_total{cause="memory"}`, 1)

	hang := mustSubmit(t, c, "poison-hang", "poison-out", []byte("x"))
	if j := waitStatus(t, c, hang, ""); j.Status != "failed" || !strings.Contains(deref(j.ErrorMessage), "timed out") {
		t.Fatalf("poison-hang: %s", j.Error())
	}
	waitMetric(t, p.URL, `convsvc_worker_kills_total{cause="timeout"}`, 1)
	waitMetric(t, p.URL, "convsvc_conversions_abandoned_running", 0)

	panics := mustSubmit(t, c, "poison-panic", "poison-out", []byte("x"))
	if j := waitStatus(t, c, panics, ""); j.Status != "failed" || !strings.Contains(deref(j.ErrorMessage), "internal error") {
		t.Fatalf("poison-panic: %s", j.Error())
	}

	exits := mustSubmit(t, c, "poison-exit", "poison-out", []byte("x"))
	j = waitStatus(t, c, exits, "")
	if j.Status != "failed" || deref((*string)(j.ErrorCode)) != "expired_or_exhausted" || deref(j.ErrorReason) != "worker_crashed" || j.Attempt != 2 {
		t.Fatalf("poison-exit: %s attempt %d reason %q", j.Error(), j.Attempt, deref(j.ErrorReason))
	}
	waitMetric(t, p.URL, "convsvc_worker_crashes_total", 2)

	// The server never went down: the next job converts, on a fresh worker.
	next := mustSubmit(t, c, "poison-slow", "poison-out", []byte("z"))
	if j := waitStatus(t, c, next, ""); j.Status != "succeeded" {
		t.Fatalf("next job: %s", j.Error())
	}
	select {
	case <-p.Done():
		t.Fatalf("the server exited: %v\n%s", p.ExitErr(), p.Stderr())
	default:
	}
	if r, err := c.GetJob(context.Background(), next, 0); err != nil || r.Status != "succeeded" {
		t.Fatalf("get: %v", err)
	}
	p.Signal(syscall.SIGTERM, 30*time.Second)
	checkStopped(t, data, true)
}
