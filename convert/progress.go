package convert

import (
	"io"
	"math"
	"os"
	"time"
)

// DefaultProgressInterval is how often the pool samples a running conversion's progress.
const DefaultProgressInterval = time.Second

// progressSampler reads how far a conversion has read its input: the input file's offset
// against its size. The converter (in this process, or a worker process given the same open
// file) moves the offset as it reads sequentially; one that reads with ReadAt, or not at all,
// leaves it at 0, and no progress is reported. Reports grow only and stop short of 1 (the
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
