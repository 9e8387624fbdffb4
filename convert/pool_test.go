package convert_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"image/jpeg"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// fakeQueue is an in-memory Queue: FIFO claims, attempts counted, outcomes recorded.
type fakeQueue struct {
	mu        sync.Mutex
	queued    []convert.Task
	running   map[string]bool
	outcomes  []convert.Outcome
	finished  chan convert.Outcome
	claimed   []string
	cancelled map[string]bool
	empty     int // Claims that found nothing queued
}

func newFakeQueue() *fakeQueue {
	return &fakeQueue{running: map[string]bool{}, finished: make(chan convert.Outcome, 100), cancelled: map[string]bool{}}
}

func (q *fakeQueue) add(t convert.Task) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, t)
}

func (q *fakeQueue) Claim(ctx context.Context) (convert.Task, bool, error) {
	if err := ctx.Err(); err != nil {
		return convert.Task{}, false, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queued) == 0 {
		q.empty++
		return convert.Task{}, false, nil
	}
	t := q.queued[0]
	q.queued = q.queued[1:]
	t.Attempt++
	q.running[t.JobID] = true
	q.claimed = append(q.claimed, t.JobID)
	return t, true, nil
}

func (q *fakeQueue) Finish(_ context.Context, o convert.Outcome) error {
	q.mu.Lock()
	ok := q.running[o.Task.JobID] && !q.cancelled[o.Task.JobID]
	delete(q.running, o.Task.JobID)
	q.outcomes = append(q.outcomes, o)
	q.mu.Unlock()
	q.finished <- o
	if !ok {
		return fmt.Errorf("job %s is not running", o.Task.JobID)
	}
	return nil
}

// cancel marks a job cancelled the way the store would, so its Finish fails.
func (q *fakeQueue) cancel(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancelled[id] = true
}

func (q *fakeQueue) queuedCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queued)
}

// wait returns the next outcome, failing the test after d.
func (q *fakeQueue) wait(t *testing.T, d time.Duration) convert.Outcome {
	t.Helper()
	select {
	case o := <-q.finished:
		return o
	case <-time.After(testtime.Scale(d)):
		t.Fatalf("no outcome within %v", testtime.Scale(d))
		return convert.Outcome{}
	}
}

// fakeFiles keeps inputs and outputs as real files under a temporary directory.
type fakeFiles struct {
	dir         string
	mu          sync.Mutex
	meta        map[string]convert.OutputMeta
	afterCommit func(jobID string) // called after an output is in place
}

