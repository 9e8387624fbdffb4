//go:build unix

package worker

import (
	"os"

	"golang.org/x/sys/unix"
)

// rights is the control message that passes fds (SCM_RIGHTS).
func rights(fds []int) ([]byte, error) { return unix.UnixRights(fds...), nil }

// rightsSpace is the room a control message of n descriptors takes.
func rightsSpace(n int) int { return unix.CmsgSpace(n * 4) }

// passedFiles opens the descriptors that the control messages in oob passed.
func passedFiles(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "passed"))
		}
	}
	return files, nil
}

// truncated reports whether a message or its control data was cut short (recvmsg's flags).
func truncated(flags int) bool { return flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 }
