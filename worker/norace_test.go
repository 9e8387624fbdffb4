//go:build !race

package worker

// raceEnabled reports a -race build, in which conversions run several times slower.
const raceEnabled = false
