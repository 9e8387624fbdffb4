//go:build linux || darwin

package service

import "syscall"

// raiseFileLimit raises the soft limit on open files to the hard limit and returns the soft
// limit now in force (0 if it cannot be read).
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return uint64(lim.Cur), err
		}
		lim = raised
	}
	return uint64(lim.Cur), nil
}

// FileLimit returns the open-file limit serve would run with, without changing this process's:
// the hard limit, which serve raises the soft one to; 0 when it cannot be read.
func FileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return uint64(lim.Max)
}
