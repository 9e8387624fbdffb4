//go:build !race

package multinode

// raceEnabled reports a -race build; TestMain then skips the package under -short, since the
// convsvc processes it tests are built without the detector.
const raceEnabled = false
