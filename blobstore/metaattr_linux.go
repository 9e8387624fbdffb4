package blobstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// metaAttr is the extended attribute that carries an output's metadata (the sidecar's JSON)
// on the output file itself.
const metaAttr = "user.convsvc.output"

// setMetaAttr stores b in f's metaAttr; errNoMetaAttr where the filesystem keeps no user
// attributes (the caller writes a sidecar instead).
func setMetaAttr(f *os.File, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fsetxattr(int(fd), metaAttr, b, 0) }); err != nil {
		return err
	}
	if errors.Is(serr, unix.ENOTSUP) || errors.Is(serr, unix.EOPNOTSUPP) || errors.Is(serr, unix.EPERM) {
		return errNoMetaAttr
	}
	return serr
}

// getMetaAttr returns f's metaAttr; errNoMetaAttr when it has none (an output written as a
// sidecar, or a filesystem without user attributes).
func getMetaAttr(f *os.File) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 512)
	for {
		var n int
		var gerr error
		if err := rc.Control(func(fd uintptr) { n, gerr = unix.Fgetxattr(int(fd), metaAttr, buf) }); err != nil {
			return nil, err
		}
		switch {
		case gerr == nil:
			return buf[:n], nil
		case errors.Is(gerr, unix.ERANGE) && len(buf) < 1<<16:
			buf = make([]byte, 2*len(buf))
		case errors.Is(gerr, unix.ENODATA) || errors.Is(gerr, unix.ENOTSUP) || errors.Is(gerr, unix.EOPNOTSUPP):
			return nil, errNoMetaAttr
		default:
			return nil, gerr
		}
	}
}
