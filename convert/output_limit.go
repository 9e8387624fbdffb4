package convert

import (
	"errors"
	"io"
	"math"
	"strconv"
)

// Output limits (issue 18 item 4): a small input must not write an unbounded output, such
// as a 130 KB XLSX whose sparse rows pad out to a 330 MB CSV, or a few shared strings
// repeated by every cell.
const (
	// DefaultMaxOutputRatio is the output-to-input ratio used when Limits.MaxOutputRatio is zero.
	DefaultMaxOutputRatio = 200
	// DefaultMaxOutputBytes is the absolute output limit used when Limits.MaxOutputBytes is zero.
	DefaultMaxOutputBytes = 4 << 30
	// OutputRatioFloor is the output every step may write whatever the ratio: small inputs
	// legitimately grow (a short text becomes a PDF with its fonts).
	OutputRatioFloor = 64 << 20
)

// ErrOutputTooLarge is wrapped by the *Error of a conversion stopped because its output
// passed Limits.MaxOutputRatio or Limits.MaxOutputBytes.
var ErrOutputTooLarge = errors.New("output too large")

// outputLimit returns the most bytes a step to format to may write for an input of
// inputSize bytes, and whether the ratio (rather than the absolute limit) sets it.
func (c *Catalog) outputLimit(to string, inputSize int64) (limit int64, byRatio bool) {
	limit = c.lim.MaxOutputBytes
	c.mu.RLock()
	f, ok := c.formats[to]
	c.mu.RUnlock()
	if ok && f.Category == CategoryImage {
		return limit, false // bounded by MaxPixels
	}
	r := c.lim.MaxOutputRatio * float64(inputSize)
	if r < OutputRatioFloor {
		r = OutputRatioFloor
	}
	if r < float64(limit) && r < math.MaxInt64 {
		return int64(r), true
	}
	return limit, false
}

// limitOutput wraps the output of step s so that the step fails with ErrOutputTooLarge as
// soon as it writes more than its limit, while it writes rather than after.
func (c *Catalog) limitOutput(out io.Writer, s Step, inputSize int64) io.Writer {
	limit, byRatio := c.outputLimit(s.To, inputSize)
	return &limitedWriter{w: out, left: limit, limit: limit, byRatio: byRatio, step: s, input: inputSize, ratio: c.lim.MaxOutputRatio}
}

// limitedWriter passes at most limit bytes to w; the write that would pass it fails.
type limitedWriter struct {
	w           io.Writer
	left, limit int64
	byRatio     bool
	step        Step
	input       int64
	ratio       float64
	err         error
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.left {
		var e *Error
		if l.byRatio {
			e = Errorf(ErrOutputTooLarge, "converting %s to %s wrote more than %s, %s times the %s input (the output ratio limit): the input expands far beyond its size (repeated or padded content)",
				l.step.From, l.step.To, ByteSize(l.limit), strconv.FormatFloat(l.ratio, 'f', -1, 64), ByteSize(l.input))
		} else {
			e = Errorf(ErrOutputTooLarge, "converting %s to %s wrote more than %s, the output size limit", l.step.From, l.step.To, ByteSize(l.limit))
		}
		l.err = e
		return 0, e
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
