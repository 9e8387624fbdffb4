//go:build !race

package cli_test

// raceEnabled reports a -race build: this test process then holds the race detector's shadow
// memory, which a child's peak resident set counts from before its exec (skipPeakRSSUnderRace),
// and the convsvc children it starts are not raced (childProcessOnly).
const raceEnabled = false
