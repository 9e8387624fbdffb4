//go:build !unix

package worker

import (
	"errors"
	"os"
)

// errNoRights is what passing descriptors answers where there are no Unix sockets: worker
// processes run on Linux only (supported), so nothing reaches it but a build for elsewhere.
var errNoRights = errors.New("passing file descriptors needs Unix sockets: worker processes run on Linux only")

func rights(fds []int) ([]byte, error) { return nil, errNoRights }

func rightsSpace(n int) int { return 0 }

func passedFiles(oob []byte) ([]*os.File, error) { return nil, errNoRights }

func truncated(flags int) bool { return false }
