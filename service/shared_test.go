package service_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/worker"
)

// TestMain stops the private PostgreSQL server the shared-store tests start, and the S3
// server of the S3 tests.
func TestMain(m *testing.M) {
	if worker.IsChild() { // a worker process started by a test with IsolationProcess
		os.Exit(worker.ChildMain())
	}
	code := testpg.Run(m)
	tests3.Stop()
	os.Exit(code)
}

// startRunning starts a slow conversion (a large noisy PNG to GIF) and waits until a worker
// runs it.
func startRunning(t *testing.T, e *testenv.Env) string {
	t.Helper()
	data := testenv.NoisePNG(t, 4000, 3000)
	res := e.Create(e.Key, "png", "gif", int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	deadline := time.Now().Add(60 * time.Second)
	for e.Get(e.Key, res.Job.ID, 0).Status != "running" {
		if time.Now().After(deadline) {
			t.Fatal("job never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return res.Job.ID
}

// waitLog polls the captured log until a record matches, failing after a generous bound.
func waitLog(t *testing.T, logs *testenv.LogCapture, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		for _, rec := range logs.Records() {
			if match(rec) {
				return rec
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log record: %s", what)
	return nil
}

// openOtherNode opens the service's database as another node would.
func openOtherNode(t *testing.T, dbURL string) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := pgstore.Open(ctx, dbURL, pgstore.Options{NodeID: "other-node"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// TestShared_CancelOnAnotherNodeStopsConversion: a job cancelled through another node's
// connection stops the conversion here through the database's notification. The lease is
// ten minutes, so no heartbeat can be what noticed it within the test's bound.
func TestShared_CancelOnAnotherNodeStopsConversion(t *testing.T) {
	var logs testenv.LogCapture
	e := testenv.Start(t, testenv.Postgres(t), logs.Option(), func(c *service.Config) {
		c.Workers = 1
		c.Lease = 10 * time.Minute
	})
	id := startRunning(t, e)
	other := openOtherNode(t, e.Cfg.Database)
	if _, err := other.CancelJob(e.AccountID, id); err != nil {
		t.Fatal(err)
	}
	// The conversion was stopped (code conversion_failed, "cancelled"), not run to the end
	// and then refused.
	rec := waitLog(t, &logs, "the cancelled conversion's dropped outcome", func(r map[string]any) bool {
		return r["msg"] == "job no longer running; outcome dropped" && r["job_id"] == id
	})
	if rec["code"] != "conversion_failed" {
		t.Fatalf("the conversion was not stopped by the cancel: %v", rec)
	}
	if j := e.Get(e.Key, id, 0); j.Status != "cancelled" || j.Output != nil {
		t.Fatalf("job %+v", j)
	}
}

// TestShared_LostLeaseStopsConversionAndReaperRequeues plays two failures of other nodes on
// one database. Job 1 runs here when another node reaps its lease (as after a stall longer
// than the lease): the heartbeat finds the lease gone and stops the conversion, and the job
// runs again as attempt 2. Job 2 is claimed by another node that then stops (it never
// heartbeats): this node's reaper requeues it when its lease lapses, and converts it as
// attempt 2.
func TestShared_LostLeaseStopsConversionAndReaperRequeues(t *testing.T) {
	var logs testenv.LogCapture
	e := testenv.Start(t, testenv.Postgres(t), logs.Option(), func(c *service.Config) {
		c.Workers = 1
		c.Lease = 2 * time.Second
	})
	id1 := startRunning(t, e)

	// Job 2 is queued behind job 1 (one worker); the other node claims it and goes silent.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := pgstore.Open(ctx, e.Cfg.Database, pgstore.Options{NodeID: "crashed-node", Lease: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	png := testenv.Sample(t, "images/sample.png")
	res2 := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(res2.UploadURL, png), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res2.Job.ID), 200, "")
	claimed, ok, err := other.ClaimJob()
	if err != nil || !ok || claimed.ID != res2.Job.ID || claimed.Attempt != 1 {
		t.Fatalf("the other node claimed %+v, %v, %v; want job 2, attempt 1", claimed, ok, err)
	}

	// Job 1's lease lapses (set in the past) and the other node reaps it. Should this node's
	// heartbeat renew the lease in between, try again.
	reaped := false
	for try := 0; try < 10 && !reaped; try++ {
		if _, err := other.Pool().Exec(ctx, `UPDATE jobs SET lease_expires_at = now() - interval '1 second'
			WHERE id = $1 AND status = 'running' AND attempt = 1`, id1); err != nil {
			t.Fatal(err)
		}
		requeued, _, err := other.ReapExpiredLeases(3)
		if err != nil {
			t.Fatal(err)
		}
		reaped = slices.Contains(requeued, id1)
	}
	if !reaped {
		t.Fatal("job 1 could not be reaped")
	}
	// Attempt 1 was stopped (conversion_failed), not run to the end and then refused.
	rec := waitLog(t, &logs, "attempt 1's dropped outcome", func(r map[string]any) bool {
		return r["msg"] == "job no longer running; outcome dropped" && r["job_id"] == id1 && r["attempt"] == 1.0
	})
	if rec["code"] != "conversion_failed" {
		t.Fatalf("the conversion was not stopped when its lease was lost: %v", rec)
	}
	waitLog(t, &logs, "job 2 requeued by this node's reaper", func(r map[string]any) bool {
		return r["msg"] == "job transition" && r["job_id"] == res2.Job.ID && r["reason"] == "lease_expired" && r["status"] == "queued"
	})
	for _, id := range []string{id1, res2.Job.ID} {
		if j := e.WaitFinished(e.Key, id); j.Status != "succeeded" || j.Attempt != 2 || j.Output == nil {
			t.Fatalf("job %+v", j)
		}
	}
	if acct := e.Account(e.AccountID); acct["reserved_cents"] != 0.0 || acct["spent_cents"] != 2.0 {
		t.Fatalf("ledger %v", acct)
	}
}

// TestShared_NodesStartingTogetherCreateOneDefaultAccount: three nodes started at once on an
// empty database create account "default" once (one key printed), and every node sees it.
func TestShared_NodesStartingTogetherCreateOneDefaultAccount(t *testing.T) {
	pg := testenv.Postgres(t)
	var mu sync.Mutex
	var created []string
	nodes := make([]*service.Main, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		cfg := service.Config{
			DataDir: filepath.Join(t.TempDir(), "data"), Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0", Workers: 1,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnDefaultKey: func(accountID, key string) {
				mu.Lock()
				defer mu.Unlock()
				created = append(created, accountID)
			},
		}
		pg(&cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = service.Run(cfg)
		}()
	}
	wg.Wait()
	for i, m := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		t.Cleanup(func() { m.Close() })
	}
	if len(created) != 1 {
		t.Fatalf("default account created %d times", len(created))
	}
	for i, m := range nodes {
		accts, _, err := m.JobStore().AccountsPage(store.PageParams{Limit: 100})
		if err != nil || len(accts) != 1 || accts[0].ID != created[0] || accts[0].Name != "default" {
			t.Fatalf("node %d sees %+v, %v", i, accts, err)
		}
	}
}