func newFakeFiles(t *testing.T) *fakeFiles {
	dir := t.TempDir()
	for _, d := range []string{"in", "out"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &fakeFiles{dir: dir, meta: map[string]convert.OutputMeta{}}
}

func (f *fakeFiles) put(t *testing.T, jobID string, data []byte) {
	if err := os.WriteFile(filepath.Join(f.dir, "in", jobID), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeFiles) OpenInput(jobID string) (*os.File, error) {
	return os.Open(filepath.Join(f.dir, "in", jobID))
}

func (f *fakeFiles) CreateOutput(jobID string) (convert.OutputFile, error) {
	tmp, err := os.CreateTemp(filepath.Join(f.dir, "out"), "tmp-*")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	return &fakeOutput{f: f, jobID: jobID, tmp: tmp, hash: h, cw: &convert.CountingWriter{W: io.MultiWriter(tmp, h)}}, nil
}

// fakeOutput is an output file under fakeFiles' out/ until Commit renames it into place.
type fakeOutput struct {
	f     *fakeFiles
	jobID string
	tmp   *os.File
	hash  hash.Hash
	cw    *convert.CountingWriter
	kept  bool
}

func (o *fakeOutput) Write(p []byte) (int, error) { return o.cw.Write(p) }

func (o *fakeOutput) Commit(meta convert.OutputMeta) (convert.Output, error) {
	if err := o.tmp.Close(); err != nil {
		return convert.Output{}, err
	}
	if err := os.Rename(o.tmp.Name(), filepath.Join(o.f.dir, "out", o.jobID)); err != nil {
		return convert.Output{}, err
	}
	o.kept = true
	o.f.mu.Lock()
	o.f.meta[o.jobID] = meta
	hook := o.f.afterCommit
	o.f.mu.Unlock()
	if hook != nil {
		hook(o.jobID)
	}
	return convert.Output{Bytes: o.cw.N, SHA256: hex.EncodeToString(o.hash.Sum(nil))}, nil
}

func (o *fakeOutput) Discard() {
	if !o.kept {
		o.tmp.Close()
		os.Remove(o.tmp.Name())
	}
}

func (f *fakeFiles) DeleteOutput(jobID string) error {
	err := os.Remove(filepath.Join(f.dir, "out", jobID))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (f *fakeFiles) output(jobID string) ([]byte, bool) {
	data, err := os.ReadFile(filepath.Join(f.dir, "out", jobID))
	return data, err == nil
}

// poolCatalog is the built-in catalog plus test formats whose converters copy ("b"), honour
// ctx while sleeping ("slow"), ignore ctx until released ("stuck"), panic ("panic") or
// reject their input ("bad").
type poolCatalog struct {
	*convert.Catalog
	release chan struct{} // closing it lets "stuck" conversions return
	stuckIn chan struct{} // receives when a "stuck" conversion starts
}

const slowFor = 300 * time.Millisecond

func newPoolCatalog() *poolCatalog {
	pc := &poolCatalog{Catalog: standard.NewCatalog(convert.Limits{}), release: make(chan struct{}), stuckIn: make(chan struct{}, 10)}
	for _, id := range []string{"a", "b", "slow", "stuck", "panic", "bad"} {
		pc.AddFormat(convert.Format{ID: id, Name: id, Category: "data", Extensions: []string{id + "ext"}, MIME: "x/" + id})
	}
	copyRun := func(_ context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		_, err := io.Copy(out, in)
		return err
	}
	pc.AddConverter(convert.Converter{From: "a", To: "b", Run: copyRun})
	pc.AddConverter(convert.Converter{From: "a", To: "slow", Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(slowFor):
		}
		return copyRun(ctx, in, out, p)
	}})
	pc.AddConverter(convert.Converter{From: "a", To: "stuck", Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		pc.stuckIn <- struct{}{}
		<-pc.release // ignores ctx on purpose
		return copyRun(ctx, in, out, p)
	}})
	pc.AddConverter(convert.Converter{From: "a", To: "panic", Run: func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		panic("converter bug")
	}})
	pc.AddConverter(convert.Converter{From: "a", To: "bad", Run: func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		return &convert.Error{Message: "input is bad"}
	}})
	return pc
}

type poolFixture struct {
	cat     *poolCatalog
	q       *fakeQueue
	f       *fakeFiles
	p       *convert.Pool
	scratch string
}

