package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome codes a worker reports.
const (
	CodeConversionFailed = "conversion_failed"
	CodeWorkerShutdown   = "worker_shutdown"
	// CodeStorageError means the output could not be stored (disk full, read-only directory):
	// the input is not at fault, so the queue should retry the job, not fail it.
	CodeStorageError = "storage_error"
	// CodeWorkerCrashed means the process running the conversion died mid-job (a Runner's
	// ErrWorkerCrashed): the input may be at fault or not, so the queue retries the job until
	// its attempts are used up, as it does for a job whose server crashed.
	CodeWorkerCrashed = "worker_crashed"
)

// ErrWorkerCrashed is what a Runner wraps when the process running a conversion died mid-job.
var ErrWorkerCrashed = errors.New("the worker process running the conversion died")

// Runner runs one conversion: Catalog.Convert in this process by default, or in another
// (PoolConfig.Runner). It returns the conversion's warnings, or an *Error the user may read,
// a *StorageError, an error wrapping ErrWorkerCrashed, or the cause of ctx once ctx is done.
// A Runner that stops the conversion when ctx is done leaves no abandoned conversion behind.
type Runner interface {
	Run(ctx context.Context, t Task, in *os.File, out io.Writer, scratchDir string) ([]Warning, error)
}

// catalogRunner runs conversions in this process.
type catalogRunner struct{ cat *Catalog }

func (r catalogRunner) Run(ctx context.Context, t Task, in *os.File, out io.Writer, scratchDir string) ([]Warning, error) {
	return r.cat.Convert(ctx, t.InputFormat, t.TargetFormat, t.Options, in, out, scratchDir)
}

// reasoned is an error with a finer failure reason (a Job's error_reason, e.g.
// "memory_exceeded"); a Runner's *Error may wrap one.
type reasoned interface{ FailureReason() string }

// StorageError is a failure of the file store to keep an output. Files implementations wrap
// their own faults in it (creating, writing or committing an output), so the pool can tell
// them from a converter's refusal of its input.
type StorageError struct{ Err error }

// Error describes the fault.
func (e *StorageError) Error() string { return "storing the output: " + e.Err.Error() }

// Unwrap returns the file store's error.
func (e *StorageError) Unwrap() error { return e.Err }

// storageFault returns the file store's fault behind err or recorded by out, if there is one.
// An OutputFile may record the first fault of its writes with a StorageErr method, for
// converters that do not wrap the errors of their writer.
func storageFault(err error, out OutputFile) error {
	if se := (*StorageError)(nil); errors.As(err, &se) {
		return se
	}
	if f, ok := out.(interface{ StorageErr() error }); ok {
		return f.StorageErr()
	}
	return nil
}

// storageOutcome reports a storage fault: the queue returns the job for another attempt.
func storageOutcome(log *slog.Logger, err error) Outcome {
	log.Warn("storing the output failed; the job goes back to the queue", "err", err)
	return Outcome{Code: CodeStorageError, Message: "the service could not store the output (a storage fault, not the input's)"}
}

// Task is a job a worker has claimed.
type Task struct {
	JobID, InputFormat, TargetFormat string
	// Attempt counts pickups of the job, this one included.
	Attempt int
	// Options tune the conversion; they were validated when the job was created.
	Options Options
}

// Output describes a stored conversion result.
type Output struct {
	Bytes  int64  // size of the output
	SHA256 string // lowercase hex digest of the output
	// Warnings lists what the conversion could not keep (Params.Warn); nil when nothing.
	Warnings []Warning
	// Verified is true when the output passed its format's check (Catalog.Verify) before it
	// was committed; false when its format has none.
	Verified bool
}

// OutputMeta is what the file store keeps beside an output to serve it.
type OutputMeta struct {
	ContentType string // the target format's MIME type
	Filename    string // "<jobID>.<first extension of the target format>"
}

