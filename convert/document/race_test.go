//go:build race

package document

// raceEnabled reports a -race build, in which sync.Pool drops a share of what is put back at
// random, so allocation totals vary from run to run.
const raceEnabled = true
