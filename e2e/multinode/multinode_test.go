// Package multinode runs several real `convsvc serve` processes on one PostgreSQL database
// (and, for the kill test, one S3 bucket) and checks what must hold across nodes: the per-key
// write limit and the spend cap stay exact when the requests are spread over the nodes, and
// the jobs of a node killed mid-conversion are finished by the others.
package multinode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/promtext"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
)

// binary is the convsvc built once for the package.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if raceEnabled && testing.Short() {
		// The nodes under test are child processes built without -race, so the detector would
		// watch only this process's clients (docs/reliability.md, "CI's time budget"). The
		// plain step runs these tests; the code each node runs is raced in-process by
		// service's, httpapi's and pgstore's tests on PostgreSQL.
		fmt.Println("multinode: skipped under -race -short (the nodes are child processes built without -race; the plain go test ./... runs these tests)")
		os.Exit(0)
	}
	bin, cleanup := buildBinary()
	binary = bin
	code := testpg.Run(m) // stops the private PostgreSQL server
	tests3.Stop()         // and the local versitygw, if a test started it
	cleanup()
	os.Exit(code)
}

// buildBinary builds convsvc from the module root, two levels above this package.
func buildBinary() (string, func()) {
	dir, err := os.MkdirTemp("", "convsvc-multinode-*")
	if err != nil {
		panic(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err == nil {
		_, err = testproc.Build(dir, root)
	}
	if err != nil {
		os.RemoveAll(dir)
		panic("build convsvc: " + err.Error())
	}
	return filepath.Join(dir, "convsvc"), func() { os.RemoveAll(dir) }
}

// adminToken is the token every node is given: with PostgreSQL the nodes must share it.
const adminToken = "multinode-admin-token-0123456789abcdef"

// cluster is n serve processes on one database.
type cluster struct {
	dbURL string
	nodes []*testproc.Proc
}

// startCluster starts n nodes on a fresh database; extra flags go to every node.
func startCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	c := &cluster{dbURL: testpg.NewDatabase(t)}
	for i := 0; i < n; i++ {
		args := append([]string{"--database", c.dbURL, "--admin-token", adminToken, "--workers", "1"}, extra...)
		c.nodes = append(c.nodes, testproc.Serve(t, binary, t.TempDir(), args...))
	}
	return c
}

// admin is an admin client of node i.
func (c *cluster) admin(i int) *client.Client {
	return &client.Client{BaseURL: c.nodes[i].URL, Key: adminToken, Retries: -1}
}

// api is a client of node i with key, which never retries, so every answer is counted.
func (c *cluster) api(i int, key string) *client.Client {
	return &client.Client{BaseURL: c.nodes[i].URL, Key: key, Retries: -1,
		HTTP: &http.Client{Timeout: testenv.Scale(60 * time.Second)}}
}

// newAccount creates an account with the cap on node 0 and a key for it on node 1.
func (c *cluster) newAccount(t *testing.T, name string, capCents int64) (client.Account, string) {
	t.Helper()
	ctx := context.Background()
	acct, err := c.admin(0).CreateAccount(ctx, name, capCents)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	key, err := c.admin(1%len(c.nodes)).CreateKey(ctx, acct.ID)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return acct, key.Key
}

// verifyLedger opens the database directly and checks the ledger: reserved = unfinished jobs
// per account, each month's spend = its successes.
func (c *cluster) verifyLedger(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := pgstore.Open(ctx, c.dbURL, pgstore.Options{})
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	defer st.Close()
	if err := st.VerifyLedger(); err != nil {
		t.Fatalf("ledger: %v", err)
	}
}

// createResult is the outcome of one create.
type createResult struct {
	ok   bool
	code client.ErrorCode
	err  error
}

// createsSpread sends n concurrent creates with key, round-robin over the nodes, and returns
// the number accepted and the error codes of the others; any other failure fails the test.
func (c *cluster) createsSpread(t *testing.T, key string, n int) (accepted int, refused map[client.ErrorCode]int, perNode []int) {
	t.Helper()
	results := make([]createResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			_, err := c.api(i%len(c.nodes), key).CreateJob(context.Background(),
				client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 100}, "")
			var apiErr *client.APIError
			switch {
			case err == nil:
				results[i].ok = true
			case errors.As(err, &apiErr):
				results[i].code = apiErr.Code
			default:
				results[i].err = err
			}
		}(i)
	}
	close(start)
	wg.Wait()
	refused = map[client.ErrorCode]int{}
	perNode = make([]int, len(c.nodes))
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("create %d on node %d: %v", i, i%len(c.nodes), r.err)
		case r.ok:
			accepted++
			perNode[i%len(c.nodes)]++
		default:
			refused[r.code]++
		}
	}
	return accepted, refused, perNode
}

