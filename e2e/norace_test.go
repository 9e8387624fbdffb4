//go:build !race

package e2e

// raceEnabled reports a -race build; TestMain then skips the package under -short, since the
// convsvc processes it tests are built without the detector.
const raceEnabled = false
