//go:build unix

package cli

import (
	"os"
	"os/exec"
	"syscall"
)

// startFill starts `convsvc precompile` detached from this process (its own session, no
// terminal, standard streams on /dev/null) at a lower priority, handing it lock, the cache's
// fill lock, as file descriptor 3: the lock is held from now until the fill ends.
func startFill(lock *os.File) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "precompile", "--fill-lock-fd", "3")
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 10)
	return cmd.Process.Release()
}
