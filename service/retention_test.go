package service_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestRetention_OnTime: with a short retention and a sweep interval of an hour, an unstarted
// job reads 404 once expires_at passes and its cent and files are released at expiry, not at
// the next tick. The store is empty when the job is created, so the sweeper was waiting for
// the interval and must be woken by the create.
func TestRetention_OnTime(t *testing.T) {
	testenv.LocalBlobsOnly(t, "reads the local blob store's files")
	e := testenv.Start(t, func(c *service.Config) {
		c.Retention = 3 * time.Second
		c.SweepInterval = time.Hour
	})
	data := []byte("col\n1\n")
	res := e.Create(e.Key, "csv", "json", int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	if got := e.Account(e.AccountID)["reserved_cents"]; got != float64(1) {
		t.Fatalf("reserved_cents %v before expiry, want 1", got)
	}
	upload := filepath.Join(e.Cfg.DataDir, "blobs", "uploads", res.Job.ID)
	if _, err := os.Stat(upload); err != nil {
		t.Fatalf("uploaded file: %v", err)
	}

	// Read the job from expires_at on: 404, even if the sweep has not run yet.
	time.Sleep(time.Until(res.Job.ExpiresAt))
	testenv.MustStatus(t, e.Do("GET", "/v1/jobs/"+res.Job.ID, e.Key, nil), 404, "not_found")

	// The reservation and the file go at expiry; the bound is generous for a busy machine and
	// far below the hour-long sweep interval.
	deadline := res.Job.ExpiresAt.Add(30 * time.Second)
	for {
		_, statErr := os.Stat(upload)
		reserved := e.Account(e.AccountID)["reserved_cents"]
		if reserved == float64(0) && os.IsNotExist(statErr) {
			// A figure for docs/reliability.md, not an assertion.
			t.Logf("cent and file released %s after expires_at", time.Since(res.Job.ExpiresAt))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after expires_at: reserved_cents %v, upload file err %v", reserved, statErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ok, err := e.Main.Store().JobExists(res.Job.ID); err != nil || ok {
		t.Fatalf("job record after expiry: exists=%v err=%v", ok, err)
	}
}
