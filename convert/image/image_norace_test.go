//go:build !race

package image

// raceEnabled reports a -race build, in which wasm-backed codecs and wasm2go's translated C
// run several times slower: time limits in tests are scaled by raceSlowdown.
const raceEnabled = false

const raceSlowdown = 1
