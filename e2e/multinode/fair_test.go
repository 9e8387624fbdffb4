package multinode

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/tests3"
)

// TestMultiNode_FairClaims: on three nodes (one worker each), account A queues 40 slow
// conversions, then account B starts one. B's job leaves the queue after at most two of A's
// jobs per node were claimed (the node's current turn and the one after it), not after the
// 30-odd A has queued: B waits about one conversion's time, not A's backlog. Asserted by
// order (A's queued count when B's job is claimed), not by wall time.
func TestMultiNode_FairClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("three nodes and 41 conversions: not in -short")
	}
	bk := tests3.NewBucket(t, tests3.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", bk.AccessKey) // inherited by the serve processes
	t.Setenv("AWS_SECRET_ACCESS_KEY", bk.SecretKey)
	c := startCluster(t, 3, "--object-storage", "s3://"+bk.Name+"/fair",
		"--s3-endpoint", bk.Endpoint, "--s3-region", bk.Region)
	acctA, keyA := c.newAccount(t, "a", 10_000)
	acctB, keyB := c.newAccount(t, "b", 10_000)
	ctx := context.Background()

	slow := testenv.NoisePNG(t, 1200, 900)
	const aJobs = 40 // 80 writes of one key: under its 120 a minute
	var wg sync.WaitGroup
	errs := make(chan error, aJobs)
	for n := 0; n < 3; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			for i := n; i < aJobs; i += 3 {
				if _, err := submit(ctx, c.api(n, keyA), slow, "gif"); err != nil {
					errs <- fmt.Errorf("A's job %d on node %d: %w", i, n, err)
					return
				}
			}
		}(n)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	queued := func(acct string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'queued'`, acct).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	bJob, err := submit(ctx, c.api(1, keyB), slow, "gif")
	if err != nil {
		t.Fatal(err)
	}
	before := queued(acctA.ID)
	if before < 12 {
		t.Fatalf("only %d of A's jobs queued when B started: the backlog drained too fast to show anything", before)
	}
	// Wait (on the job's own state, up to the bound) until B's job left the queue.
	deadline := time.Now().Add(testenv.Scale(5 * time.Minute))
	for {
		var st string
		if err := conn.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, bJob).Scan(&st); err != nil {
			t.Fatal(err)
		}
		if st != "queued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's job still queued; A has %d queued", queued(acctA.ID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := queued(acctA.ID)
	if claimed := before - after; claimed > 6 {
		t.Fatalf("%d of A's jobs were claimed before B's one (A had %d queued when B started): B waited behind A's backlog", claimed, before)
	}
	t.Logf("A had %d queued when B started, %d when B's job was claimed", before, after)
	job, err := c.api(2, keyB).GetJob(ctx, bJob, 60*time.Second)
	for err == nil && job.Status != client.StatusSucceeded && job.Status != client.StatusFailed && time.Now().Before(deadline) {
		job, err = c.api(2, keyB).GetJob(ctx, bJob, 60*time.Second)
	}
	if err != nil || job.Status != client.StatusSucceeded {
		t.Fatalf("B's job: %s, %v", job.Status, err)
	}
	_ = acctB
}
