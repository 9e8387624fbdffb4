package service_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// noSweep keeps the periodic sweep (which also removes dead inputs) from running during a
// test, so that an input that goes was removed by the stores' FinishHook and the cleaner.
func noSweep(c *service.Config) { c.SweepInterval = time.Hour }

// inputStorage is how a test sees a job's input in the service's object storage.
type inputStorage struct {
	// has reports whether the job's input (upload or sealed input) is stored.
	has func(t *testing.T, id string) bool
	// put stores data as the job's upload directly, not through the upload URL.
	put func(t *testing.T, id string, data []byte)
}

func localInputs(e *testenv.Env) inputStorage {
	blobs := filepath.Join(e.Cfg.DataDir, "blobs")
	return inputStorage{
		has: func(t *testing.T, id string) bool {
			t.Helper()
			for _, dir := range []string{"uploads", "inputs"} {
				if _, err := os.Stat(filepath.Join(blobs, dir, id)); err == nil {
					return true
				} else if !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			return false
		},
		put: func(t *testing.T, id string, data []byte) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(blobs, "uploads", id), data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func s3Inputs(e *testenv.Env) inputStorage {
	return inputStorage{
		has: func(t *testing.T, id string) bool {
			t.Helper()
			return slices.Contains(e.ObjectKeys(), e.UploadKey(id))
		},
		put: func(t *testing.T, id string, data []byte) {
			t.Helper()
			e.PutObject(e.UploadKey(id), data)
		},
	}
}

// waitInputGone polls until the job's input is gone, with a bound generous for a busy machine.
func waitInputGone(t *testing.T, in inputStorage, id, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for in.has(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the input of job %s is still stored 30 s after the job finished", what, id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkFinishedInputsGo runs the finishing paths the API and the workers make (cancel, size
// mismatch, success, failure) and checks that each finished job's input is removed with no
// sweep, while a live job's input stays.
func checkFinishedInputsGo(t *testing.T, e *testenv.Env, in inputStorage) {
	png := testenv.NoisePNG(t, 32, 24)
	live := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(live.UploadURL, png), 200, "")
	if !in.has(t, live.Job.ID) {
		t.Fatal("the uploaded input is not where the test looks")
	}

	cancelled := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(cancelled.UploadURL, png), 200, "")
	testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+cancelled.Job.ID+"/cancel", e.Key, nil), 200, "")
	waitInputGone(t, in, cancelled.Job.ID, "cancel")

	mismatch := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	in.put(t, mismatch.Job.ID, png[:10])
	testenv.MustStatus(t, e.Start(e.Key, mismatch.Job.ID), 400, "size_mismatch")
	waitInputGone(t, in, mismatch.Job.ID, "size mismatch")

	ok := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(ok.UploadURL, png), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, ok.Job.ID), 200, "")
	if j := e.WaitFinished(e.Key, ok.Job.ID); j.Status != "succeeded" {
		t.Fatalf("job %+v", j)
	}
	waitInputGone(t, in, ok.Job.ID, "success")

	junk := []byte("this is not a PNG at all")
	bad := e.Create(e.Key, "png", "jpeg", int64(len(junk)))
	testenv.MustStatus(t, e.Upload(bad.UploadURL, junk), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, bad.Job.ID), 200, "")
	if j := e.WaitFinished(e.Key, bad.Job.ID); j.Status != "failed" {
		t.Fatalf("job %+v", j)
	}
	waitInputGone(t, in, bad.Job.ID, "failure")

	if !in.has(t, live.Job.ID) {
		t.Fatal("the input of a live job was removed")
	}
	// The output of the succeeded job stays.
	j := e.Get(e.Key, ok.Job.ID, 0)
	r := e.Do("GET", j.Output.URL, "", nil)
	testenv.MustStatus(t, r, 200, "")
	if int64(len(r.Body)) != j.Output.Bytes {
		t.Fatalf("output is %d bytes, want %d", len(r.Body), j.Output.Bytes)
	}
}

// TestInputCleanup_FinishingPaths_BboltLocal: on bbolt and the local blob store, every path
// that finishes a job removes its input right after the commit, without a sweep.
func TestInputCleanup_FinishingPaths_BboltLocal(t *testing.T) {
	testenv.BboltOnly(t, "the bbolt half of the pair; PostgresS3 is the other")
	testenv.LocalBlobsOnly(t, "the local half of the pair; PostgresS3 is the other")
	e := testenv.Start(t, noSweep)
	checkFinishedInputsGo(t, e, localInputs(e))
}

// TestInputCleanup_FinishingPaths_PostgresS3: the same on PostgreSQL and an S3 bucket.
func TestInputCleanup_FinishingPaths_PostgresS3(t *testing.T) {
	e := testenv.Start(t, testenv.Postgres(t), testenv.S3(t), noSweep)
	checkFinishedInputsGo(t, e, s3Inputs(e))
}

