package blobstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing [off, off+n) of f to disk
// now (sync_file_range with SYNC_FILE_RANGE_WRITE: it does not wait, and it
// is no durability guarantee), so the fsync at the end of an upload finds
// little left to write. Measured writing 1 GiB in 1 MiB writes to ext4 on
// this project's bench machine: the final fsync took 0.59-0.90 s without it
// and 8-37 ms with it (fallocate of the whole size first made it slower:
// 1.0-1.3 s in all). Errors are ignored: this is only a hint, and the fsync
// that follows reports any real failure.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
