package worker

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
// address in its input) and to read /etc/passwd, and writes what happened; and hold ->
// hold-out (holdInput).
func addProbe(c *convert.Catalog) {
	addHold(c)
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
		for name, domain := range map[string]int{"socket_inet": unix.AF_INET, "socket_inet6": unix.AF_INET6, "socket_packet": unix.AF_PACKET, "socket_netlink": unix.AF_NETLINK} {
			typ := unix.SOCK_DGRAM
			if domain == unix.AF_PACKET {
				typ = unix.SOCK_RAW
			}
			if fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0); err != nil {
				res[name] = err.Error()
			} else {
				unix.Close(fd)
				res[name] = "ok"
			}
		}
		if fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			res["socketpair_unix"] = err.Error()
		} else {
			unix.Close(fds[0])
			unix.Close(fds[1])
			res["socketpair_unix"] = "ok"
		}
		if _, err := os.ReadFile("/etc/passwd"); err != nil {
			res["passwd"] = err.Error()
		} else {
			res["passwd"] = "ok"
		}
		return json.NewEncoder(out).Encode(res)
	}})
	// cut-png writes the first half of a PNG: its output fails the PNG check.
	c.AddFormat(convert.Format{ID: "cut-png", Name: "PNG cut in half", Category: convert.CategoryImage, Extensions: []string{"cutpng"}, MIME: "application/octet-stream"})
	c.AddConverter(convert.Converter{From: "cut-png", To: "png", Run: func(_ context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		_, err := io.CopyN(out, in, in.Size()/2)
		return err
	}})
}

