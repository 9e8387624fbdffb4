// Package worker runs conversions in worker processes: copies of the convsvc binary
// (`convsvc worker`) that the server starts, keeps one per worker slot, and reuses across
// jobs. The server side (Pool) is a convert.Runner: the server's convert.Pool still claims,
// opens the input, commits the output and finishes the job, and only Catalog.Convert runs in
// the worker. A worker that is cancelled, times out, passes its memory cap or is shut down is
// killed (SIGKILL) and replaced; one that dies mid-job fails only that job. The conversions
// of every worker reserve memory from one budget, the server's (Budget). Workers run in a
// network namespace, under a seccomp filter and under Landlock where the kernel allows
// (docs/operations.md).
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/internal/bytesize"
)

// Config configures a Pool; zero fields take the documented defaults.
type Config struct {
	// Workers is how many worker processes are kept started (one per conversion slot).
	Workers int
	// Limits are the catalog limits each worker builds its catalog with.
	Limits convert.Limits
	// Budget is the conversion memory budget every worker's conversions reserve from (the
	// server's catalog); default a budget of Limits.MaxConversionMemory of the pool's own.
	Budget Budget
	// MemoryCap, when set, is a fixed resident size at which a worker running a job is
	// killed. By default the cap follows the job (memoryCap): the worker's resident size
	// when it became ready, plus the most the job has held of Budget at once, plus Headroom.
	MemoryCap int64
	// Headroom is what a job may hold beyond its reservations before the watchdog kills its
	// worker (its streams and buffers, the garbage the collector has not returned yet, and
	// the whole of what converters that reserve nothing use: data trees, audio, archives);
	// default DefaultHeadroom.
	Headroom int64
	// WatchInterval is how often a running worker's resident size is read; default 50ms.
	WatchInterval time.Duration
	// MaxJobs is how many jobs a worker runs before it is replaced; default 1000.
	MaxJobs int
	// MaxIdleGrowth replaces a worker whose resident size between jobs has grown by more than
	// this since it became ready; default 512 MiB.
	MaxIdleGrowth int64
	// FontDir is the font directory workers read (convert/standard.SetFontDir).
	FontDir string
	// ScratchDir holds each worker's scratch directory; default os.TempDir().
	ScratchDir string
	// Command is the program and arguments that start a worker; default this executable with
	// the argument "worker". The process must call ChildMain when IsChild.
	Command []string
	// NoConfinement turns off the network namespace and Landlock (the pool still isolates
	// crashes and memory).
	NoConfinement bool
	// Logger receives worker starts, kills and what the workers' stderr says.
	Logger *slog.Logger
}

// Kill causes, the values of Stats.Kills' keys and of the metrics' cause label.
const (
	CauseMemory   = "memory"
	CauseCancel   = "cancel"
	CauseTimeout  = "timeout"
	CauseShutdown = "shutdown"
	CauseRecycle  = "recycle"
)

// Stats counts what the pool did since it started.
type Stats struct {
	Starts  int64            // worker processes started
	Kills   map[string]int64 // workers the pool killed, by cause
	Crashes int64            // workers that died on their own, mid-job or idle
	// StartSeconds is the total time workers took from exec to ready; divide by Starts.
	StartSeconds float64
	Live         int // worker processes alive now
}

// Pool keeps the worker processes and runs conversions in them; it implements convert.Runner.
type Pool struct {
	cfg  Config
	log  *slog.Logger
	base childConfig
	// netns: start workers in a network namespace (cleared when the kernel refuses).
	netns atomic.Bool

	mu     sync.Mutex
	idle   []*proc
	all    map[*proc]struct{}
	closed bool
	seq    int
	// pending counts replacements being started; ready wakes a get waiting for one.
	pending int
	ready   chan struct{}

	starts, crashes atomic.Int64
	startNanos      atomic.Int64
	killMu          sync.Mutex
	kills           map[string]int64

	confMu      sync.Mutex
	confinement []string
	memory      string // what enforces the memory cap (memoryEnforcement)
	wg          sync.WaitGroup
}

// Supported reports whether worker processes run on this system (Linux).
func Supported() bool { return supported }