// TestInputCleanup_OutOfAttempts: a job whose output cannot be stored fails at
// --max-attempts in the worker's requeue, and its input goes then (the requeue path had no
// removal of its own before the FinishHook).
func TestInputCleanup_OutOfAttempts(t *testing.T) {
	testenv.LocalBlobsOnly(t, "breaks the blob store's outputs directory")
	e := testenv.Start(t, noSweep, func(c *service.Config) { c.MaxAttempts = 2; c.Workers = 1 })
	in := localInputs(e)
	mend := breakDir(t, filepath.Join(e.Cfg.DataDir, "blobs", "outputs"))
	defer mend()
	res := e.Create(e.Key, "csv", "json", int64(len(csvInput)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, csvInput), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	j := e.WaitFinished(e.Key, res.Job.ID)
	if code := errorCode(j); j.Status != "failed" || code != "conversion_failed" || j.Attempt != 2 {
		t.Fatalf("job: status %s code %q attempt %d, want failed conversion_failed after 2", j.Status, code, j.Attempt)
	}
	waitInputGone(t, in, res.Job.ID, "out of attempts")
}

// TestInputCleanup_CrashRecoveryFails: a job a crash left running at --max-attempts is failed
// by the next start's recovery, and its input goes. The sweep that runs once at every start
// would remove it too, so this shows the path ends without an input, not which of the two
// removed it (TestStore_RecoverRunningFinishHook shows the hook fires).
func TestInputCleanup_CrashRecoveryFails(t *testing.T) {
	testenv.BboltOnly(t, "start-up recovery is the embedded store's")
	testenv.LocalBlobsOnly(t, "reads the blob store's files")
	dir := filepath.Join(t.TempDir(), "data")
	useDir := func(c *service.Config) { c.DataDir = dir; c.MaxAttempts = 1 }
	e1 := testenv.Start(t, useDir, noSweep)
	key, accountID := e1.Key, e1.AccountID
	res := e1.Create(key, "csv", "json", int64(len(csvInput)))
	testenv.MustStatus(t, e1.Upload(res.UploadURL, csvInput), 200, "")
	if err := e1.Main.Close(); err != nil {
		t.Fatal(err)
	}
	// The crash: the job started and a worker claimed it, then the process died.
	st, err := testenv.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartJob(accountID, res.Job.ID, int64(len(csvInput))); err != nil {
		t.Fatal(err)
	}
	if job, ok, err := st.ClaimJob(); err != nil || !ok || job.ID != res.Job.ID {
		t.Fatalf("claim: %v %v %v", job.ID, ok, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !localInputs(e1).has(t, res.Job.ID) {
		t.Fatal("the input is not where the test looks")
	}
	e2 := testenv.Start(t, useDir, noSweep)
	j := e2.Get(key, res.Job.ID, 0)
	if code := errorCode(j); j.Status != "failed" || code != "expired_or_exhausted" {
		t.Fatalf("recovered job: status %s code %q", j.Status, code)
	}
	waitInputGone(t, localInputs(e2), res.Job.ID, "crash recovery")
}

// TestInputCleanup_ReaperFails_PostgresS3: a job claimed by a node that stopped (it never
// renews its lease) is failed at --max-attempts by this node's reaper, and its S3 input goes
// with no sweep: the reaper's transaction reports it to this node's FinishHook.
func TestInputCleanup_ReaperFails_PostgresS3(t *testing.T) {
	pg := testenv.Postgres(t)
	var dbURL string
	e := testenv.Start(t, pg, testenv.S3(t), noSweep, func(c *service.Config) {
		dbURL = c.Database
		c.Lease = 2 * time.Second // the reaper runs every second
		c.MaxAttempts = 1
	})
	in := s3Inputs(e)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gone, err := pgstore.Open(ctx, dbURL, pgstore.Options{NodeID: "stopped-node", Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	// The stopped node starts and claims the job before this node's workers do; a job they
	// win converts here, and the test tries again with another.
	var id string
	for try := 0; id == "" && try < 20; try++ {
		res := e.Create(e.Key, "csv", "json", int64(len(csvInput)))
		testenv.MustStatus(t, e.Upload(res.UploadURL, csvInput), 200, "")
		head, err := e.Bucket.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(e.Bucket.Name), Key: aws.String(e.UploadKey(res.Job.ID))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gone.StartSealedJob(e.AccountID, res.Job.ID, store.Upload{Size: int64(len(csvInput)), ETag: aws.ToString(head.ETag)}); err != nil {
			t.Fatal(err)
		}
		if job, ok, err := gone.ClaimJob(); err != nil {
			t.Fatal(err)
		} else if ok && job.ID == res.Job.ID {
			id = job.ID
		}
	}
	if id == "" {
		t.Fatal("this node's workers claimed each of 20 jobs before the other node could")
	}
	j := e.WaitFinished(e.Key, id)
	if code := errorCode(j); j.Status != "failed" || code != "expired_or_exhausted" {
		t.Fatalf("reaped job: status %s code %q", j.Status, code)
	}
	waitInputGone(t, in, id, "lease reaper")
}
