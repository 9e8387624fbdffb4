// Package cputime reads the CPU time the running process has used, for the benchmarks that
// report CPU per operation next to wall time (cpu-ns/op): on two cores the two differ as soon
// as work runs in parallel.
package cputime

import "time"

// Self is the user plus system CPU time this process has used so far, or 0 where the
// platform offers no getrusage.
func Self() time.Duration { return self() }
