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
//
// Two things keep a busy machine from failing a linear path: each measurement repeats the run
// (the same count for both sizes, up to 64) until the small one adds up to MinScalingCPU, since
// a few milliseconds of CPU time are mostly cache misses and scheduler noise; and a ratio over
// the limit is measured again,
// up to ScalingAttempts times, and fails only if every attempt is over it. A quadratic path
// is over it every time (16x); noise is not.
func Scaling(t *testing.T, cpu func() time.Duration, n int, gen func(n int) []byte, run func(t *testing.T, input []byte) error) {
	t.Helper()
	if testing.Short() || RaceEnabled {
		t.Skip("CPU scaling is measured in a plain, full test run")
	}
	reps := 1
	measure := func(size int) (time.Duration, int) {
		in := gen(size)
		best := time.Duration(-1)
		for range 3 {
			start := cpu()
			for range reps {
				if err := run(t, in); err != nil {
					t.Fatalf("n=%d (%d bytes): %v", size, len(in), err)
				}
			}
			if d := cpu() - start; best < 0 || d < best {
				best = d
			}
		}
		return best, len(in)
	}
	small, smallBytes := measure(n)
	if small < MinScalingCPU {
		reps = min(64, int(MinScalingCPU/max(small, time.Millisecond))+1)
		small, smallBytes = measure(n)
	}
	var ratios []float64
	for attempt := 1; attempt <= ScalingAttempts; attempt++ {
		if attempt > 1 {
			small, smallBytes = measure(n)
		}
		large, largeBytes := measure(4 * n)
		if small <= 0 {
			small = time.Millisecond // a clock too coarse for the small run
		}
		ratio := float64(large) / float64(small)
		t.Logf("n=%d (%d bytes): %v CPU; 4n (%d bytes): %v CPU; %d runs each; ratio %.1f", n, smallBytes, small, largeBytes, large, reps, ratio)
		if ratio <= MaxScalingRatio {
			return
		}
		ratios = append(ratios, ratio)
	}
	t.Errorf("4x the input took %.1fx the CPU time in each of %d attempts, over %dx: superlinear", ratios, ScalingAttempts, MaxScalingRatio)
}

// MinScalingCPU is the least CPU time Scaling wants from the smaller input before it compares.
const MinScalingCPU = 20 * time.Millisecond

// ScalingAttempts is how many times Scaling measures a ratio over MaxScalingRatio before it
// fails.
const ScalingAttempts = 3