func newPoolFixture(t *testing.T, cfg convert.PoolConfig) *poolFixture {
	t.Helper()
	fx := &poolFixture{cat: newPoolCatalog(), q: newFakeQueue(), f: newFakeFiles(t), scratch: t.TempDir()}
	cfg.ScratchDir = fx.scratch
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	fx.p = convert.NewPool(cfg, fx.cat.Catalog, fx.q, fx.f)
	t.Cleanup(func() {
		select {
		case <-fx.cat.release:
		default:
			close(fx.cat.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		fx.p.Shutdown(ctx)
	})
	return fx
}

// job queues a job converting data from a to target.
func (fx *poolFixture) job(t *testing.T, id, target string, attempt int, data string) {
	fx.f.put(t, id, []byte(data))
	fx.q.add(convert.Task{JobID: id, InputFormat: "a", TargetFormat: target, Attempt: attempt})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testtime.Scale(30 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (fx *poolFixture) assertScratchEmpty(t *testing.T) {
	t.Helper()
	waitFor(t, "scratch dir and uncommitted outputs to go", func() bool {
		entries, _ := os.ReadDir(fx.scratch)
		pending, _ := filepath.Glob(filepath.Join(fx.f.dir, "out", "tmp-*"))
		return len(entries) == 0 && len(pending) == 0
	})
}

func TestPool_OldestFirstAttemptAndOutput(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.job(t, "job_1", "b", 0, "one")
	fx.job(t, "job_2", "b", 2, "two")
	fx.job(t, "job_3", "b", 0, "three")
	fx.p.Start()
	for i, want := range []struct {
		id      string
		attempt int
		data    string
	}{{"job_1", 1, "one"}, {"job_2", 3, "two"}, {"job_3", 1, "three"}} {
		o := fx.q.wait(t, 5*time.Second)
		if o.Task.JobID != want.id || o.Task.Attempt != want.attempt {
			t.Errorf("outcome %d is %s attempt %d, want %s attempt %d", i, o.Task.JobID, o.Task.Attempt, want.id, want.attempt)
		}
		if o.Code != "" || o.Output == nil {
			t.Fatalf("outcome %d = %+v, want success", i, o)
		}
		sum := sha256.Sum256([]byte(want.data))
		if o.Output.Bytes != int64(len(want.data)) || o.Output.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("output = %+v, want %d bytes, sha %x", o.Output, len(want.data), sum)
		}
		if got, _ := fx.f.output(want.id); string(got) != want.data {
			t.Errorf("stored output = %q, want %q", got, want.data)
		}
		fx.f.mu.Lock()
		meta := fx.f.meta[want.id]
		fx.f.mu.Unlock()
		if meta != (convert.OutputMeta{ContentType: "x/b", Filename: want.id + ".bext"}) {
			t.Errorf("meta = %+v", meta)
		}
	}
	fx.assertScratchEmpty(t)
}

func TestPool_RealImageConversion(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 2})
	data, err := os.ReadFile("../testdata/images/sample.png")
	if err != nil {
		t.Fatal(err)
	}
	fx.f.put(t, "job_img", data)
	fx.q.add(convert.Task{JobID: "job_img", InputFormat: "png", TargetFormat: "jpeg"})
	fx.f.put(t, "job_lie", data)
	fx.q.add(convert.Task{JobID: "job_lie", InputFormat: "gif", TargetFormat: "png"})
	fx.p.Start()
	got := map[string]convert.Outcome{}
	for range 2 {
		o := fx.q.wait(t, 5*time.Second)
		got[o.Task.JobID] = o
	}
	if o := got["job_img"]; o.Code != "" {
		t.Fatalf("png to jpeg failed: %+v", o)
	}
	out, _ := fx.f.output("job_img")
	if _, err := jpeg.Decode(bytes.NewReader(out)); err != nil {
		t.Errorf("output is not a JPEG: %v", err)
	}
	fx.f.mu.Lock()
	meta := fx.f.meta["job_img"]
	fx.f.mu.Unlock()
	if meta != (convert.OutputMeta{ContentType: "image/jpeg", Filename: "job_img.jpg"}) {
		t.Errorf("meta = %+v", meta)
	}
	if o := got["job_lie"]; o.Code != convert.CodeConversionFailed || o.Message != "input is not a valid GIF file (it looks like PNG)" {
		t.Errorf("mislabelled input: %+v", o)
	}
}

func TestPool_TimeoutIgnoringContext(t *testing.T) {
	overruns := make(chan time.Duration, 1)
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1, Timeout: 100 * time.Millisecond,
		StrayReturned: func(d time.Duration) { overruns <- d }})
	fx.job(t, "job_stuck", "stuck", 0, "x")
	fx.job(t, "job_next", "b", 0, "next")
	start := time.Now()
	fx.p.Start()
	o := fx.q.wait(t, 5*time.Second)
	if o.Task.JobID != "job_stuck" || o.Code != convert.CodeConversionFailed || o.Message != "conversion timed out after 100ms; raise --conversion-timeout" {
		t.Fatalf("outcome = %+v", o)
	}
	// The stuck conversion never returns by itself, so any outcome shows the worker did not
	// wait for it; the timeout must not fire early.
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("timeout reported after %v, before the 100ms timeout", d)
	}
	// The outcome is reported at once, but the worker's slot stays taken while the abandoned
	// conversion still runs: the next job waits for it.
	if fx.p.Strays() != 1 {
		t.Errorf("Strays = %d, want 1", fx.p.Strays())
	}
	select {
	case o := <-fx.q.finished:
		t.Fatalf("the worker ran the next job beside its abandoned conversion: %+v", o)
	case <-time.After(300 * time.Millisecond):
	}
	if n := fx.q.queuedCount(); n != 1 {
		t.Errorf("%d jobs queued, want the next one still queued", n)
	}
	if _, ok := fx.f.output("job_stuck"); ok {
		t.Error("timed-out job has an output")
	}
	close(fx.cat.release)
	o = fx.q.wait(t, 5*time.Second)
	if o.Task.JobID != "job_next" || o.Code != "" {
		t.Fatalf("next outcome = %+v", o)
	}
	if fx.p.Strays() != 0 {
		t.Errorf("Strays = %d after the stray returned, want 0", fx.p.Strays())
	}
	select {
	case d := <-overruns:
		if d < 250*time.Millisecond {
			t.Errorf("overrun = %v, want at least the 300ms the stray was held", d)
		}
	default:
		t.Error("StrayReturned was not called")
	}
	fx.assertScratchEmpty(t)
	if _, ok := fx.f.output("job_stuck"); ok {
		t.Error("stray conversion stored an output")
	}
}

