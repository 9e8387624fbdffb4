//go:build !unix

package cli

import (
	"errors"
	"os"
)

// startFill is not done where processes cannot be detached this way: the first run compiles.
func startFill(*os.File) error { return errors.New("no background fill on this system") }