// TestPool_ChecksOutput: a worker process re-reads the output it wrote before it answers; an
// output that fails its check is the conversion's *convert.Error with reason output_invalid,
// and a good output passes.
func TestPool_ChecksOutput(t *testing.T) {
	p := newPool(t, 1)
	if !p.VerifiesOutputs() {
		t.Fatal("the pool does not say it checks outputs")
	}
	png := readSample(t, "images/sample.png")
	var out bytes.Buffer
	_, err := p.Run(context.Background(), convert.Task{JobID: "cut", InputFormat: "cut-png", TargetFormat: "png"}, inputFile(t, png), &out, "")
	var ce *convert.Error
	if !errors.As(err, &ce) || ce.Reason != convert.ReasonOutputInvalid || !strings.Contains(ce.Message, "PNG") {
		t.Fatalf("cut output: %v (%#v)", err, ce)
	}
	out.Reset()
	if _, err := p.Run(context.Background(), convert.Task{JobID: "good", InputFormat: "png", TargetFormat: "jpeg"}, inputFile(t, png), &out, ""); err != nil {
		t.Fatalf("good output: %v", err)
	}
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
	if res := probe(newPool(t, 1, func(c *Config) { c.NoConfinement = true })); res["net"] != "ok" || res["passwd"] != "ok" ||
		res["socket_inet"] != "ok" || res["socket_inet6"] != "ok" || res["socketpair_unix"] != "ok" {
		t.Fatalf("unconfined probe: %v, want net, passwd and the inet sockets ok", res)
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
	if strings.Contains(conf, seccompNote) {
		for _, k := range []string{"socket_inet", "socket_inet6", "socket_packet", "socket_netlink"} {
			if res[k] != unix.EPERM.Error() {
				t.Errorf("%s in a worker under seccomp: %q, want %q", k, res[k], unix.EPERM.Error())
			}
		}
		if res["socketpair_unix"] != "ok" {
			t.Errorf("socketpair(AF_UNIX) in a worker under seccomp: %q, want ok", res["socketpair_unix"])
		}
	} else if _, ok := seccompArch(); ok {
		t.Errorf("no seccomp filter in the worker: %s", conf)
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

// holdInput is the input of the converter hold -> hold-out: it reserves reserve bytes of the
// memory budget (Catalog.AcquireMemory), allocates and touches alloc bytes, writes its pid to
// path+".pid", and waits until path exists before it gives the reservation back.
func holdInput(reserve, alloc int64, path string) []byte {
	return []byte(strconv.FormatInt(reserve, 10) + " " + strconv.FormatInt(alloc, 10) + " " + path)
}

// holding keeps the converter's allocation reachable while it waits.
var holding []byte

func addHold(c *convert.Catalog) {
	c.AddFormat(convert.Format{ID: "hold", Name: "hold", Category: convert.CategoryData, Extensions: []string{"hold"}, MIME: "application/octet-stream"})
	c.AddFormat(convert.Format{ID: "hold-out", Name: "hold-out", Category: convert.CategoryData, Extensions: []string{"holdout"}, MIME: "application/octet-stream"})
	c.AddConverter(convert.Converter{From: "hold", To: "hold-out", Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		b, _ := io.ReadAll(in)
		f := strings.Fields(string(b))
		reserve, _ := strconv.ParseInt(f[0], 10, 64)
		alloc, _ := strconv.ParseInt(f[1], 10, 64)
		if err := c.AcquireMemory(ctx, reserve, "holding"); err != nil {
			return err
		}
		defer c.ReleaseMemory(reserve)
		holding = make([]byte, alloc)
		for i := 0; i < len(holding); i += 4096 {
			holding[i] = 1
		}
		defer func() { holding = nil }()
		if err := os.WriteFile(f[2]+".pid", []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
		for {
			if _, err := os.Stat(f[2]); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, err := io.WriteString(out, "held")
		return err
	}})
}

// waitLimit bounds the waits on signals below, so a broken pool fails instead of hanging; it
// is far above what any wait takes even at a load of 20.
var waitLimit = 2 * time.Minute

// waitFile waits until path exists and returns its contents.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

// waitBudget waits until the budget shows held bytes reserved and waiting conversions waiting.
func waitBudget(t *testing.T, b *convert.Catalog, held int64, waiting int) {
	t.Helper()
	var h int64
	var w int
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if h, w = b.MemoryUse(); h == held && w == waiting {
			return
		}
	}
	t.Fatalf("the budget holds %d bytes with %d waiting, want %d with %d", h, w, held, waiting)
}

// budgetPool starts n workers reserving from a budget of 100 MiB, and returns both.
func budgetPool(t *testing.T, n int, edit ...func(*Config)) (*Pool, *convert.Catalog) {
	lim := convert.Limits{MaxConversionMemory: 100 << 20}
	budget := convert.NewEmptyCatalog(lim)
	p := newPool(t, n, append([]func(*Config){func(c *Config) {
		c.Limits = lim
		c.Budget = budget
		c.NoConfinement = true // the hold converter reads its signal files anywhere
	}}, edit...)...)
	return p, budget
}

type result struct {
	out string
	err error
}

// recv waits for a job's result.
func recv(t *testing.T, res chan result) result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(waitLimit):
		t.Fatal("a job never returned")
		return result{}
	}
}

// runHold runs a hold job in the background.
func runHold(t *testing.T, ctx context.Context, p *Pool, id string, input []byte) chan result {
	in := inputFile(t, input)
	res := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		_, err := p.Run(ctx, convert.Task{JobID: id, InputFormat: "hold", TargetFormat: "hold-out"}, in, &out, "")
		res <- result{out.String(), err}
	}()
	return res
}