func TestPool_Cancel(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.job(t, "job_c", "slow", 0, "x")
	fx.p.Start()
	waitFor(t, "the job to run", func() bool { return fx.p.Running() == 1 })
	if fx.p.Cancel("job_other") {
		t.Error("Cancel of a job not running returned true")
	}
	fx.q.cancel("job_c")
	if !fx.p.Cancel("job_c") {
		t.Fatal("Cancel returned false for a running job")
	}
	o := fx.q.wait(t, 5*time.Second)
	if o.Code != convert.CodeConversionFailed || o.Message != "cancelled" || o.Output != nil {
		t.Errorf("outcome = %+v, want conversion_failed/cancelled", o)
	}
	waitFor(t, "Running to drop", func() bool { return fx.p.Running() == 0 })
	if _, ok := fx.f.output("job_c"); ok {
		t.Error("cancelled job has an output")
	}
	fx.assertScratchEmpty(t)
}

func TestPool_CancelAfterOutputStored(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.f.afterCommit = func(id string) {
		fx.q.cancel(id)
		fx.p.Cancel(id)
	}
	fx.job(t, "job_late", "b", 0, "x")
	fx.p.Start()
	o := fx.q.wait(t, 5*time.Second)
	if o.Code != convert.CodeConversionFailed || o.Message != "cancelled" {
		t.Errorf("outcome = %+v, want conversion_failed/cancelled", o)
	}
	if _, ok := fx.f.output("job_late"); ok {
		t.Error("cancelled job kept its output")
	}
}

func TestPool_FinishRefusedDeletesOutput(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.job(t, "job_gone", "b", 0, "x")
	fx.q.cancel("job_gone") // cancelled in the store without the pool hearing of it
	fx.p.Start()
	o := fx.q.wait(t, 5*time.Second)
	if o.Code != "" {
		t.Fatalf("outcome = %+v", o)
	}
	waitFor(t, "the output to be deleted", func() bool { _, ok := fx.f.output("job_gone"); return !ok })
}

func TestPool_PanicAndUserErrorContained(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.job(t, "job_panic", "panic", 0, "x")
	fx.job(t, "job_bad", "bad", 0, "x")
	fx.job(t, "job_ok", "b", 0, "x")
	fx.p.Start()
	want := []struct{ id, code, msg string }{
		{"job_panic", convert.CodeConversionFailed, "internal error while converting a to panic"},
		{"job_bad", convert.CodeConversionFailed, "input is bad"},
		{"job_ok", "", ""},
	}
	for _, w := range want {
		o := fx.q.wait(t, 5*time.Second)
		if o.Task.JobID != w.id || o.Code != w.code || o.Message != w.msg {
			t.Errorf("outcome = %+v, want %s %q %q", o, w.id, w.code, w.msg)
		}
	}
	fx.assertScratchEmpty(t)
}

func TestPool_MissingInput(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.q.add(convert.Task{JobID: "job_noinput", InputFormat: "a", TargetFormat: "b"})
	fx.p.Start()
	o := fx.q.wait(t, 5*time.Second)
	if o.Code != convert.CodeConversionFailed || !strings.HasPrefix(o.Message, "internal error") {
		t.Errorf("outcome = %+v", o)
	}
}

