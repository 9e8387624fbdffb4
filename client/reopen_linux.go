package client

import (
	"errors"
	"io"
	"os"
	"strconv"
)

// reopenAt opens f's file again, read-only, through /proc/self/fd, and seeks the new
// descriptor to start. The upload hands it to net/http as a plain *os.File, so the kernel
// copies it to the socket (sendfile), and net/http closes it; f and its offset stay the
// caller's. It fails when f is nil or the file cannot be opened for reading again (a file
// opened write-only, /proc not mounted), and the caller then reads f with ReadAt.
func reopenAt(f *os.File, start int64) (*os.File, error) {
	if f == nil {
		return nil, errors.New("no file")
	}
	raw, err := f.SyscallConn() // not f.Fd(), which would change the file's blocking mode
	if err != nil {
		return nil, err
	}
	var own *os.File
	if cerr := raw.Control(func(fd uintptr) {
		own, err = os.Open("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	if _, err := own.Seek(start, io.SeekStart); err != nil {
		own.Close()
		return nil, err
	}
	return own, nil
}
