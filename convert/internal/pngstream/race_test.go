//go:build race

package pngstream

// raceEnabled reports a -race build (see skipUnderRace).
const raceEnabled = true