func TestPool_ShutdownDrains(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	fx.job(t, "job_s", "slow", 0, "x")
	fx.job(t, "job_queued", "b", 0, "x")
	fx.p.Start()
	waitFor(t, "the job to run", func() bool { return fx.p.Running() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fx.p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	o := fx.q.wait(t, 5*time.Second)
	if o.Task.JobID != "job_s" || o.Code != "" {
		t.Errorf("outcome = %+v, want success", o)
	}
	if n := fx.q.queuedCount(); n != 1 {
		t.Errorf("%d jobs still queued, want 1 untouched", n)
	}
	fx.assertScratchEmpty(t)
}

func TestPool_ShutdownStopsAfterDrainTimeout(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 2})
	fx.job(t, "job_stuck", "stuck", 0, "x")
	fx.job(t, "job_slow", "slow", 0, "x")
	fx.job(t, "job_queued", "b", 0, "x")
	fx.p.Start()
	waitFor(t, "both jobs to run", func() bool { return fx.p.Running() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := fx.p.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	// The stuck conversion never returns: Shutdown returning at all shows it gave up on it.
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Shutdown returned after %v, before its 50ms deadline", d)
	}
	for range 2 {
		o := fx.q.wait(t, 5*time.Second)
		if o.Code != convert.CodeWorkerShutdown || o.Message != "stopped by shutdown after the drain timeout; raise --drain-timeout" {
			t.Errorf("outcome = %+v, want worker_shutdown", o)
		}
	}
	if n := fx.q.queuedCount(); n != 1 {
		t.Errorf("%d jobs still queued, want 1 untouched", n)
	}
	if fx.p.Running() != 0 {
		t.Errorf("Running = %d after Shutdown", fx.p.Running())
	}
}

func TestPool_NotifyWakesIdleWorker(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 2, PollInterval: time.Hour})
	fx.p.Start()
	waitFor(t, "both workers to find the queue empty", func() bool { // then they sleep for an hour
		fx.q.mu.Lock()
		defer fx.q.mu.Unlock()
		return fx.q.empty >= 2
	})
	fx.job(t, "job_n", "b", 0, "x")
	select {
	case o := <-fx.q.finished:
		t.Fatalf("job ran before Notify: %+v", o)
	case <-time.After(50 * time.Millisecond):
	}
	fx.p.Notify()
	fx.p.Notify() // coalesces, never blocks
	// The workers poll once an hour: an outcome within the bound can only come from Notify.
	o := fx.q.wait(t, 30*time.Second)
	if o.Code != "" {
		t.Fatalf("outcome = %+v", o)
	}
}

func TestPool_WorkersRunConcurrently(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 3, PollInterval: time.Hour})
	fx.p.Start()
	time.Sleep(10 * time.Millisecond)
	for i := range 3 {
		fx.job(t, fmt.Sprintf("job_%d", i), "slow", 0, "x")
	}
	fx.p.Notify() // one wake-up is passed on from worker to worker
	waitFor(t, "three conversions at once", func() bool { return fx.p.Running() == 3 })
	for range 3 {
		if o := fx.q.wait(t, 5*time.Second); o.Code != "" {
			t.Errorf("outcome = %+v", o)
		}
	}
}

func TestPool_ShutdownWithoutStart(t *testing.T) {
	p := convert.NewPool(convert.PoolConfig{Logger: slog.New(slog.DiscardHandler)}, standard.NewCatalog(convert.Limits{}), newFakeQueue(), newFakeFiles(t))
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Start() // no-op after Shutdown
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPool_OutputWarnings: what a conversion could not keep reaches the outcome's output; a
// conversion that kept everything has none.
func TestPool_OutputWarnings(t *testing.T) {
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1})
	alpha, err := os.ReadFile("../testdata/images/sample-alpha.png")
	if err != nil {
		t.Fatal(err)
	}
	fx.f.put(t, "job_alpha", alpha)
	fx.q.add(convert.Task{JobID: "job_alpha", InputFormat: "png", TargetFormat: "jpeg"})
	fx.job(t, "job_plain", "b", 0, "plain")
	fx.p.Start()
	got := map[string]convert.Outcome{}
	for range 2 {
		o := fx.q.wait(t, 5*time.Second)
		got[o.Task.JobID] = o
	}
	if o := got["job_alpha"]; o.Code != "" || o.Output == nil || len(o.Output.Warnings) != 1 || o.Output.Warnings[0].Code != convert.WarnAlphaDropped {
		t.Errorf("png with alpha to jpeg: %+v (output %+v), want one alpha_dropped warning", o, o.Output)
	}
	if o := got["job_plain"]; o.Code != "" || o.Output == nil || o.Output.Warnings != nil {
		t.Errorf("plain copy: %+v (output %+v), want no warnings", o, o.Output)
	}
}