// New returns a pool; Start pre-starts its workers.
func New(cfg Config) (*Pool, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	cfg.Limits = cfg.Limits.Normalized()
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = 50 * time.Millisecond
	}
	if cfg.MaxJobs <= 0 {
		cfg.MaxJobs = 1000
	}
	if cfg.MaxIdleGrowth <= 0 {
		cfg.MaxIdleGrowth = 512 << 20
	}
	if cfg.ScratchDir == "" {
		cfg.ScratchDir = os.TempDir()
	}
	if cfg.Budget == nil {
		cfg.Budget = convert.NewEmptyCatalog(cfg.Limits)
	}
	if cfg.Headroom <= 0 {
		cfg.Headroom = DefaultHeadroom(cfg.Limits.MaxConversionMemory, cfg.Workers)
	}
	if len(cfg.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the executable to start workers from: %w", err)
		}
		cfg.Command = []string{exe, "worker"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pool{cfg: cfg, log: cfg.Logger, all: map[*proc]struct{}{}, kills: map[string]int64{}, ready: make(chan struct{}, 1)}
	p.base = childConfig{Limits: cfg.Limits, FontDir: cfg.FontDir}
	p.memory = memoryEnforcement()
	if !cfg.NoConfinement && supported {
		p.netns.Store(true)
		p.base.Seccomp = true
		if landlockABI() >= 1 {
			p.base.Landlock = true
			if cfg.FontDir != "" {
				p.base.ReadDirs = append(p.base.ReadDirs, cfg.FontDir)
			}
			if d := standard.WasmCacheDir(); d != "" {
				p.base.WriteDirs = append(p.base.WriteDirs, d)
			}
		}
	}
	return p, nil
}

// Start starts the workers and waits until the first is ready, so a system that cannot run
// workers is known at once; it logs what confinement they run under.
func (p *Pool) Start() error {
	w, err := p.start()
	if err != nil {
		return err
	}
	p.put(w)
	p.log.Info("conversion workers started", "isolation", "process", "workers", p.cfg.Workers,
		"start_time", time.Duration(p.startNanos.Load()).String(), "confinement", strings.Join(p.Confinement(), "; "))
	for i := 1; i < p.cfg.Workers; i++ {
		p.replace()
	}
	return nil
}

// Confinement describes what isolates the workers, for logs, /readyz and `convsvc config`.
func (p *Pool) Confinement() []string {
	p.confMu.Lock()
	defer p.confMu.Unlock()
	out := []string{"process: one worker process per conversion slot (crashes stay in the worker)"}
	out = append(out, p.confinement...)
	if p.cfg.MemoryCap > 0 {
		return append(out, fmt.Sprintf("memory: RSS watchdog at a fixed %s", bytesize.Format(p.cfg.MemoryCap)))
	}
	return append(out, p.memory)
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	s := Stats{Starts: p.starts.Load(), Crashes: p.crashes.Load(), StartSeconds: float64(p.startNanos.Load()) / 1e9, Kills: map[string]int64{}}
	p.killMu.Lock()
	for k, v := range p.kills {
		s.Kills[k] = v
	}
	p.killMu.Unlock()
	p.mu.Lock()
	s.Live = len(p.all)
	p.mu.Unlock()
	return s
}

// Close kills every worker and waits for them; running conversions fail as crashed unless
// their context was cancelled first (convert.Pool.Shutdown does that).
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	all := make([]*proc, 0, len(p.all))
	for w := range p.all {
		all = append(all, w)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, w := range all {
		w.kill(CauseShutdown)
	}
	p.wg.Wait()
	return nil
}

// proc is one worker process.
type proc struct {
	p       *Pool
	cmd     *exec.Cmd
	conn    *conn
	scratch string
	replies chan reply    // the reader goroutine's packets
	exited  chan struct{} // closed once the process has been waited for
	baseRSS int64
	jobs    int
	// watches counts the watchdog's reads of the worker's resident size (tests wait on it).
	watches atomic.Int64
	// killedAt is the memory cap the watchdog killed the worker at, and killedPeak the most
	// of the budget the job had reserved at once by then.
	killedAt, killedPeak atomic.Int64

	killMu    sync.Mutex
	killCause string // why the pool killed it; "" when it was not
}

