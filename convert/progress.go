package convert

import (
	"io"
	"math"
	"os"
	"sync/atomic"
	"time"
)

// DefaultProgressInterval is how often the pool samples a running conversion's progress.
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

// progressSampler reads how far a conversion has read its input: the input file's offset
// (offsetMark) against its size. A converter that reads the whole input first reports most
// of its progress at once; one that reads nothing of it (an input fetched elsewhere) reports
// none. Reports grow only and stop short of 1 (the
// job's success says it is done), and only a change of a whole percent is reported.
type progressSampler struct {
	in     *os.File
	size   int64
	last   float64
	report func(float64)
}

func newProgressSampler(in *os.File, report func(float64)) *progressSampler {
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= 0 {
		return nil
	}
	return &progressSampler{in: in, size: fi.Size(), last: -1, report: report}
}

// sample reports the input's offset as a fraction, when it moved a visible step forward.
func (s *progressSampler) sample() {
	off, err := s.in.Seek(0, io.SeekCurrent)
	if err != nil || off <= 0 {
		return
	}
	v := math.Floor(float64(off)/float64(s.size)*100) / 100
	v = min(v, 0.99)
	if v <= s.last {
		return
	}
	s.last = v
	s.report(v)
}

// progressTicker is the sampler's ticker channel, nil (never ready) without a sampler.
func (p *Pool) progressTicker(t Task, in *os.File) (<-chan time.Time, func(), *progressSampler) {
	if p.cfg.Progress == nil {
		return nil, func() {}, nil
	}
	s := newProgressSampler(in, func(v float64) { p.cfg.Progress(t, v) })
	if s == nil {
		return nil, func() {}, nil
	}
	tk := time.NewTicker(p.cfg.ProgressInterval)
	return tk.C, tk.Stop, s
}
