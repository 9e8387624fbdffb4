package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

func TestMain(m *testing.M) {
	if IsChild() {
		childExtras = addProbe
		os.Exit(ChildMain())
	}
	os.Exit(m.Run())
}

// newPool starts a pool of n workers that are this test binary (TestMain runs ChildMain).
func newPool(t *testing.T, n int, edit ...func(*Config)) *Pool {
	t.Helper()
	if !Supported() {
		t.Skip("worker processes run on Linux only")
	}
	cfg := Config{Workers: n, ScratchDir: t.TempDir(), Command: []string{os.Args[0]}, FontDir: "/usr/share/fonts", Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// inputFile writes data to a file and opens it.
func inputFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noisePNG is a w x h PNG of random pixels: slow to encode in any lossy format.
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	img.Pix[3] = 255
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPool_Converts(t *testing.T) {
	p := newPool(t, 1)
	for i := 0; i < 3; i++ { // the same worker, reused
		var out bytes.Buffer
		_, err := p.Run(context.Background(), convert.Task{JobID: "j" + strconv.Itoa(i), InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, readSample(t, "images/sample.png")), &out, "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out.Bytes(), []byte{0xff, 0xd8, 0xff}) {
			t.Fatalf("output is not a JPEG: % x", out.Bytes()[:min(8, out.Len())])
		}
	}
	if s := p.Stats(); s.Starts != 1 || s.Live != 1 {
		t.Fatalf("stats %+v, want one worker started and alive", s)
	}
}

func TestPool_ConversionErrorKeepsWorker(t *testing.T) {
	p := newPool(t, 1)
	var out bytes.Buffer
	_, err := p.Run(context.Background(), convert.Task{JobID: "bad", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, []byte("not a png at all")), &out, "")
	var ce *convert.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "PNG") {
		t.Fatalf("err %v, want a conversion error naming PNG", err)
	}
	if s := p.Stats(); s.Starts != 1 || s.Crashes != 0 || len(s.Kills) != 0 {
		t.Fatalf("stats %+v, want the worker kept", s)
	}
}

// busyWorker waits until a worker has run at least cpu of CPU time and returns its pid.
func busyWorker(t *testing.T, p *Pool, cpu time.Duration) int {
	t.Helper()
	for {
		p.mu.Lock()
		var pids []int
		for w := range p.all {
			pids = append(pids, w.cmd.Process.Pid)
		}
		p.mu.Unlock()
		for _, pid := range pids {
			if cpuTime(pid) >= cpu {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cpuTime is the user+system time of process pid, or 0 when it is gone.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func TestPool_CancelKillsWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a 3000x3000 AVIF")
	}
	p := newPool(t, 1)
	in := inputFile(t, noisePNG(t, 3000, 3000))
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, convert.Task{JobID: "avif", InputFormat: "png", TargetFormat: "avif"}, in, &bytes.Buffer{}, "")
		errc <- err
	}()
	pid := busyWorker(t, p, 300*time.Millisecond)
	used := cpuTime(pid)
	cancelled := time.Now()
	cancel(convert.ErrTaskCancel)
	if err := <-errc; !errors.Is(err, convert.ErrTaskCancel) {
		t.Fatalf("Run returned %v, want the cancel", err)
	}
	// A figure for docs/benchmarks.md, not an assertion: the machine may be loaded.
	t.Logf("worker %d reaped %v after the cancel, having run at least %v of CPU", pid, time.Since(cancelled), used)
	// Run returns once the worker has been waited for: no process is left.
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("worker %d still exists after the cancel", pid)
	}
	if s := p.Stats(); s.Kills[CauseCancel] != 1 {
		t.Fatalf("stats %+v, want one kill for cancel", s)
	}
	// A new worker takes its place and converts.
	var out bytes.Buffer
	if _, err := p.Run(context.Background(), convert.Task{JobID: "next", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, readSample(t, "images/sample.png")), &out, ""); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Starts != 2 {
		t.Fatalf("stats %+v, want a second worker started", s)
	}
}

