package blobstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// setAttr stores b in f's extended attribute name (metaAttr, uploadAttr); errNoMetaAttr where
// the filesystem keeps no user attributes.
func setAttr(f *os.File, name string, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fsetxattr(int(fd), name, b, 0) }); err != nil {
		return err
	}
	if errors.Is(serr, unix.ENOTSUP) || errors.Is(serr, unix.EOPNOTSUPP) || errors.Is(serr, unix.EPERM) {
		return errNoMetaAttr
	}
	return serr
}

// getAttr returns f's extended attribute name; errNoMetaAttr when it has none (an output
// written as a sidecar, or a filesystem without user attributes).
func getAttr(f *os.File, name string) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 512)
	for {
		var n int
		var gerr error
		if err := rc.Control(func(fd uintptr) { n, gerr = unix.Fgetxattr(int(fd), name, buf) }); err != nil {
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

// getPathAttr is getAttr by the file's name, without opening it (two system calls fewer);
// a missing file is fs.ErrNotExist.
func getPathAttr(path, name string) ([]byte, error) {
	buf := make([]byte, 128)
	for {
		n, err := unix.Getxattr(path, name, buf)
		switch {
		case err == nil:
			return buf[:n], nil
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<16:
			buf = make([]byte, 2*len(buf))
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP):
			return nil, errNoMetaAttr
		default:
			return nil, &os.PathError{Op: "getxattr", Path: path, Err: err}
		}
	}
}