// Outcome is what a worker reports for a task. Code is "" on success, else
// "conversion_failed", "worker_shutdown" or "storage_error".
type Outcome struct {
	Task    Task
	Output  *Output // set on success only
	Code    string
	Message string // safe to show to the API user; "" on success
	// Reason is a finer failure reason beside Code (e.g. "memory_exceeded"), or "".
	Reason string
}

// Queue is the job queue the pool claims from (implemented elsewhere over bbolt).
type Queue interface {
	// Claim moves the oldest queued job to running, with its attempt already incremented; ok is false when none is queued.
	Claim(ctx context.Context) (Task, bool, error)
	// Finish records the outcome; it returns an error when the job is no longer running (e.g. cancelled meanwhile).
	Finish(ctx context.Context, o Outcome) error
}

// Files gives access to job inputs and outputs (implemented elsewhere over the blob store).
type Files interface {
	// OpenInput opens the uploaded input of a job.
	OpenInput(jobID string) (*os.File, error)
	// CreateOutput starts the output of a job, which the converter writes into; nothing of it
	// is kept unless it is committed.
	CreateOutput(jobID string) (OutputFile, error)
	// DeleteOutput removes the output of a job, if any.
	DeleteOutput(jobID string) error
}

// InputFetcher is Files whose inputs may take time to get (an input fetched from a URL):
// the pool opens inputs through OpenInputContext, under the task's timeout and cancellation.
// An *Error it returns fails the job with its Message and Reason.
type InputFetcher interface {
	OpenInputContext(ctx context.Context, t Task) (*os.File, error)
}

// Deliverer is Files that sends a job's committed output on to the caller's destination
// (create's deliver_to) before the job succeeds; it returns nil when the job has none. An
// *Error it returns fails the job with its Message and Reason.
type Deliverer interface {
	DeliverOutput(ctx context.Context, t Task, out Output) error
}

// OutputFile is a job's output being written. One goroutine writes it and then calls Commit
// or Discard; Discard after Commit does nothing.
type OutputFile interface {
	io.Writer
	// Commit stores the output atomically as the job's, with meta for its download.
	Commit(meta OutputMeta) (Output, error)
	// Discard drops the output unless it was committed.
	Discard()
}

// PoolConfig configures a Pool; zero fields take the documented defaults.
type PoolConfig struct {
	// Workers is how many conversions run at once; default runtime.GOMAXPROCS(0).
	Workers int
	// Timeout bounds one conversion; default 10 minutes.
	Timeout time.Duration
	// PollInterval is how often an idle worker looks for work without being notified; default 1s.
	PollInterval time.Duration
	// StoragePause is how long a worker waits before its next claim after an output could not
	// be stored (storage_error), so a full disk is not retried at once; default 1s.
	StoragePause time.Duration
	// ScratchDir holds each task's temporary files; default os.TempDir().
	ScratchDir string
	// Logger receives job transitions; default slog.Default().
	Logger *slog.Logger
	// StrayReturned, when set, is called each time an abandoned conversion (timed out,
	// cancelled or stopped by shutdown while its converter ignored the context) finally returns,
	// with how long it ran past the moment it was abandoned. It must not block.
	StrayReturned func(overrun time.Duration)
	// Runner runs each conversion; nil runs Catalog.Convert in this process.
	Runner Runner
	// Progress, when set, receives a running task's progress (0 to 1, growing, never 1, at
	// most every ProgressInterval and only on a whole percent's change): the converters' own
	// counts (Params.Progress) where they count, else how far the conversion has read its
	// input (progress.go).
	Progress func(t Task, progress float64)
	// ProgressInterval is how often progress is sampled; default DefaultProgressInterval.
	ProgressInterval time.Duration
}