func TestPool_MemoryCapKills(t *testing.T) {
	// A cap below what any conversion of this image holds: the watchdog kills the worker.
	p := newPool(t, 1, func(c *Config) { c.MemoryCap = 1 << 20 })
	_, err := p.Run(context.Background(), convert.Task{JobID: "big", InputFormat: "png", TargetFormat: "avif"}, inputFile(t, noisePNG(t, 1000, 1000)), &bytes.Buffer{}, "")
	var ce *convert.Error
	var r interface{ FailureReason() string }
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "memory cap of 1.0 MiB") || !errors.As(err, &r) || r.FailureReason() != "memory_exceeded" {
		t.Fatalf("err %v, want memory_exceeded naming the 1 MiB cap", err)
	}
	if s := p.Stats(); s.Kills[CauseMemory] != 1 {
		t.Fatalf("stats %+v, want one kill for memory", s)
	}
}

func TestPool_CrashFailsOnlyThatJob(t *testing.T) {
	p := newPool(t, 1)
	// The worker dies from outside mid-job (as the OOM killer or a fatal runtime error would).
	in := inputFile(t, noisePNG(t, 2000, 2000))
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), convert.Task{JobID: "crash", InputFormat: "png", TargetFormat: "avif"}, in, &bytes.Buffer{}, "")
		errc <- err
	}()
	pid := busyWorker(t, p, 100*time.Millisecond)
	proc, _ := os.FindProcess(pid)
	proc.Signal(os.Kill)
	if err := <-errc; !errors.Is(err, convert.ErrWorkerCrashed) {
		t.Fatalf("Run returned %v, want ErrWorkerCrashed", err)
	}
	if s := p.Stats(); s.Crashes != 1 {
		t.Fatalf("stats %+v, want one crash", s)
	}
	var out bytes.Buffer
	if _, err := p.Run(context.Background(), convert.Task{JobID: "next", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, readSample(t, "images/sample.png")), &out, ""); err != nil {
		t.Fatal(err)
	}
}

// addProbe adds the converter probe -> probe-out, which tries to reach the network (the
// address in its input) and to read /etc/passwd, and writes what happened.
func addProbe(c *convert.Catalog) {
	c.AddFormat(convert.Format{ID: "probe", Name: "probe", Category: convert.CategoryData, Extensions: []string{"probe"}, MIME: "application/octet-stream"})
	c.AddFormat(convert.Format{ID: "probe-out", Name: "probe-out", Category: convert.CategoryData, Extensions: []string{"probeout"}, MIME: "application/octet-stream"})
	c.AddConverter(convert.Converter{From: "probe", To: "probe-out", Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		addr, _ := io.ReadAll(in)
		res := map[string]string{}
		if conn, err := net.DialTimeout("tcp", string(addr), 5*time.Second); err != nil {
			res["net"] = err.Error()
		} else {
			conn.Close()
			res["net"] = "ok"
		}
		if _, err := os.ReadFile("/etc/passwd"); err != nil {
			res["passwd"] = err.Error()
		} else {
			res["passwd"] = "ok"
		}
		return json.NewEncoder(out).Encode(res)
	}})
}

func TestPool_Confinement(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	probe := func(p *Pool) map[string]string {
		var out bytes.Buffer
		if _, err := p.Run(context.Background(), convert.Task{JobID: "probe", InputFormat: "probe", TargetFormat: "probe-out"}, inputFile(t, []byte(l.Addr().String())), &out, ""); err != nil {
			t.Fatal(err)
		}
		var res map[string]string
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Without confinement the probe reaches both, so the refusals below are the confinement's.
	if res := probe(newPool(t, 1, func(c *Config) { c.NoConfinement = true })); res["net"] != "ok" || res["passwd"] != "ok" {
		t.Fatalf("unconfined probe: %v, want both ok", res)
	}
	p := newPool(t, 1)
	conf := strings.Join(p.Confinement(), "\n")
	res := probe(p)
	if strings.Contains(conf, "network namespace") {
		if res["net"] == "ok" {
			t.Errorf("a confined worker reached %s; confinement: %s", l.Addr(), conf)
		}
	} else if os.Getenv("CI") == "true" {
		t.Errorf("no network namespace here (%s)", conf)
	} else {
		t.Logf("network not confined on this kernel: %s", conf)
	}
	if strings.Contains(conf, "Landlock ABI") {
		if !strings.Contains(res["passwd"], "permission denied") {
			t.Errorf("a confined worker read /etc/passwd (%s); confinement: %s", res["passwd"], conf)
		}
	} else if landlockABI() > 0 {
		t.Errorf("the kernel has Landlock ABI %d but the worker is not confined: %s", landlockABI(), conf)
	} else {
		t.Logf("filesystem not confined on this kernel: %s", conf)
	}
}
