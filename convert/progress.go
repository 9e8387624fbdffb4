package convert

import (
	"context"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultProgressInterval is how often the pool samples a running conversion's progress: the
// most often a job's progress is reported, whatever its converter counts.
const DefaultProgressInterval = time.Second

// offsetMark is the input as a conversion's first step reads it: each read moves the file's
// offset to the furthest byte read so far (converters read with ReadAt, which leaves the
// offset alone). A worker process gets the server's open file, so the server reads the
// conversion's progress from the offset they share, with no message between them.
type offsetMark struct {
	f   *os.File
	max atomic.Int64
}

// ReadAt reads from the file and marks how far it got.
func (m *offsetMark) ReadAt(p []byte, off int64) (int, error) {
	n, err := m.f.ReadAt(p, off)
	for end := off + int64(n); n > 0; {
		cur := m.max.Load()
		if end <= cur {
			break
		}
		if m.max.CompareAndSwap(cur, end) {
			m.f.Seek(end, io.SeekStart)
			break
		}
	}
	return n, err
}

// progressKey is the context key of a conversion's progress sink (WithProgress).
type progressKey struct{}

// WithProgress returns ctx carrying report, which receives the conversion's own counts of its
// progress (0 to 1) as Catalog.Convert's converters make them (Params.Progress), from any
// goroutine. The first report, 0, comes as the conversion starts when its path counts (a
// converter with Counts set; the pool takes it before the conversion starts, Catalog.Counts):
// from then on the counts, not the input's offset, are its progress. The pool sets it; a worker process sets one that sends each report to the server,
// where ReportProgress hands it to the pool's.
func WithProgress(ctx context.Context, report func(float64)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress hands v (0 to 1) to ctx's progress sink (WithProgress), if it has one.
func ReportProgress(ctx context.Context, v float64) {
	if f, ok := ctx.Value(progressKey{}).(func(float64)); ok && !math.IsNaN(v) {
		f(min(max(v, 0), 1))
	}
}

// stepProgress maps one step's counts into its share of the conversion's progress: step i of
// a path of n steps covers [i/n, (i+1)/n).
type stepProgress struct {
	ctx        context.Context
	base, span float64
	last       atomic.Int64 // the last whole per mille sent, so a tight loop sends few reports
	mu         sync.Mutex   // held while a report is sent, so reports leave in their order
}

// Progress reports that the converter has done done of total units of its work (pages,
// entries, rows, bytes, samples): the job's progress, when the converter is marked Counts.
// It may be called from any goroutine and as often as the loop turns (reports are sampled
// about once a second); calls that do not move a whole per mille forward, or on Params
// outside Catalog.Convert, do nothing.
func (p Params) Progress(done, total int64) {
	sp := p.progress
	if sp == nil || total <= 0 || done < 0 {
		return
	}
	frac := min(float64(done)/float64(total), 1)
	mille := int64(frac * 1000)
	if mille <= sp.last.Load() {
		return // the common case of a tight loop, without the lock
	}
	// Converters count from several goroutines (strips encoded in parallel): the lock makes
	// the reports leave growing, as the worker socket and the sampler receive them.
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if mille <= sp.last.Load() {
		return
	}
	sp.last.Store(mille)
	ReportProgress(sp.ctx, sp.base+sp.span*frac)
}

// ProgressFraction is Progress for a converter that weighs its phases itself (decode and
// encode, layout and output): f of its work, 0 to 1, is done.
func (p Params) ProgressFraction(f float64) {
	const scale = 1 << 20
	p.Progress(int64(min(max(f, 0), 1)*scale), scale)
}

// progressSampler turns a running conversion's progress into reports: the converter's own
// counts (WithProgress) once it reports any, else how far the conversion has read its input
// (the input file's offset, offsetMark, against its size). A converter that reads the whole
// input first and counts nothing reports most of its progress at once; one that reads
// nothing of it (an input fetched elsewhere) reports none. Reports grow only and stop short
// of 1 (the job's success says it is done), and only a change of a whole percent is reported.
type progressSampler struct {
	in     *os.File
	size   int64 // 0: the offset tells nothing
	counts atomic.Uint64
	last   float64
	report func(float64)
}

// noCount is counts before the converter reported: not a float64 the sampler can be given.
const noCount = math.MaxUint64

func newProgressSampler(in *os.File, report func(float64)) *progressSampler {
	s := &progressSampler{in: in, last: -1, report: report}
	s.counts.Store(noCount)
	if fi, err := in.Stat(); err == nil && fi.Mode().IsRegular() {
		s.size = fi.Size()
	}
	return s
}

// count takes in a converter's report (WithProgress's sink): it keeps the highest.
func (s *progressSampler) count(v float64) {
	for {
		cur := s.counts.Load()
		if cur != noCount && math.Float64frombits(cur) >= v {
			return
		}
		if s.counts.CompareAndSwap(cur, math.Float64bits(v)) {
			return
		}
	}
}

// value is the conversion's progress now: its counts once it reported, else its input's
// offset; false when neither tells anything.
func (s *progressSampler) value() (float64, bool) {
	if c := s.counts.Load(); c != noCount {
		return math.Float64frombits(c), true
	}
	if s.size <= 0 {
		return 0, false
	}
	off, err := s.in.Seek(0, io.SeekCurrent)
	if err != nil || off <= 0 {
		return 0, false
	}
	return float64(off) / float64(s.size), true
}

// sample reports the progress as a fraction, when it moved a visible step forward.
func (s *progressSampler) sample() {
	v, ok := s.value()
	if !ok {
		return
	}
	v = min(math.Floor(v*100)/100, 0.99)
	if v <= s.last {
		return
	}
	s.last = v
	s.report(v)
}

// progressTicker is the sampler's ticker channel, nil (never ready) without a sampler, and
// ctx with the sampler as its progress sink.
func (p *Pool) progressTicker(ctx context.Context, t Task, in *os.File) (context.Context, <-chan time.Time, func(), *progressSampler) {
	if p.cfg.Progress == nil {
		return ctx, nil, func() {}, nil
	}
	s := newProgressSampler(in, func(v float64) { p.cfg.Progress(t, v) })
	if p.cat.Counts(t.InputFormat, t.TargetFormat) {
		// The path counts: Catalog.Convert's first report, 0, is on its way, from a worker
		// process over its socket, say, while the converter may already have read the
		// input's end (a zip's directory, a PDF's cross-reference table). Taken now, it keeps
		// a tick in between from reporting that offset, 0.99, which the counts could never
		// pass.
		s.count(0)
	}
	tk := time.NewTicker(p.cfg.ProgressInterval)
	return WithProgress(ctx, s.count), tk.C, tk.Stop, s
}