// Pool runs conversions for queued jobs on a fixed number of worker goroutines.
type Pool struct {
	cfg PoolConfig
	cat *Catalog
	q   Queue
	f   Files
	log *slog.Logger

	wake chan struct{} // one pending wake-up, coalesced

	claimCtx    context.Context // cancelled when Shutdown starts: no more claims
	stopClaims  context.CancelFunc
	startOnce   sync.Once
	stopOnce    sync.Once
	workersDone chan struct{}
	wg          sync.WaitGroup

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	killed  bool // drain timeout passed: every conversion is stopped at once
	// killedCh is closed with killed: workers stop waiting for their abandoned conversions.
	killedCh chan struct{}

	strays atomic.Int64 // conversions abandoned on timeout or cancel that have not returned yet
}

// Causes with which a task's context is cancelled (context.Cause), so a Runner can tell why
// it was stopped.
var (
	ErrTaskTimeout  = errors.New("conversion timed out")
	ErrTaskCancel   = errors.New("job cancelled")
	ErrTaskShutdown = errors.New("worker shutdown")
)

// NewPool returns a pool that claims tasks from q and converts them with cat; call Start to run it.
func NewPool(cfg PoolConfig, cat *Catalog, q Queue, f Files) *Pool {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.StoragePause <= 0 {
		cfg.StoragePause = time.Second
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.ScratchDir == "" {
		cfg.ScratchDir = os.TempDir()
	}
	if cfg.Runner == nil {
		cfg.Runner = catalogRunner{cat}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{
		cfg:         cfg,
		cat:         cat,
		q:           q,
		f:           f,
		log:         log,
		wake:        make(chan struct{}, 1),
		claimCtx:    ctx,
		stopClaims:  cancel,
		workersDone: make(chan struct{}),
		running:     make(map[string]context.CancelCauseFunc),
		killedCh:    make(chan struct{}),
	}
}

// Start starts the workers; it does not block, and calls after the first do nothing.
func (p *Pool) Start() {
	p.startOnce.Do(func() {
		p.wg.Add(p.cfg.Workers)
		for i := 0; i < p.cfg.Workers; i++ {
			go p.worker()
		}
		go func() {
			p.wg.Wait()
			close(p.workersDone)
		}()
	})
}

// Notify tells the pool a job was queued, so an idle worker looks now; it never blocks.
func (p *Pool) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Cancel stops the running conversion of a job and reports whether one was running.
func (p *Pool) Cancel(jobID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	cancel, ok := p.running[jobID]
	if ok {
		cancel(ErrTaskCancel)
	}
	return ok
}

// Running returns how many conversions are in progress.
func (p *Pool) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// Shutdown stops claiming at once and waits for running conversions until ctx is done; then it
// stops them, reports each as worker_shutdown, and returns once every worker has exited. It
// returns ctx's error when conversions had to be stopped. Queued jobs are left queued.
func (p *Pool) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(p.stopClaims)
	p.startOnce.Do(func() { close(p.workersDone) }) // never started: nothing to wait for
	select {
	case <-p.workersDone:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if !p.killed {
		close(p.killedCh)
	}
	p.killed = true
	n := len(p.running)
	for _, cancel := range p.running {
		cancel(ErrTaskShutdown)
	}
	p.mu.Unlock()
	<-p.workersDone
	if n > 0 {
		return fmt.Errorf("stopped %d running conversions after the drain timeout: %w", n, ctx.Err())
	}
	return nil
}

func (p *Pool) worker() {
	defer p.wg.Done()
	timer := time.NewTimer(p.cfg.PollInterval)
	defer timer.Stop()
	for {
		if p.claimCtx.Err() != nil {
			return
		}
		task, ok, err := p.q.Claim(p.claimCtx)
		switch {
		case err != nil && p.claimCtx.Err() != nil:
			return
		case err != nil:
			p.log.Error("claiming a job failed", "err", err)
		case ok:
			// More jobs may be queued: pass the wake-up on to another idle worker.
			p.Notify()
			if p.safeRunTask(task) == CodeStorageError {
				// The disk failed the output: give it a moment before the next claim.
				timer.Reset(p.cfg.StoragePause)
				select {
				case <-p.claimCtx.Done():
					return
				case <-timer.C:
				}
			}
			continue
		}
		timer.Reset(p.cfg.PollInterval)
		select {
		case <-p.claimCtx.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// safeRunTask runs a task, keeping the worker alive should the queue or file store panic, and
// returns its outcome code.
func (p *Pool) safeRunTask(t Task) (code string) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("panic while reporting a job", "job_id", t.JobID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return p.runTask(t)
}

// convResult is what the conversion goroutine hands back to its worker.
type convResult struct {
	out      OutputFile // the converted output, not yet committed
	warnings []Warning  // what the conversion could not keep
	verified bool       // the output passed its check (Catalog.Verify)
	err      error
}

// runTask converts one claimed task, reports its outcome and returns its code; it never panics.
func (p *Pool) runTask(t Task) string {
	start := time.Now()
	log := p.log.With("job_id", t.JobID, "attempt", t.Attempt, "from", t.InputFormat, "to", t.TargetFormat)
	log.Info("job running")

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, p.cfg.Timeout, ErrTaskTimeout)
	defer cancelTimeout()

	p.mu.Lock()
	p.running[t.JobID] = cancel
	if p.killed {
		cancel(ErrTaskShutdown)
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.running, t.JobID)
		p.mu.Unlock()
	}()

	var o Outcome
	var stray <-chan struct{} // closed when an abandoned conversion has really returned
	func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic while running job", "panic", r, "stack", string(debug.Stack()))
				o = Outcome{Code: CodeConversionFailed, Message: "internal error"}
			}
		}()
		o, stray = p.convert(ctx, log, t)
	}()
	o.Task = t
	// The job's outcome is reported at once; the worker's slot (and the memory share the
	// converter holds until it returns) stays taken until the abandoned conversion returns,
	// so a cancelled or timed-out conversion never runs beside the worker's next job.
	defer p.awaitStray(log, stray)

	outcome := "succeeded"
	switch o.Code {
	case "":
	case CodeStorageError:
		outcome = "storage_error" // the queue decides: retried, or failed once attempts are used up
	default:
		outcome = "failed"
	}
	if err := p.finish(o); err != nil {
		// The job moved on meanwhile (e.g. cancelled): whatever it produced is not wanted.
		log.Debug("job no longer running; outcome dropped", "outcome", outcome, "duration", time.Since(start), "code", o.Code, "err", err)
		if o.Output != nil {
			p.deleteOutput(log, t.JobID)
		}
		return o.Code
	}
	log.Info("job finished", "outcome", outcome, "duration", time.Since(start), "code", o.Code, "message", o.Message)
	return o.Code
}

