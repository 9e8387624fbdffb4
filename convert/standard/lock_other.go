//go:build !unix

package standard

import "os"

// lockFile does not lock where the system has no flock: concurrent fills compile twice, and
// wazero's cache still writes each entry whole.
func lockFile(*os.File, bool) (bool, error) { return true, nil }
