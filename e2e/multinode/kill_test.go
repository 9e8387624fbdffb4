package multinode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestMultiNode_KillMidConversion runs three nodes on PostgreSQL and one S3 bucket
// (versitygw, or CONVSVC_TEST_S3_*), spreads creates, uploads to presigned URLs, starts,
// cancels, waits and downloads over them, and SIGKILLs the node that holds the lease of a
// slow conversion while it runs; after the kill, a running job is cancelled through another
// node than the one that created it. Afterwards every job is in the state its requests put it in,
// the killed node's job was requeued by another node's reaper and succeeded as attempt 2,
// reserved = the unfinished jobs, the month's spend = the successes (VerifyLedger too), every
// output downloads with its recorded SHA-256, and no object in the bucket lacks a job.
//
// The nodes run with a short --lease (killLease) so the takeover does not wait out the
// default 30 s; -short runs it too.
func TestMultiNode_KillMidConversion(t *testing.T) {
	bk := tests3.NewBucket(t, tests3.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", bk.AccessKey) // inherited by the serve processes
	t.Setenv("AWS_SECRET_ACCESS_KEY", bk.SecretKey)
	const prefix = "multinode"
	c := startCluster(t, 3, "--object-storage", "s3://"+bk.Name+"/"+prefix,
		"--s3-endpoint", bk.Endpoint, "--s3-region", bk.Region, "--max-attempts", "3",
		"--lease", killLease().String())
	acct, key := c.newAccount(t, "load", 10_000)
	ctx := context.Background()
	api := func(i int) *client.Client { return c.api(i, key) }

	small := testenv.NoisePNG(t, 48, 32)
	want := map[string]client.Status{} // job id -> the status it must end in
	var mu sync.Mutex
	expect := func(id string, st client.Status) { mu.Lock(); want[id] = st; mu.Unlock() }

	// Phase 1, before the kill: on every node, creates, presigned uploads and starts of small
	// jobs; one job per node cancelled (on another node) before it is uploaded; one left created.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for n := 0; n < 3; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			for j := 0; j < 4; j++ {
				id, err := submit(ctx, api(n), small, "gif")
				if err != nil {
					errs <- fmt.Errorf("node %d: %w", n, err)
					return
				}
				expect(id, client.StatusSucceeded)
			}
			res, err := api(n).CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: int64(len(small))}, "")
			if err != nil {
				errs <- err
				return
			}
			if _, err := api((n+1)%3).CancelJob(ctx, res.Job.ID); err != nil {
				errs <- fmt.Errorf("cancel %s on node %d: %w", res.Job.ID, (n+1)%3, err)
				return
			}
			expect(res.Job.ID, client.StatusCancelled)
		}(n)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	idle, err := api(2).CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 10}, "")
	if err != nil {
		t.Fatal(err)
	}
	expect(idle.Job.ID, client.StatusCreated)

	// The slow conversions: a large noisy PNG to GIF, one started on each node; every node
	// runs one worker.
	slow := testenv.NoisePNG(t, 4000, 3000)
	var slowIDs []string
	for n := 0; n < 3; n++ {
		id, err := submit(ctx, api(n), slow, "gif")
		if err != nil {
			t.Fatalf("slow job on node %d: %v", n, err)
		}
		slowIDs = append(slowIDs, id)
		expect(id, client.StatusSucceeded)
	}

	// Wait for a slow job running under a lease, and find the node that holds it: the lease
	// owner names the node's pid (host-pid-random).
	conn, err := pgx.Connect(ctx, c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	victim, victimJob := -1, ""
	deadline := time.Now().Add(testenv.Scale(90 * time.Second))
	for victim < 0 {
		var id, owner string
		err := conn.QueryRow(ctx, `SELECT id, lease_owner FROM jobs WHERE status = 'running' AND id = ANY($1) ORDER BY started_at LIMIT 1`, slowIDs).Scan(&id, &owner)
		if err == nil {
			for i, p := range c.nodes {
				if strings.Contains(owner, fmt.Sprintf("-%d-", p.Pid())) {
					victim, victimJob = i, id
				}
			}
			if victim < 0 {
				t.Fatalf("lease owner %q of job %s names none of the nodes", owner, id)
			}
		} else if err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no slow job ran within the bound")
		}
		if victim < 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	c.nodes[victim].Kill()
	t.Logf("SIGKILLed node %d while it ran job %s", victim, victimJob)
	var alive []int
	for i := range c.nodes {
		if i != victim {
			alive = append(alive, i)
		}
	}

	// Phase 2, after the kill: more small jobs on the surviving nodes.
	for k := 0; k < 4; k++ {
		id, err := submit(ctx, api(alive[k%2]), small, "gif")
		if err != nil {
			t.Fatalf("submit after the kill: %v", err)
		}
		expect(id, client.StatusSucceeded)
	}

	// A slow job started on one survivor and cancelled on the other once a worker runs it:
	// the cancel reaches whichever node converts it, and it ends cancelled.
	cancelID, err := submit(ctx, api(alive[0]), slow, "gif")
	if err != nil {
		t.Fatalf("slow job after the kill: %v", err)
	}
	expect(cancelID, client.StatusCancelled)
	deadline = time.Now().Add(testenv.Scale(150 * time.Second))
	for {
		var status string
		if err := conn.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, cancelID).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == "running" {
			break
		}
		if status != "queued" || time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want it running before the cancel", cancelID, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := api(alive[1]).CancelJob(ctx, cancelID); err != nil {
		t.Fatalf("cancel the running job %s on node %d: %v", cancelID, alive[1], err)
	}

	// Wait on the survivors until every started job finished (the killed node's lease lapses
	// after killLease, and a reaper runs every half of it).
	final := map[string]client.Job{}
	for id, st := range want {
		if st == client.StatusCreated {
			continue
		}
		deadline := time.Now().Add(testenv.Scale(150 * time.Second))
		for {
			j, err := api(alive[len(final)%2]).GetJob(ctx, id, 10*time.Second)
			if err != nil {
				t.Fatalf("get %s: %v", id, err)
			}
			if j.Finished() {
				final[id] = j
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s still %s (attempt %d)", id, j.Status, j.Attempt)
			}
		}
	}

	// Every job is in the state its requests put it in; the killed node's job ran again.
	succeeded := 0
	for id, st := range want {
		j, err := api(alive[0]).GetJob(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != st {
			t.Errorf("job %s is %s (%s), want %s", id, j.Status, j.Error(), st)
			continue
		}
		switch {
		case id == victimJob && j.Attempt != 2:
			t.Errorf("the killed node's job %s succeeded at attempt %d, want 2 (requeued once)", id, j.Attempt)
		case id != victimJob && st == client.StatusSucceeded && j.Attempt != 1:
			t.Errorf("job %s succeeded at attempt %d, want 1", id, j.Attempt)
		}
		if st != client.StatusSucceeded {
			continue
		}
		succeeded++
		var buf bytes.Buffer
		if _, err := api(alive[succeeded%2]).DownloadTo(ctx, *j.Output, &buf); err != nil {
			t.Errorf("download %s: %v", id, err)
		} else if sum := sha256.Sum256(buf.Bytes()); hex.EncodeToString(sum[:]) != j.Output.SHA256 {
			t.Errorf("output of %s does not match its sha256", id)
		}
	}

	// Ledger: one cent reserved per unfinished job (the created one), the month's spend = the
	// successes; and VerifyLedger on the whole database.
	got, err := c.admin(alive[1]).Account(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReservedCents != 1 || got.SpentCents != int64(succeeded) {
		t.Errorf("account: reserved %d, spent %d; want 1 (the created job) and %d (the successes)", got.ReservedCents, got.SpentCents, succeeded)
	}
	c.verifyLedger(t)

	// No object in the bucket without a job; the recorded attempt's output is there.
	st, err := pgstore.Open(ctx, c.dbURL, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs := map[string]store.Job{}
	for after := ""; ; {
		page, more, err := st.ListJobs(acct.ID, store.ListParams{Limit: 100, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			jobs[j.ID] = j
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if len(jobs) != len(want) {
		t.Errorf("the database holds %d jobs of the account, want %d", len(jobs), len(want))
	}
	objects := listObjects(t, bk, prefix+"/")
	for _, k := range objects {
		parts := strings.Split(strings.TrimPrefix(k, prefix+"/"), "/")
		if len(parts) < 2 {
			t.Errorf("object %s: unexpected key", k)
			continue
		}
		if _, ok := jobs[parts[1]]; !ok {
			t.Errorf("object %s has no job", k)
		}
	}
	for id, j := range jobs {
		if j.Status != store.StatusSucceeded {
			continue
		}
		k := fmt.Sprintf("%s/outputs/%s/%d", prefix, id, j.Output.Attempt)
		if !contains(objects, k) {
			t.Errorf("succeeded job %s: its output %s is not in the bucket (have %v)", id, k, objects)
		}
	}
}

// killLease is the nodes' --lease in the kill test: the killed node's job is taken over within
// one and a half of it. A live node heartbeats every third of it and loses a job only when three
// heartbeats in a row do not reach the database, so 6 s leaves a busy machine (load 20) two
// seconds per heartbeat; CONVSVC_TEST_TIMEOUT_SCALE stretches it on slower ones.
func killLease() time.Duration { return testenv.Scale(6 * time.Second).Round(time.Second) }

// submit creates a png -> target job on c, uploads data to its presigned URL and starts it.
// The job stays out of the conversion cache: these tests convert the same input many times and
// need each job to run (a cache hit would be succeeded before it could be killed or cancelled).
func submit(ctx context.Context, c *client.Client, data []byte, target string) (string, error) {
	noCache := false
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: target, InputBytes: int64(len(data)), Cache: &noCache}, "")
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	if err := c.Upload(ctx, res.UploadURL, bytes.NewReader(data), int64(len(data))); err != nil {
		return res.Job.ID, fmt.Errorf("upload %s: %w", res.Job.ID, err)
	}
	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
		return res.Job.ID, fmt.Errorf("start %s: %w", res.Job.ID, err)
	}
	return res.Job.ID, nil
}

// listObjects lists every key under prefix in the bucket.
func listObjects(t *testing.T, bk tests3.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(bk.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bk.Name), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
