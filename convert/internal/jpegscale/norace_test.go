//go:build !race

package jpegscale

// raceEnabled reports a -race build (see TestDecodeScaled_SameAsBefore).
const raceEnabled = false