// TestMultiNode_RateLimitExact sends 200 concurrent creates for one key spread over three
// nodes: exactly 120 (SPEC's per-key limit per rolling minute) are accepted and the other 80
// are 429 rate_limited, whichever node they reach.
func TestMultiNode_RateLimitExact(t *testing.T) {
	c := startCluster(t, 3)
	acct, key := c.newAccount(t, "ratelimit", 1_000_000)
	began := time.Now()
	accepted, refused, perNode := c.createsSpread(t, key, 200)
	if took := time.Since(began); took >= 50*time.Second {
		// The window is a rolling minute: only a burst well inside it has an exact answer.
		t.Fatalf("200 creates took %v, too long to stay inside one 60 s window", took)
	}
	if accepted != 120 || refused[client.CodeRateLimited] != 80 || len(refused) != 1 {
		t.Fatalf("accepted %d, refused %v (per node accepted %v); want 120 accepted and 80 rate_limited", accepted, refused, perNode)
	}
	for i, n := range perNode {
		if n == 0 {
			t.Errorf("node %d accepted none of the creates (per node %v): the test did not spread the load", i, perNode)
		}
	}
	got, err := c.admin(2).Account(context.Background(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReservedCents != 120 {
		t.Errorf("reserved_cents = %d after 120 accepted creates, want 120", got.ReservedCents)
	}
	// The next write on any node is refused too: the window is shared, not per node.
	for i := range c.nodes {
		_, err := c.api(i, key).CreateJob(context.Background(), client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 100}, "")
		if !client.IsCode(err, client.CodeRateLimited) {
			t.Errorf("create on node %d after the burst: %v, want rate_limited", i, err)
		}
	}
	c.verifyLedger(t)
}

// TestMultiNode_SpendCapExact sends 100 concurrent creates spread over three nodes for an
// account with a spend cap of 25 cents: exactly 25 are accepted, the other 75 are SPEC's
// 403 limit_reached, and 25 cents are reserved.
func TestMultiNode_SpendCapExact(t *testing.T) {
	const capCents, creates = 25, 100
	c := startCluster(t, 3)
	acct, key := c.newAccount(t, "spendcap", capCents)
	accepted, refused, perNode := c.createsSpread(t, key, creates)
	if accepted != capCents || refused[client.CodeLimitReached] != creates-capCents || len(refused) != 1 {
		t.Fatalf("accepted %d, refused %v (per node %v); want %d accepted and %d limit_reached",
			accepted, refused, perNode, capCents, creates-capCents)
	}
	got, err := c.admin(1).Account(context.Background(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReservedCents != capCents || got.SpentCents != 0 {
		t.Errorf("account after the race: reserved %d, spent %d; want %d and 0", got.ReservedCents, got.SpentCents, capCents)
	}
	c.verifyLedger(t)
}

// TestMultiNode_WaitWokenByAnotherNode parks a GET /v1/jobs/{id}?wait=60 on node 2 (seen in
// node 2's convsvc_long_polls_waiting gauge) and cancels the job on node 0: the long poll
// returns the cancelled job, woken by the other node's change rather than its 60 s timeout.
func TestMultiNode_WaitWokenByAnotherNode(t *testing.T) {
	c := startCluster(t, 3)
	_, key := c.newAccount(t, "wait", 100)
	ctx := context.Background()
	res, err := c.api(0, key).CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 100}, "")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		job client.Job
		err error
		at  time.Time
	}
	done := make(chan answer, 1)
	go func() {
		j, err := c.api(2, key).GetJob(ctx, res.Job.ID, 60*time.Second)
		done <- answer{j, err, time.Now()}
	}()
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for waiting(t, c.nodes[2].URL) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the long poll never parked on node 2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancelled := time.Now()
	if _, err := c.api(0, key).CancelJob(ctx, res.Job.ID); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.job.Status != client.StatusCancelled {
		t.Fatalf("the long poll on node 2 returned %s, want cancelled", a.job.Status)
	}
	// Generous: the 60 s wait would only end long after this; a wake-up takes milliseconds.
	if took := a.at.Sub(cancelled); took > 45*time.Second {
		t.Fatalf("the long poll returned %v after the cancel on another node: not woken by it", took)
	}
}

// waiting is node url's convsvc_long_polls_waiting gauge.
func waiting(t *testing.T, url string) float64 {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	m, err := promtext.Parse(string(body))
	if err != nil {
		t.Fatal(err)
	}
	return m.Value("convsvc_long_polls_waiting")
}