// cause returns why the pool killed the worker, or "".
func (w *proc) cause() string {
	w.killMu.Lock()
	defer w.killMu.Unlock()
	return w.killCause
}

// start starts one worker and waits for it to be ready.
func (p *Pool) start() (*proc, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the worker pool is closed")
	}
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	begin := time.Now()
	scratch, err := os.MkdirTemp(p.cfg.ScratchDir, fmt.Sprintf("worker-%d-", seq))
	if err != nil {
		return nil, fmt.Errorf("making a worker's scratch directory: %w", err)
	}
	w, err := p.exec(scratch, p.netns.Load())
	if se := (*startError)(nil); errors.As(err, &se) && p.netns.Load() {
		// The kernel refuses user or network namespaces here: run without.
		p.log.Warn("workers run without a network namespace of their own: the kernel refused one", "err", err)
		p.netns.Store(false)
		w, err = p.exec(scratch, false)
	}
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	p.starts.Add(1)
	p.startNanos.Add(int64(time.Since(begin)))
	return w, nil
}

// exec starts the worker process and reads its ready message.
func (p *Pool) exec(scratch string, netns bool) (*proc, error) {
	fds, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("worker socket pair: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "worker-parent"), os.NewFile(uintptr(fds[1]), "worker-child")
	cc := p.base
	cc.ScratchDir = scratch
	cc.NetNamespace = netns
	if cc.Landlock {
		cc.WriteDirs = append(append([]string(nil), cc.WriteDirs...), scratch)
	}
	env, _ := json.Marshal(cc)
	cmd := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), ConfigEnv+"="+string(env), "TMPDIR="+scratch)
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = sysProcAttr(netns)
	cmd.Stdout = nil
	stderr, err := cmd.StderrPipe()
	if err != nil {
		parent.Close()
		child.Close()
		return nil, err
	}
	if err := startLocked(cmd); err != nil {
		parent.Close()
		child.Close()
		return nil, &startError{fmt.Errorf("starting a worker (%s): %w", p.cfg.Command[0], err)}
	}
	child.Close()
	c, err := newConn(parent)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	w := &proc{p: p, cmd: cmd, conn: c, scratch: scratch, replies: make(chan reply, 1), exited: make(chan struct{})}
	log := p.log.With("worker_pid", cmd.Process.Pid)
	p.mu.Lock()
	p.all[w] = struct{}{}
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		// The worker's stderr (a crash's stack, a panic) goes to the server's log.
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Warn("worker stderr", "line", sc.Text())
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		c.close()
		os.RemoveAll(scratch)
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
		close(w.exited)
		p.wg.Done()
	}()
	go func() {
		defer close(w.replies)
		for {
			var r reply
			files, err := c.recv(&r)
			closeAll(files)
			if err != nil {
				log.Debug("worker socket closed", "err", err)
				return
			}
			w.replies <- r
		}
	}()
	if err := raiseOOMScore(cmd.Process.Pid, 500); err != nil {
		log.Debug("raising the worker's oom_score_adj failed", "err", err)
	}
	select {
	case r, ok := <-w.replies:
		if !ok || !r.Ready {
			w.kill(CauseShutdown)
			<-w.exited
			return nil, fmt.Errorf("a worker exited before it was ready (%s)", w.cmd.ProcessState)
		}
		p.confMu.Lock()
		p.confinement = append([]string(nil), r.Confinement...)
		switch {
		case len(r.Confinement) > 0:
		case p.cfg.NoConfinement:
			p.confinement = []string{"none beyond the process: confinement turned off"}
		default:
			p.confinement = []string{"none beyond the process: no network namespace, Landlock or seccomp on this kernel"}
		}
		p.confMu.Unlock()
	case <-w.exited:
		return nil, fmt.Errorf("a worker exited before it was ready (%s)", w.cmd.ProcessState)
	case <-time.After(time.Minute):
		w.kill(CauseShutdown)
		return nil, errors.New("a worker did not become ready within a minute")
	}
	w.baseRSS, _ = rss(cmd.Process.Pid)
	return w, nil
}