// Two jobs in two worker processes, each reserving 60 MiB of a 100 MiB budget, run one after
// the other: the second waits on the server's budget until the first gives its share back.
func TestPool_MemoryBudgetShared(t *testing.T) {
	p, budget := budgetPool(t, 3)
	dir := t.TempDir()
	a := runHold(t, context.Background(), p, "a", holdInput(60<<20, 0, filepath.Join(dir, "a")))
	waitFile(t, filepath.Join(dir, "a.pid"))
	waitBudget(t, budget, 60<<20, 0)

	// b is released at once, but it must wait for a's share first.
	os.WriteFile(filepath.Join(dir, "b"), nil, 0o600)
	b := runHold(t, context.Background(), p, "b", holdInput(60<<20, 0, filepath.Join(dir, "b")))
	waitBudget(t, budget, 60<<20, 1)
	// A third waiting job, cancelled, gives its place back and holds nothing.
	ctx, cancel := context.WithCancelCause(context.Background())
	c := runHold(t, ctx, p, "c", holdInput(60<<20, 0, filepath.Join(dir, "c")))
	waitBudget(t, budget, 60<<20, 2)
	cancel(convert.ErrTaskCancel)
	if r := recv(t, c); !errors.Is(r.err, convert.ErrTaskCancel) {
		t.Fatalf("the cancelled job returned %v", r.err)
	}
	waitBudget(t, budget, 60<<20, 1)
	select {
	case r := <-b:
		t.Fatalf("b finished (%+v) while a held the budget", r)
	default:
	}
	if _, err := os.Stat(filepath.Join(dir, "b.pid")); err == nil {
		t.Fatal("b got its reservation while a held 60 MiB of the 100 MiB budget")
	}

	os.WriteFile(filepath.Join(dir, "a"), nil, 0o600)
	if r := recv(t, a); r.err != nil || r.out != "held" {
		t.Fatalf("a: %+v", r)
	}
	if r := recv(t, b); r.err != nil || r.out != "held" {
		t.Fatalf("b: %+v", r)
	}
	if held, waiting := budget.MemoryUse(); held != 0 || waiting != 0 {
		t.Fatalf("after both jobs the budget holds %d bytes with %d waiting, want none", held, waiting)
	}

	// More than the whole budget is refused at once, as in the server's process.
	r := recv(t, runHold(t, context.Background(), p, "big", holdInput(200<<20, 0, filepath.Join(dir, "big"))))
	var ce *convert.Error
	if !errors.As(r.err, &ce) || !strings.Contains(ce.Message, "over the 100.0 MiB conversion memory budget") {
		t.Fatalf("a job reserving 200 MiB of 100 MiB: %v", r.err)
	}
}

// A worker killed while its job holds a reservation gives it back: the job waiting behind it
// gets its share.
func TestPool_MemoryBudgetKilledWorker(t *testing.T) {
	p, budget := budgetPool(t, 2)
	dir := t.TempDir()
	a := runHold(t, context.Background(), p, "a", holdInput(60<<20, 0, filepath.Join(dir, "a")))
	pid, _ := strconv.Atoi(waitFile(t, filepath.Join(dir, "a.pid")))
	b := runHold(t, context.Background(), p, "b", holdInput(60<<20, 0, filepath.Join(dir, "b")))
	waitBudget(t, budget, 60<<20, 1)

	proc, _ := os.FindProcess(pid)
	proc.Signal(os.Kill)
	if r := recv(t, a); !errors.Is(r.err, convert.ErrWorkerCrashed) {
		t.Fatalf("a: %v, want ErrWorkerCrashed", r.err)
	}
	// b now holds the share a's worker held.
	waitFile(t, filepath.Join(dir, "b.pid"))
	waitBudget(t, budget, 60<<20, 0)
	os.WriteFile(filepath.Join(dir, "b"), nil, 0o600)
	if r := recv(t, b); r.err != nil {
		t.Fatalf("b: %v", r.err)
	}
	waitBudget(t, budget, 0, 0)
}

