package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

// TestFaults_KillLoop drives a mixed load from several goroutines and SIGKILLs the server at
// random points 20 times, restarting it each time; after every kill and at the end the data dir
// must be consistent.
func TestFaults_KillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop runs without -short")
	}
	data := filepath.Join(t.TempDir(), "data")
	sample := testenv.Sample(t, "images/sample.png")
	p := testproc.Serve(t, binary, data, "--workers", "2")
	key := p.Key
	var base atomic.Pointer[string]
	base.Store(&p.URL)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var created, succeeded, cancelled atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := &client.Client{BaseURL: *base.Load(), Key: key, Retries: -1, HTTP: &http.Client{Timeout: 5 * time.Second}}
				ctx := context.Background()
				from, to, data := "png", "jpeg", sample
				if rng.IntN(2) == 0 {
					from, to, data = "poison-slow", "poison-out", sample
				}
				id, err := submit(ctx, c, from, to, data)
				if id != "" {
					created.Add(1)
				}
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the server is down or restarting
					continue
				}
				if rng.IntN(4) == 0 {
					if _, err := c.CancelJob(ctx, id); err == nil {
						cancelled.Add(1)
					}
					continue
				}
				if j, err := c.GetJob(ctx, id, 2*time.Second); err == nil && j.Status == "succeeded" {
					succeeded.Add(1)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for i := 0; i < 20; i++ {
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		p.Kill()
		checkStopped(t, data, false)
		p = testproc.Serve(t, binary, data, "--workers", "2")
		base.Store(&p.URL)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	// Let every queued job finish, then stop gracefully.
	waitIdle(t, &client.Client{BaseURL: p.URL, Key: key})
	if !p.Signal(syscall.SIGTERM, 30*time.Second) {
		t.Fatal("server did not stop on SIGTERM")
	}
	jobs := checkStopped(t, data, true)
	byStatus := map[string]int{}
	for _, j := range jobs {
		byStatus[j.Status]++
	}
	t.Logf("20 kills: %d jobs created, %d seen succeeding, %d cancelled; final states %v", created.Load(), succeeded.Load(), cancelled.Load(), byStatus)
	if byStatus[store.StatusSucceeded] == 0 {
		t.Fatal("no job ever succeeded")
	}
}

// waitIdle waits (up to a minute, scaled) until no job of the first page is queued or running.
func waitIdle(t *testing.T, c *client.Client) {
	t.Helper()
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for time.Now().Before(deadline) {
		page, _, err := listAll(c)
		if err != nil {
			t.Fatal(err)
		}
		busy := 0
		for _, j := range page {
			if j.Status == "queued" || j.Status == "running" {
				busy++
			}
		}
		if busy == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func listAll(c *client.Client) ([]client.Job, bool, error) {
	req, _ := http.NewRequest("GET", c.BaseURL+"/v1/jobs?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	var page struct {
		Data    []client.Job `json:"data"`
		HasMore bool         `json:"has_more"`
	}
	err = jsonDecode(resp.Body, &page)
	return page.Data, page.HasMore, err
}

// TestFaults_Drain: SIGTERM with one conversion running and others queued. An in-flight
// long-poll completes with the outcome; the running job fails worker_shutdown at the deadline;
// queued jobs stay queued and run at the next start.
func TestFaults_Drain(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--workers", "1", "--drain-timeout", "300ms")
	key := p.Key
	c := &client.Client{BaseURL: p.URL, Key: key}
	hang := mustSubmit(t, c, "poison-hang", "poison-out", []byte("x"))
	waitStatus(t, c, hang, "running")
	queued := []string{
		mustSubmit(t, c, "poison-slow", "poison-out", []byte("a")),
		mustSubmit(t, c, "poison-slow", "poison-out", []byte("b")),
	}
	inflight := make(chan client.Job, 1)
	go func() {
		j, err := c.GetJob(context.Background(), hang, 30*time.Second)
		if err != nil {
			t.Errorf("in-flight long-poll: %v", err)
		}
		inflight <- j
	}()
	waitLongPolls(t, p.URL, 1) // the long-poll is parked on the server
	if !p.Signal(syscall.SIGTERM, 30*time.Second) {
		t.Fatal("no exit after SIGTERM")
	}
	if p.ExitErr() != nil {
		t.Fatalf("exit: %v\n%s", p.ExitErr(), p.Stderr())
	}
	select {
	case j := <-inflight:
		if j.Status != "failed" || j.ErrorCode == nil || *j.ErrorCode != "worker_shutdown" {
			t.Fatalf("in-flight request saw %+v", j)
		}
	case <-time.After(testenv.Scale(30 * time.Second)):
		t.Fatal("in-flight request never completed")
	}
	jobs := checkStopped(t, data, true)
	for _, j := range jobs {
		for _, q := range queued {
			if j.ID == q && j.Status != store.StatusQueued {
				t.Fatalf("queued job %s is %s after the drain", q, j.Status)
			}
		}
	}
	p = testproc.Serve(t, binary, data, "--workers", "1")
	c = &client.Client{BaseURL: p.URL, Key: key}
	for _, q := range queued {
		if j := waitStatus(t, c, q, ""); j.Status != "succeeded" || j.Attempt != 1 {
			t.Fatalf("queued job after restart: %+v", j)
		}
	}
	p.Signal(syscall.SIGTERM, 30*time.Second)
	checkStopped(t, data, true)
}

// TestFaults_DrainLetsRunningJobsFinish: a conversion that finishes within the drain succeeds.
func TestFaults_DrainLetsRunningJobsFinish(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--workers", "1", "--drain-timeout", "10s")
	c := &client.Client{BaseURL: p.URL, Key: p.Key}
	id := mustSubmit(t, c, "poison-slow", "poison-out", []byte("x"))
	waitStatus(t, c, id, "running")
	p.Signal(syscall.SIGTERM, 30*time.Second)
	for _, j := range checkStopped(t, data, true) {
		if j.ID == id && j.Status != store.StatusSucceeded {
			t.Fatalf("job %s after drain", j.Status)
		}
	}
}

// TestFaults_PoisonJobs: a converter that panics fails its job and the worker lives on. A
// converter that hangs ignoring its context fails its job ("timed out") at once, but keeps its
// worker until it really returns (issue 18 item 1): /metrics counts it, the other worker takes
// the next job, and once every worker holds a stray nothing more runs.
func TestFaults_PoisonJobs(t *testing.T) {
	// In the server's process (--isolation none): abandoned conversions hold their workers.
	// TestFaults_ProcessIsolation is the same faults in worker processes.
	data := filepath.Join(t.TempDir(), "data")
	// The timeout must leave room for poison-slow's 300 ms on a busy machine: at 500 ms it timed
	// out beside three busy loops (issue 24).
	p := testproc.Serve(t, binary, data, "--isolation", "none", "--workers", "2", "--conversion-timeout", "3s", "--drain-timeout", "1s")
	c := &client.Client{BaseURL: p.URL, Key: p.Key}
	for i, tt := range []struct{ from, message string }{
		{"poison-panic", "internal error"},
		{"poison-hang", "timed out"},
	} {
		id := mustSubmit(t, c, tt.from, "poison-out", []byte("x"))
		j := waitStatus(t, c, id, "")
		if j.Status != "failed" || *j.ErrorCode != "conversion_failed" || !strings.Contains(*j.ErrorMessage, tt.message) {
			t.Fatalf("%s: %+v %s", tt.from, j, deref(j.ErrorMessage))
		}
		// A worker is free for the next job.
		ok := mustSubmit(t, c, "poison-slow", "poison-out", []byte("y"))
		if j := waitStatus(t, c, ok, ""); j.Status != "succeeded" {
			t.Fatalf("after %s the next job %+v %s", tt.from, j, deref(j.ErrorMessage))
		}
		waitMetric(t, p.URL, "convsvc_conversions_abandoned_running", i) // the hang is a stray
	}
	// A second hang takes the other worker: both are held, so a new job waits.
	id := mustSubmit(t, c, "poison-hang", "poison-out", []byte("x"))
	if j := waitStatus(t, c, id, ""); j.Status != "failed" || !strings.Contains(deref(j.ErrorMessage), "timed out") {
		t.Fatalf("second hang: %+v", j)
	}
	waitMetric(t, p.URL, "convsvc_conversions_abandoned_running", 2)
	waitMetric(t, p.URL, "convsvc_workers_busy", 2)
	// Both workers report that they wait for their stray: from there a worker leaves only when
	// its stray returns (poison-hang sleeps an hour) or a drain ends, so no job can be claimed.
	// The reports are the signal; no sleep stands in for "long enough".
	waitLog(t, p, "the worker waits for it to return", 2)
	next := mustSubmit(t, c, "poison-slow", "poison-out", []byte("z"))
	if j, err := c.GetJob(context.Background(), next, 0); err != nil || j.Status != "queued" {
		t.Fatalf("with every worker held by a stray, the next job is %+v (%v), want queued", j, err)
	}
	// The drain stops claims and, after --drain-timeout, lets the workers go: the job was never
	// claimed in the whole life of the process, so it is still queued, with no attempt, and no
	// transition of it to running was logged.
	p.Signal(syscall.SIGTERM, 30*time.Second)
	found := false
	for _, j := range checkStopped(t, data, true) {
		if j.ID == next {
			found = true
			if j.Status != store.StatusQueued || j.Attempt != 0 {
				t.Fatalf("with every worker held by a stray, the next job ended %s at attempt %d, want queued at 0", j.Status, j.Attempt)
			}
		}
	}
	if !found {
		t.Fatalf("job %s is not in the store", next)
	}
	if !loggedRunning(p.Stderr(), id) { // the pattern finds a claim: the second hang's
		t.Fatalf("no claim of %s in the log:\n%s", id, p.Stderr())
	}
	if loggedRunning(p.Stderr(), next) {
		t.Fatalf("the next job %s was claimed:\n%s", next, p.Stderr())
	}
}

// loggedRunning reports whether a text log shows the job's transition to running (its claim).
func loggedRunning(log, jobID string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `msg="job transition"`) && strings.Contains(line, " job_id="+jobID+" ") && strings.Contains(line, " status=running ") {
			return true
		}
	}
	return false
}

// waitLog waits until the server has logged n lines containing msg.
func waitLog(t *testing.T, p *testproc.Proc, msg string, n int) {
	t.Helper()
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for strings.Count(p.Stderr(), msg) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server logged %q %d times, want %d:\n%s", msg, strings.Count(p.Stderr(), msg), n, p.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaults_CrashEveryTime: a job that kills the process every time it runs ends
// expired_or_exhausted after --max-attempts restarts, and the server then stays up. It runs
// conversions in the server's process (--isolation none); in worker processes the same job
// kills only its worker (TestFaults_ProcessIsolation).
func TestFaults_CrashEveryTime(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--isolation", "none", "--workers", "1", "--max-attempts", "3")
	key := p.Key
	c := &client.Client{BaseURL: p.URL, Key: key}
	id, err := submit(context.Background(), c, "poison-exit", "poison-out", []byte("x"))
	if err != nil {
		// The worker can take the job and kill the process before the start's answer leaves
		// it; only a process that did die excuses the error.
		select {
		case <-p.Done():
		case <-time.After(testenv.Scale(60 * time.Second)):
			t.Fatalf("submit poison-exit->poison-out: %v", err)
		}
	}
	restarts := 0
	diedStarting := false
	for {
		if !diedStarting {
			select {
			case <-p.Done():
			case <-time.After(testenv.Scale(60 * time.Second)):
				t.Fatalf("server did not crash after %d restarts", restarts)
			}
		}
		checkStopped(t, data, false)
		restarts++
		if restarts > 3 {
			t.Fatalf("crash loop: still crashing after %d restarts", restarts)
		}
		next, err := testproc.Start(binary, data, "--isolation", "none", "--workers", "1", "--max-attempts", "3")
		// The restarted server can take the job again and die of it before it says it serves
		// (seen under -race beside busy loops, issue 24): that is the same crash.
		var se *testproc.StartError
		var exit *exec.ExitError
		if diedStarting = errors.As(err, &se) && errors.As(se.Err, &exit) && exit.ExitCode() == 3; diedStarting {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(next.Kill)
		p = next
		c = &client.Client{BaseURL: p.URL, Key: key, Retries: -1}
		// Either the job is now failed, or the server picks it up again and dies.
		j, err := c.GetJob(context.Background(), id, 0)
		if err == nil && j.Status == "failed" {
			if *j.ErrorCode != "expired_or_exhausted" || j.Attempt != 3 || restarts != 3 {
				t.Fatalf("after %d restarts: %+v", restarts, j)
			}
			break
		}
	}
	// No crash loop: the server stays up and converts.
	ok := mustSubmit(t, c, "poison-slow", "poison-out", []byte("y"))
	if j := waitStatus(t, c, ok, ""); j.Status != "succeeded" {
		t.Fatalf("next job %+v", j)
	}
	p.Signal(syscall.SIGTERM, 30*time.Second)
	checkStopped(t, data, true)
}

// TestFaults_DiskFull mounts a 4 MiB tmpfs under the blob store: an upload that does not fit
// answers 507 insufficient_storage with nothing half-written, create answers 502 while the
// disk is full, and everything works again once space is freed.
func TestFaults_DiskFull(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	blobs := filepath.Join(data, "blobs")
	if err := os.MkdirAll(blobs, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", blobs).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a size-limited tmpfs here (%v: %s); TestAPI_StorageUnavailable* cover injected write failures", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", blobs).Run() })
	p := testproc.Serve(t, binary, data)
	c := &client.Client{BaseURL: p.URL, Key: p.Key, Retries: -1}
	ctx := context.Background()
	big := make([]byte, 5<<20)
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(big))}, "")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Upload(ctx, res.UploadURL, strings.NewReader(string(big)), int64(len(big)))
	if !isCode(err, "insufficient_storage") {
		t.Fatalf("upload into a full disk: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(blobs, "tmp")); len(left) != 0 {
		t.Fatalf("half-written files left: %v", left)
	}
	if _, err := c.StartJob(ctx, res.Job.ID); !isCode(err, "storage_unavailable") {
		t.Fatalf("start without an upload: %v", err)
	}
	// Fill the disk completely: create reports object storage as unavailable.
	filler := filepath.Join(blobs, "filler")
	os.WriteFile(filler, make([]byte, 4<<20), 0o600) // fails part-way: the disk is full
	// Create trusts a healthy answer of the storage probe for 2 s, then asks again.
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for {
		_, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10}, "")
		if isCode(err, "storage_unavailable") {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("create on a full disk: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	os.Remove(filler)
	sample := testenv.Sample(t, "images/sample.png")
	id := mustSubmit(t, c, "png", "jpeg", sample)
	if j := waitStatus(t, c, id, ""); j.Status != "succeeded" {
		t.Fatalf("after freeing space: %+v", j)
	}
	p.Signal(syscall.SIGTERM, 30*time.Second)
}

// waitLongPolls waits until /metrics says n long-polls are parked on the server.
func waitLongPolls(t *testing.T, url string, n int) {
	t.Helper()
	want := fmt.Sprintf("\nconvsvc_long_polls_waiting %d\n", n)
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %d parked long-polls (last error: %v)", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitMetric waits until /metrics shows the unlabelled metric name at value want.
func waitMetric(t *testing.T, url, name string, want int) {
	t.Helper()
	line := fmt.Sprintf("\n%s %d\n", name, want)
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(body)
			if strings.Contains(last, line) {
				return
			}
		}
		if time.Now().After(deadline) {
			for _, l := range strings.Split(last, "\n") {
				if strings.HasPrefix(l, name+" ") {
					t.Fatalf("/metrics never showed %s %d; last: %s", name, want, l)
				}
			}
			t.Fatalf("/metrics never showed %s %d (last error: %v)", name, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