// startError is a worker the system refused to start (exec or namespace creation failed).
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// kill stops the worker at once (SIGKILL), counting the cause; later calls do nothing.
func (w *proc) kill(cause string) {
	w.killMu.Lock()
	defer w.killMu.Unlock()
	if w.killCause != "" {
		return
	}
	w.killCause = cause
	w.p.killMu.Lock()
	w.p.kills[cause]++
	w.p.killMu.Unlock()
	w.cmd.Process.Kill()
}

// put returns an idle worker to the pool, or kills it when the pool is closed or already
// keeps a worker for every slot.
func (p *Pool) put(w *proc) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.kill(CauseShutdown)
		return
	}
	if len(p.idle) >= p.cfg.Workers {
		p.mu.Unlock()
		w.kill(CauseRecycle)
		return
	}
	p.idle = append(p.idle, w)
	p.mu.Unlock()
	p.wake()
}

// wake tells a get waiting for a replacement to look again.
func (p *Pool) wake() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// replace starts a worker in the background to take a dead one's place.
func (p *Pool) replace() {
	p.wg.Add(1)
	p.mu.Lock()
	p.pending++
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		w, err := p.start()
		p.mu.Lock()
		p.pending--
		p.mu.Unlock()
		if err != nil {
			p.wake() // a waiting get starts one itself
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			p.log.Error("starting a replacement worker failed; the next job starts one", "err", err)
			return
		}
		p.put(w)
	}()
}