func (p *Pool) finish(o Outcome) error {
	// Reporting must work even while shutting down, so it gets its own context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.q.Finish(ctx, o)
}

func (p *Pool) deleteOutput(log *slog.Logger, jobID string) {
	if err := p.f.DeleteOutput(jobID); err != nil {
		log.Error("deleting an unwanted output failed", "err", err)
	}
}

// awaitStray waits until an abandoned conversion has returned (stray is nil when there is
// none), or until shutdown's drain timeout stops waiting for anything.
func (p *Pool) awaitStray(log *slog.Logger, stray <-chan struct{}) {
	if stray == nil {
		return
	}
	select {
	case <-stray:
		return
	default:
	}
	log.Warn("the conversion ignores its cancellation; the worker waits for it to return")
	select {
	case <-stray:
	case <-p.killedCh:
	}
}

// convert runs the conversion in its own goroutine so that a converter ignoring ctx cannot hold
// the task's outcome past its timeout, then stores the result. The outcome lacks only Task.
// When the conversion is abandoned, the returned channel is closed once its goroutine returns.
func (p *Pool) convert(ctx context.Context, log *slog.Logger, t Task) (Outcome, <-chan struct{}) {
	var in *os.File
	var err error
	if fetcher, ok := p.f.(InputFetcher); ok {
		in, err = fetcher.OpenInputContext(ctx, t)
	} else {
		in, err = p.f.OpenInput(t.JobID)
	}
	if err != nil {
		if o, ok := p.transferOutcome(ctx, log, "getting the input", err); ok {
			return o, nil
		}
		log.Error("opening the input failed", "err", err)
		return Outcome{Code: CodeConversionFailed, Message: "internal error: could not read the input"}, nil
	}
	// The converter writes the output where Files keeps it until it is committed, so it is
	// written once. Intermediate files of a multi-step path go straight into the scratch
	// directory: a directory per task cost a mkdir and a RemoveAll, 12% of the server's CPU
	// when the conversions are small (docs/benchmarks.md, run 6).
	out, err := p.f.CreateOutput(t.JobID)
	if err != nil {
		in.Close()
		if se := storageFault(err, nil); se != nil {
			return storageOutcome(log, se), nil
		}
		log.Error("starting the output failed", "err", err)
		return Outcome{Code: CodeConversionFailed, Message: "internal error: could not store the output"}, nil
	}

	// The converter's own counts reach the sampler through the context (WithProgress).
	runCtx, tick, stopTick, sampler := p.progressTicker(ctx, t, in)
	defer stopTick()
	results := make(chan convResult)
	abandoned := make(chan struct{})
	returned := make(chan struct{})
	var abandonedAt atomic.Int64 // UnixNano of the abandon, set before abandoned is closed
	go func() {
		defer close(returned)
		// This goroutine owns in and, until it hands it over, the output; Convert removes its
		// intermediate files itself. An abandoned conversion cleans up when it returns.
		res := convResult{out: out}
		defer func() {
			if r := recover(); r != nil {
				res.err = &Error{Message: "internal error", Err: fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
			in.Close()
			select {
			case results <- res:
			case <-abandoned:
				out.Discard()
				p.strays.Add(-1)
				if p.cfg.StrayReturned != nil {
					p.cfg.StrayReturned(time.Since(time.Unix(0, abandonedAt.Load())))
				}
			}
		}()
		res.warnings, res.err = p.cfg.Runner.Run(runCtx, t, in, out, p.cfg.ScratchDir)
		if res.err == nil {
			res.verified, res.err = p.verify(ctx, t, in, out)
		}
	}()

	var res convResult
wait:
	for {
		select {
		case res = <-results:
			break wait
		case <-tick:
			sampler.sample()
		case <-ctx.Done():
			p.strays.Add(1)
			abandonedAt.Store(time.Now().UnixNano())
			close(abandoned)
			return p.stopped(ctx, log), returned
		}
	}
	defer res.out.Discard()
	if ctx.Err() != nil {
		return p.stopped(ctx, log), nil
	}
	if res.err != nil {
		if se := storageFault(res.err, res.out); se != nil {
			return storageOutcome(log, se), nil
		}
		if errors.Is(res.err, ErrWorkerCrashed) {
			log.Warn("the worker process died mid-job; the job goes back to the queue", "err", res.err)
			return Outcome{Code: CodeWorkerCrashed, Message: "the worker process running the conversion died"}, nil
		}
		var ce *Error
		if errors.As(res.err, &ce) {
			log.Info("conversion failed", "err", res.err)
			o := Outcome{Code: CodeConversionFailed, Message: ce.Message}
			var r reasoned
			if errors.As(res.err, &r) {
				o.Reason = r.FailureReason()
			} else {
				o.Reason = ErrorReason(res.err)
			}
			return o, nil
		}
		log.Error("conversion failed", "err", res.err)
		return Outcome{Code: CodeConversionFailed, Message: "internal error"}, nil
	}

	meta := OutputMeta{ContentType: "application/octet-stream", Filename: t.JobID}
	if f := p.cat.OutputFormat(t.TargetFormat, t.Options); f.ID != "" {
		meta.ContentType = f.MIME
		if len(f.Extensions) > 0 {
			meta.Filename += "." + f.Extensions[0]
		}
	}
	output, err := res.out.Commit(meta)
	if err != nil {
		if ctx.Err() != nil {
			return p.stopped(ctx, log), nil
		}
		if se := storageFault(err, res.out); se != nil {
			return storageOutcome(log, se), nil
		}
		log.Error("storing the output failed", "err", err)
		return Outcome{Code: CodeConversionFailed, Message: "internal error: could not store the output"}, nil
	}
	if ctx.Err() != nil {
		// Stopped after the output was stored: a cancelled job must not keep it.
		p.deleteOutput(log, t.JobID)
		return p.stopped(ctx, log), nil
	}
	output.Warnings = res.warnings
	output.Verified = res.verified
	if d, ok := p.f.(Deliverer); ok {
		if err := d.DeliverOutput(ctx, t, output); err != nil {
			// The job fails: its output, kept by no job, goes.
			p.deleteOutput(log, t.JobID)
			if o, ok := p.transferOutcome(ctx, log, "delivering the output", err); ok {
				return o, nil
			}
			log.Error("delivering the output failed", "err", err)
			return Outcome{Code: CodeConversionFailed, Message: "internal error: could not deliver the output"}, nil
		}
	}
	return Outcome{Output: &output}, nil
}

// transferOutcome is the outcome of an InputFetcher's or Deliverer's failure: the task's own
// stop (cancel, shutdown) when that ended it, else the *Error's message and reason; ok is
// false for any other error.
func (p *Pool) transferOutcome(ctx context.Context, log *slog.Logger, what string, err error) (Outcome, bool) {
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrTaskTimeout) {
		return p.stopped(ctx, log), true
	}
	if ce := (*Error)(nil); errors.As(err, &ce) {
		log.Info(what+" failed", "err", err)
		return Outcome{Code: CodeConversionFailed, Message: ce.Message, Reason: ce.Reason}, true
	}
	return Outcome{}, false
}

// verify checks a conversion's output before it is committed: the Runner did when it is an
// OutputVerifier (a worker process re-reads the output it wrote); else the pool re-reads it
// here, when out can be read back.
func (p *Pool) verify(ctx context.Context, t Task, in *os.File, out OutputFile) (bool, error) {
	if v, ok := p.cfg.Runner.(OutputVerifier); ok && v.VerifiesOutputs() {
		return p.cat.Verifies(t.TargetFormat, t.Options), nil
	}
	ro, ok := out.(ReadableOutput)
	if !ok {
		return false, nil
	}
	r, size, err := ro.Written()
	if err != nil {
		return false, &StorageError{Err: err}
	}
	return p.cat.Verify(ctx, t.InputFormat, t.TargetFormat, t.Options, in, r, size)
}

// stopped describes why a task's context ended before its conversion did.
func (p *Pool) stopped(ctx context.Context, log *slog.Logger) Outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrTaskShutdown):
		return Outcome{Code: CodeWorkerShutdown, Message: "stopped by shutdown after the drain timeout; raise --drain-timeout"}
	case errors.Is(cause, ErrTaskCancel):
		return Outcome{Code: CodeConversionFailed, Message: "cancelled"}
	default:
		if n := p.strays.Load(); n > 0 {
			log.Warn("abandoned conversions still running in the background", "count", n)
		}
		return Outcome{Code: CodeConversionFailed, Message: fmt.Sprintf("conversion timed out after %s; raise --conversion-timeout", p.cfg.Timeout)}
	}
}

// Strays returns how many abandoned conversions (timed out or cancelled, ignoring their
// context) are still running in the background.
func (p *Pool) Strays() int { return int(p.strays.Load()) }
