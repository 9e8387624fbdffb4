package tests3

import "syscall"

// procAttr asks Linux to kill versitygw when the test binary dies without reaching Stop (a
// panic, a -timeout, a SIGKILL), so no server outlives its tests.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