// get takes an idle live worker, waits for one being started, or starts one when none is.
func (p *Pool) get() (*proc, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		p.mu.Lock()
		if len(p.idle) == 0 && p.pending > 0 && time.Now().Before(deadline) {
			p.mu.Unlock()
			// One wake-up may serve several waiters: look again at least every 50 ms.
			select {
			case <-p.ready:
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if len(p.idle) == 0 {
			p.mu.Unlock()
			return p.start()
		}
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		select {
		case <-w.exited:
			// Died while idle (killed from outside, or the OOM killer).
			p.crashes.Add(1)
			p.log.Warn("an idle worker died; starting another", "state", w.cmd.ProcessState.String())
			continue
		default:
			return w, nil
		}
	}
}

// done hands a worker back after a job: reused, or replaced when it has run MaxJobs jobs or
// grown by MaxIdleGrowth.
func (p *Pool) done(w *proc) {
	w.jobs++
	recycle := w.jobs >= p.cfg.MaxJobs
	if !recycle && w.baseRSS > 0 {
		if now, err := rss(w.cmd.Process.Pid); err == nil && now-w.baseRSS > p.cfg.MaxIdleGrowth {
			recycle = true
		}
	}
	if recycle {
		w.kill(CauseRecycle)
		p.replace()
		return
	}
	p.put(w)
}

// DefaultHeadroom is Config.Headroom's default for a budget shared by workers: half the
// budget divided among the workers, and at least the smaller of 64 MiB and the budget. So the
// workers' conversions together stay within about 1.5 times the budget (the reservations
// within it, the headrooms half of it) plus each worker's baseline.
func DefaultHeadroom(budget int64, workers int) int64 {
	return max(budget/(2*int64(max(workers, 1))), min(64<<20, budget))
}

// memoryCap is the resident size at which w, running a job that has held at most peak bytes
// of the budget at once, is killed: the worker's resident size when it became ready, plus
// peak, plus the headroom. The peak, not what the job holds now, because memory a converter
// gave back to the budget stays resident until the collector returns it.
func (p *Pool) memoryCap(w *proc, peak int64) int64 {
	if p.cfg.MemoryCap > 0 {
		return p.cfg.MemoryCap
	}
	return w.baseRSS + peak + p.cfg.Headroom
}

// memoryExceeded is the finer failure reason of a job whose worker passed its memory cap.
type memoryExceeded struct{ cap int64 }

func (m memoryExceeded) Error() string {
	return fmt.Sprintf("worker passed its memory cap of %d bytes", m.cap)
}
func (m memoryExceeded) FailureReason() string { return "memory_exceeded" }

// causeOf names why ctx was cancelled, as a kill cause.
func causeOf(ctx context.Context) string {
	switch c := context.Cause(ctx); {
	case errors.Is(c, convert.ErrTaskShutdown):
		return CauseShutdown
	case errors.Is(c, convert.ErrTaskTimeout), errors.Is(c, context.DeadlineExceeded):
		return CauseTimeout
	default:
		return CauseCancel
	}
}

// DirectOutput is an output whose own file a worker process can write through its
// descriptor (the local blob store's pending output), so that the output is written once,
// where it is kept, rather than into the worker's scratch directory and then copied.
type DirectOutput interface {
	// File returns the output's file, empty and at offset 0; what it holds when Run returns
	// without an error is the output. The caller neither closes it nor writes it otherwise.
	File() (*os.File, error)
	// WriteFailed is told the fault of the disk under the worker's writes (a full disk is
	// ENOSPC), as a failed Write of the output would have reported it, and returns the error
	// Run returns for it.
	WriteFailed(err error) error
}

// Run converts t in a worker process (convert.Runner). When out is a DirectOutput the worker
// writes the output straight into its file; otherwise into a file in its scratch directory,
// which is then copied into out. The worker re-reads the output (convert.Catalog.Verify)
// before it answers, so a failed check is the conversion's error. A failed, cancelled or
// killed conversion leaves what it wrote to out's owner, which discards it.
func (p *Pool) Run(ctx context.Context, t convert.Task, in *os.File, out io.Writer, _ string) ([]convert.Warning, error) {
	defer trace.StartRegion(ctx, "worker.run").End()
	w, err := p.get()
	if err != nil {
		return nil, err
	}
	direct, _ := out.(DirectOutput)
	var tmp *os.File
	if direct != nil {
		tmp, err = direct.File()
		if err != nil {
			p.done(w)
			return nil, direct.WriteFailed(err)
		}
	} else {
		tmp, err = os.CreateTemp(w.scratch, "output-*")
		if err != nil {
			p.done(w)
			return nil, &convert.StorageError{Err: err}
		}
		defer tmp.Close()
		os.Remove(tmp.Name()) // the worker writes through the descriptor; nothing to clean up
	}
	defer trace.StartRegion(ctx, "worker.child").End()
	if err := w.conn.send(request{JobID: t.JobID, From: t.InputFormat, To: t.TargetFormat, Options: t.Options}, int(in.Fd()), int(tmp.Fd())); err != nil {
		w.kill(CauseCancel)
		<-w.exited
		p.crashes.Add(1)
		p.replace()
		return nil, fmt.Errorf("%w: sending the job: %v", convert.ErrWorkerCrashed, err)
	}
	// The job's reservations on the shared budget; whatever it still holds goes back when
	// Run returns, however the job ended.
	mem := newJobMemory(ctx, p.cfg.Budget, func(g memoryGrant) { w.conn.send(request{Grant: &g}) })
	defer mem.end()
	watchDone := make(chan struct{})
	defer close(watchDone)
	go w.watch(mem, watchDone)

	for {
		select {
		case r, ok := <-w.replies:
			if !ok {
				<-w.exited
				return nil, p.died(w, t)
			}
			if r.Memory != nil {
				mem.handle(*r.Memory)
				continue
			}
			if r.Progress != nil {
				convert.ReportProgress(ctx, *r.Progress)
				continue
			}
			if r.Error != nil {
				p.done(w)
				if r.Error.Kind == kindStorage {
					err := errors.New(r.Error.Detail)
					if r.Error.Errno != 0 {
						err = fmt.Errorf("%s: %w", r.Error.Detail, syscall.Errno(r.Error.Errno))
					}
					if direct != nil {
						return nil, direct.WriteFailed(err)
					}
					return nil, &convert.StorageError{Err: err}
				}
				return nil, &convert.Error{Message: r.Error.Message, Reason: r.Error.Reason, Err: errors.New(r.Error.Detail)}
			}
			p.done(w)
			if direct != nil {
				return r.Warnings, nil
			}
			defer trace.StartRegion(ctx, "worker.copy_output").End()
			if _, err := tmp.Seek(0, io.SeekStart); err != nil {
				return nil, &convert.StorageError{Err: err}
			}
			if _, err := io.Copy(out, tmp); err != nil {
				var se *convert.StorageError
				if errors.As(err, &se) {
					return nil, err
				}
				return nil, &convert.StorageError{Err: err}
			}
			return r.Warnings, nil
		case <-w.exited:
			return nil, p.died(w, t)
		case <-ctx.Done():
			cause := causeOf(ctx)
			w.kill(cause)
			<-w.exited
			if cause != CauseShutdown {
				p.replace()
			}
			return nil, context.Cause(ctx)
		}
	}
}

// died reports a worker that exited mid-job: killed at its memory cap, or crashed.
func (p *Pool) died(w *proc, t convert.Task) error {
	p.replace()
	cause := w.cause()
	if cause == CauseMemory {
		capBytes := w.killedAt.Load()
		msg := fmt.Sprintf("the conversion went past its memory cap of %s and was stopped", bytesize.Format(capBytes))
		if p.cfg.MemoryCap <= 0 {
			msg = fmt.Sprintf("the conversion went past its memory cap of %s (the %s it reserved of --max-conversion-memory, plus %s for the worker process and its buffers) and was stopped",
				bytesize.Format(capBytes), bytesize.Format(w.killedPeak.Load()), bytesize.Format(capBytes-w.killedPeak.Load()))
		}
		return &convert.Error{
			Message: msg,
			Err:     memoryExceeded{capBytes},
		}
	}
	if cause == "" {
		p.crashes.Add(1)
	}
	p.log.Warn("a worker died mid-job", "job_id", t.JobID, "worker_pid", w.cmd.Process.Pid, "state", w.cmd.ProcessState.String())
	return fmt.Errorf("%w (%s)", convert.ErrWorkerCrashed, w.cmd.ProcessState)
}

// watch kills the worker when its resident size passes the job's memory cap (memoryCap, from
// the job's reservations as they happen), until done is closed.
func (w *proc) watch(mem *jobMemory, done <-chan struct{}) {
	t := time.NewTicker(w.p.cfg.WatchInterval)
	defer t.Stop()
	pid := w.cmd.Process.Pid
	for {
		select {
		case <-done:
			return
		case <-w.exited:
			return
		case <-t.C:
		}
		peak := mem.peakHeld()
		capBytes := w.p.memoryCap(w, peak)
		n, err := rss(pid)
		w.watches.Add(1)
		if err == nil && n > capBytes {
			w.p.log.Warn("a worker passed its memory cap; killing it", "worker_pid", pid, "rss", n, "cap", capBytes,
				"reserved", peak, "baseline", w.baseRSS)
			w.killedAt.Store(capBytes)
			w.killedPeak.Store(peak)
			w.kill(CauseMemory)
			return
		}
	}
}

// Probe starts one worker with cfg (its Workers ignored), waits until it is ready and stops
// it, and returns what it applied: the confinement a pool with cfg applies, as its
// Confinement says, for `convsvc config`. It fails when no worker starts.
func Probe(cfg Config) ([]string, error) {
	cfg.Workers = 1
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	w, err := p.start()
	if err != nil {
		return nil, err
	}
	w.kill(CauseShutdown)
	<-w.exited
	return p.Confinement(), nil
}

// spawns carries worker starts to the one goroutine that starts them all.
var (
	spawnOnce sync.Once
	spawns    chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startLocked starts cmd from a goroutine locked to its thread for the life of the process:
// Linux sends a worker its parent-death signal (Pdeathsig) when the thread that started it
// exits, not the process, and the runtime may end a thread another goroutine locked.
func startLocked(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the process
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawns <- spawnReq{cmd, done}
	return <-done
}

// VerifiesOutputs reports that the worker processes check each output themselves
// (convert.OutputVerifier), so the server does not re-read it.
func (p *Pool) VerifiesOutputs() bool { return true }
