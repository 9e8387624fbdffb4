package cli_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "convsvc-e2e-*")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "convsvc")
	build := exec.Command("go", "build", "-o", binary, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build convsvc: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `convsvc serve`.
type proc struct {
	cmd     *exec.Cmd
	url     string
	key     string
	done    chan struct{}
	exitErr error
}

var servingLine = regexp.MustCompile(`serving the API on (\S+) and object storage on (\S+)`)

// serve starts the binary on loopback ports chosen by the kernel and waits until it serves.
func serve(t *testing.T, data string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0", "--blob-listen", "127.0.0.1:0", "--workers", "1"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	if os.Getenv("CONVSVC_TEST_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "cs_live_") {
				p.key = line
			}
			if m := servingLine.FindStringSubmatch(line); m != nil {
				p.url = m[1]
				close(ready)
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.exitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("convsvc serve exited: %v", p.exitErr)
	case <-time.After(30 * time.Second):
		t.Fatal("convsvc serve did not start")
	}
	return p
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
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
		deadline := time.Now().Add(30 * time.Second)
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
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data)
	if p.key == "" {
		t.Fatal("serve did not print the default key on an empty data dir")
	}
	key := p.key
	c := &client.Client{BaseURL: p.url, Key: key}
	id := startBigJob(t, c, img, true)
	p.signal(t, syscall.SIGKILL)
	checkLedger(t, data)

	p = serve(t, data)
	if p.key != "" {
		t.Fatal("a second start must not print a new key")
	}
	c = &client.Client{BaseURL: p.url, Key: key}
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
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data, "--drain-timeout", "50ms")
	c := &client.Client{BaseURL: p.url, Key: p.key}
	key := p.key
	running := startBigJob(t, c, img, true)
	queued := startBigJob(t, c, img, false)
	start := time.Now()
	p.signal(t, syscall.SIGTERM)
	if p.exitErr != nil {
		t.Fatalf("exit after SIGTERM: %v", p.exitErr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("drain took %v", d)
	}
	checkLedger(t, data)

	// On the next start: the running job failed worker_shutdown, the queued one is still queued
	// and now runs.
	p = serve(t, data)
	c = &client.Client{BaseURL: p.url, Key: key}
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
	data := filepath.Join(t.TempDir(), "data")
	img := testenv.NoisePNG(t, 3000, 2500)
	p := serve(t, data, "--max-attempts", "2")
	key := p.key
	c := &client.Client{BaseURL: p.url, Key: key}
	id := startBigJob(t, c, img, true)
	p.signal(t, syscall.SIGKILL)

	p = serve(t, data, "--max-attempts", "2")
	c = &client.Client{BaseURL: p.url, Key: key}
	deadline := time.Now().Add(30 * time.Second)
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
	c = &client.Client{BaseURL: p.url, Key: key}
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
	if d := time.Since(start); d > 15*time.Second {
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
	if err == nil || !strings.Contains(string(out), "unsupported_format") {
		t.Fatalf("unsupported target: %v\n%s", err, out)
	}
}
