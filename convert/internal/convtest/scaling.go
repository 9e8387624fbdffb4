package convtest

import (
	"testing"
	"time"
)

// MaxScalingRatio is the most CPU time Scaling lets an input 4 times as large take, against
// the smaller one: a linear path takes about 4x, an n log n one a little more, a quadratic
// one 16x. The margin absorbs garbage collection and a busy machine.
const MaxScalingRatio = 8

// Scaling fails t when run on gen(4*n) takes more than MaxScalingRatio times the process CPU
// time of run on gen(n) (issue 18 item 2: no superlinear parsing). Each size runs three
// times and the fastest counts, so one collection or stall does not decide. It measures CPU
// time, as cpu reads it (pass internal/cputime.Self; convtest imports only the kernel), not
// wall-clock time, and skips under -short and -race.
func Scaling(t *testing.T, cpu func() time.Duration, n int, gen func(n int) []byte, run func(t *testing.T, input []byte) error) {
	t.Helper()
	if testing.Short() || RaceEnabled {
		t.Skip("CPU scaling is measured in a plain, full test run")
	}
	measure := func(size int) (time.Duration, int) {
		in := gen(size)
		best := time.Duration(-1)
		for range 3 {
			start := cpu()
			if err := run(t, in); err != nil {
				t.Fatalf("n=%d (%d bytes): %v", size, len(in), err)
			}
			if d := cpu() - start; best < 0 || d < best {
				best = d
			}
		}
		return best, len(in)
	}
	small, smallBytes := measure(n)
	large, largeBytes := measure(4 * n)
	if small <= 0 {
		small = time.Millisecond // a clock too coarse for the small run
	}
	ratio := float64(large) / float64(small)
	t.Logf("n=%d (%d bytes): %v CPU; 4n (%d bytes): %v CPU; ratio %.1f", n, smallBytes, small, largeBytes, large, ratio)
	if ratio > MaxScalingRatio {
		t.Errorf("4x the input took %.1fx the CPU time (%v against %v), over %dx: superlinear", ratio, large, small, MaxScalingRatio)
	}
}
