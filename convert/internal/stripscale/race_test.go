//go:build race

package stripscale

// raceEnabled reports a -race build (see TestScaler_SameAsDraw).
const raceEnabled = true
