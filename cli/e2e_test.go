package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/worker"
)

var binary string

func TestMain(m *testing.M) {
	if worker.IsChild() { // a worker process `convsvc config` started to see its confinement
		os.Exit(worker.ChildMain())
	}
	bin, cleanup := testproc.BuildForTests()
	binary = bin
	code := testpg.Run(m) // and stops the PostgreSQL server the backend tests started
	tests3.Stop()
	cleanup()
	os.Exit(code)
}

// proc is a running `convsvc serve` with the helpers these tests use.
type proc struct{ *testproc.Proc }

// serve starts the binary with one worker on kernel-chosen loopback ports.
func serve(t *testing.T, data string, args ...string) *proc {
	t.Helper()
	return &proc{testproc.Serve(t, binary, data, append([]string{"--workers", "1"}, args...)...)}
}

// childProcessOnly skips t in a -race build: what t checks runs in convsvc child processes,
// which testproc builds without -race, so under the detector only this process's waiting is
// checked, at the cost of making its multi-megapixel inputs under it (26-82 s each at a load
// of 20 in .ci/run's -race -short step). The plain step (go test ./...) runs t; the code the
// children run is raced by service, worker and httpapi's own tests.
func childProcessOnly(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("-race: the code under test runs in a child process built without -race; the plain run runs this")
	}
}

// signal sends sig and fails the test unless the process exits within a minute.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if !p.Signal(sig, 60*time.Second) {
		t.Fatal("process did not exit")
	}
}

// startBigJob reserves, uploads and starts a slow conversion and waits until it runs.
func startBigJob(t *testing.T, c *client.Client, data []byte, waitRunning bool) string {
	t.Helper()
	ctx := context.Background()
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: int64(len(data))}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upload(ctx, res.UploadURL, strings.NewReader(string(data)), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
		t.Fatal(err)
	}
	if waitRunning {
		deadline := time.Now().Add(testenv.Scale(30 * time.Second))
		for {
			j, err := c.GetJob(ctx, res.Job.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status == "running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job stayed %s", j.Status)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return res.Job.ID
}

// checkLedger opens the stopped server's database and checks integrity and the ledger.
func checkLedger(t *testing.T, data string) {
	t.Helper()
	st, err := testenv.OpenStore(data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("bbolt check: %v", err)
	}
	if err := st.VerifyLedger(); err != nil {
		t.Fatalf("ledger: %v", err)
	}
}

func TestE2E_SIGKILLMidConversionRequeues(t *testing.T) {
	childProcessOnly(t)
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data)
	if p.Key == "" {
		t.Fatal("serve did not print the default key on an empty data dir")
	}
	key := p.Key
	c := &client.Client{BaseURL: p.URL, Key: key}
	id := startBigJob(t, c, img, true)
	p.signal(t, syscall.SIGKILL)
	checkLedger(t, data)

	p = serve(t, data)
	if p.Key != "" {
		t.Fatal("a second start must not print a new key")
	}
	c = &client.Client{BaseURL: p.URL, Key: key}
	job, err := c.WaitJob(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "succeeded" || job.Attempt != 2 || job.Output == nil {
		t.Fatalf("after restart: %+v", job)
	}
	if err := c.Download(context.Background(), *job.Output, filepath.Join(t.TempDir(), "out.gif")); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGTERM)
	checkLedger(t, data)
}

func TestE2E_SIGTERMDrainFailsWithWorkerShutdown(t *testing.T) {
	childProcessOnly(t)
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data, "--drain-timeout", "50ms")
	c := &client.Client{BaseURL: p.URL, Key: p.Key}
	key := p.Key
	running := startBigJob(t, c, img, true)
	queued := startBigJob(t, c, img, false)
	start := time.Now()
	p.signal(t, syscall.SIGTERM)
	if p.ExitErr() != nil {
		t.Fatalf("exit after SIGTERM: %v", p.ExitErr())
	}
	if d := time.Since(start); d > testenv.Scale(20*time.Second) {
		t.Fatalf("drain took %v", d)
	}
	checkLedger(t, data)

	// On the next start: the running job failed worker_shutdown, the queued one is still queued
	// and now runs.
	p = serve(t, data)
	c = &client.Client{BaseURL: p.URL, Key: key}
	j, err := c.GetJob(context.Background(), running, 0)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "failed" || j.ErrorCode == nil || *j.ErrorCode != "worker_shutdown" {
		t.Fatalf("running job after drain: %+v", j)
	}
	j, err = c.WaitJob(context.Background(), queued, nil)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "succeeded" || j.Attempt != 1 {
		t.Fatalf("queued job after restart: %+v", j)
	}
	p.signal(t, syscall.SIGTERM)
	checkLedger(t, data)
}

func TestE2E_CrashLoopEndsExpiredOrExhausted(t *testing.T) {
	childProcessOnly(t)
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data, "--max-attempts", "2")
	key := p.Key
	c := &client.Client{BaseURL: p.URL, Key: key}
	id := startBigJob(t, c, img, true)
	p.signal(t, syscall.SIGKILL)

	p = serve(t, data, "--max-attempts", "2")
	c = &client.Client{BaseURL: p.URL, Key: key}
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for {
		j, err := c.GetJob(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == "running" && j.Attempt == 2 {
			break
		}
		if j.Finished() || time.Now().After(deadline) {
			t.Fatalf("second attempt: %+v", j)
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.signal(t, syscall.SIGKILL)

	p = serve(t, data, "--max-attempts", "2")
	c = &client.Client{BaseURL: p.URL, Key: key}
	j, err := c.GetJob(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "failed" || j.ErrorCode == nil || *j.ErrorCode != "expired_or_exhausted" || j.Attempt != 2 {
		t.Fatalf("after the second crash: %+v", j)
	}
	p.signal(t, syscall.SIGTERM)
	checkLedger(t, data)
}

func TestE2E_SecondServeOnSameDataDirFailsFast(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := serve(t, data)
	start := time.Now()
	out, err := exec.Command(binary, "serve", "--data", data, "--listen", "127.0.0.1:0", "--blob-listen", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatal("second serve on the same data dir succeeded")
	}
	if !strings.Contains(string(out), "locked by another process") {
		t.Fatalf("unclear message: %s", out)
	}
	if d := time.Since(start); d > testenv.Scale(15*time.Second) {
		t.Fatalf("took %v to fail", d)
	}
	p.signal(t, syscall.SIGTERM)
}

func TestE2E_ConvertCommandEmbedded(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(testenv.RepoRoot(t), "testdata", "images", "sample.png")
	cmd := exec.Command(binary, "convert", sample, "--to", "jpeg")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("convert: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "sample.jpg"))
	if err != nil || len(got) < 3 || got[0] != 0xFF || got[1] != 0xD8 {
		t.Fatalf("output not a JPEG: %v %x", err, got[:min(len(got), 4)])
	}
	// A failing conversion prints the API's code and message and exits non-zero.
	bad := filepath.Join(dir, "bad.png")
	os.WriteFile(bad, []byte("this is not a png"), 0o644)
	cmd = exec.Command(binary, "convert", bad, "--to", "gif")
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "conversion_failed") {
		t.Fatalf("bad input: %v\n%s", err, out)
	}
	cmd = exec.Command(binary, "convert", sample, "--to", "7z")
	out, err = cmd.CombinedOutput()
	// An unsupported pair is refused before reserving, naming what the input converts to.
	if err == nil || !strings.Contains(string(out), "cannot convert png to 7z; png converts to: avif, ") {
		t.Fatalf("unsupported target: %v\n%s", err, out)
	}
}