// The watchdog's cap for a job is the worker's resident size at ready, plus the most the job
// reserved at once, plus the headroom: a job that reserves what it allocates keeps its worker;
// one that allocates past its reservation and the headroom is killed, naming its cap.
func TestPool_MemoryCapFollowsReservation(t *testing.T) {
	p, budget := budgetPool(t, 1, func(c *Config) { c.Headroom = 24 << 20; c.WatchInterval = 5 * time.Millisecond })
	dir := t.TempDir()

	ok := runHold(t, context.Background(), p, "reserved", holdInput(80<<20, 32<<20, filepath.Join(dir, "ok")))
	waitFile(t, filepath.Join(dir, "ok.pid"))
	var w *proc
	p.mu.Lock()
	for x := range p.all {
		w = x
	}
	p.mu.Unlock()
	// Two full reads of its resident size after the allocation, and no kill.
	deadline := time.Now().Add(waitLimit)
	for start := w.watches.Load(); w.watches.Load() < start+2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watchdog never read the worker's resident size")
		}
	}
	os.WriteFile(filepath.Join(dir, "ok"), nil, 0o600)
	if r := recv(t, ok); r.err != nil {
		t.Fatalf("a job allocating 32 MiB of its 80 MiB reservation: %v", r.err)
	}

	// A fresh worker (the first one keeps its 32 MiB resident for a while): 64 MiB on a
	// 1 MiB reservation passes 1 MiB + 24 MiB of headroom, though not the 100 MiB budget.
	p, budget = budgetPool(t, 1, func(c *Config) { c.Headroom = 24 << 20; c.WatchInterval = 5 * time.Millisecond })
	r := recv(t, runHold(t, context.Background(), p, "unreserved", holdInput(1<<20, 64<<20, filepath.Join(dir, "never"))))
	var ce *convert.Error
	var fr interface{ FailureReason() string }
	if !errors.As(r.err, &ce) || !strings.Contains(ce.Message, "the 1.0 MiB it reserved of --max-conversion-memory") ||
		!errors.As(r.err, &fr) || fr.FailureReason() != "memory_exceeded" {
		t.Fatalf("a job allocating 64 MiB on a 1 MiB reservation: %v", r.err)
	}
	if s := p.Stats(); s.Kills[CauseMemory] != 1 {
		t.Fatalf("stats %+v, want one kill for memory", s)
	}
	waitBudget(t, budget, 0, 0)
}

// countingBudget is a real budget (a catalog's) that counts what workers asked of it.
type countingBudget struct {
	*convert.Catalog
	acquires, reserves atomic.Int64
}

func (c *countingBudget) AcquireMemory(ctx context.Context, n int64, what string) error {
	c.acquires.Add(1)
	return c.Catalog.AcquireMemory(ctx, n, what)
}

func (c *countingBudget) ReserveMemory(n int64, what string) error {
	c.reserves.Add(1)
	return c.Catalog.ReserveMemory(n, what)
}

// A real conversion in a worker reserves from the server's budget: Markdown with a data: PNG
// to PDF reserves for the embedded image (EmbeddedMemory.Reserve), and all of it is back when
// the job is done.
func TestPool_ConversionReservesFromServer(t *testing.T) {
	b := &countingBudget{Catalog: convert.NewEmptyCatalog(convert.Limits{})}
	p := newPool(t, 1, func(c *Config) { c.Budget = b })
	var out bytes.Buffer
	md := "# An image\n\n![sample](data:image/png;base64," + base64.StdEncoding.EncodeToString(readSample(t, "images/sample.png")) + ")\n"
	if _, err := p.Run(context.Background(), convert.Task{JobID: "md", InputFormat: "markdown", TargetFormat: "pdf"}, inputFile(t, []byte(md)), &out, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("%PDF-")) {
		t.Fatalf("output is not a PDF: %q", out.Bytes()[:min(8, out.Len())])
	}
	if b.reserves.Load() == 0 {
		t.Errorf("the embedded image reserved nothing on the server (acquires %d)", b.acquires.Load())
	}
	if held, waiting := b.MemoryUse(); held != 0 || waiting != 0 {
		t.Errorf("after the job the budget holds %d bytes with %d waiting", held, waiting)
	}
	t.Logf("acquires %d, reserves %d", b.acquires.Load(), b.reserves.Load())
}

func TestDefaultHeadroom(t *testing.T) {
	for _, c := range []struct {
		budget  int64
		workers int
		want    int64
	}{
		{12 << 30, 2, 3 << 30},   // half the budget shared by two workers
		{4 << 30, 4, 512 << 20},  // half of 4 GiB among four
		{1 << 30, 8, 64 << 20},   // the 64 MiB floor
		{16 << 20, 2, 16 << 20},  // never above a budget smaller than the floor
		{100 << 20, 0, 64 << 20}, // no workers counts as one
	} {
		if got := DefaultHeadroom(c.budget, c.workers); got != c.want {
			t.Errorf("DefaultHeadroom(%d, %d) = %d, want %d", c.budget, c.workers, got, c.want)
		}
	}
}
