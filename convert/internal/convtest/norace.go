//go:build !race

package convtest

// RaceEnabled reports a -race build, in which wasm-backed codecs and wasm2go's translated C
// run several times slower: time limits in tests are scaled by RaceSlowdown.
const RaceEnabled = false

// RaceSlowdown scales time limits in tests under -race.
const RaceSlowdown = 1
