//go:build unix

package benchkit

import (
	"os"
	"syscall"
	"time"
)

// Settle flushes the dirty pages a previous contender left and waits a second, so that their
// writeback does not slow the fsyncs of the next one.
func Settle() {
	syscall.Sync()
	time.Sleep(time.Second)
}

// cutSignal is the signal bench/serveprof takes as "start a new profile file".
const cutSignal = syscall.SIGUSR1

// CutSignal is cutSignal for signal.Notify (nil where there is none to send).
var CutSignal os.Signal = cutSignal

// SendCut sends CutSignal to the process pid.
func SendCut(pid int) error { return syscall.Kill(pid, cutSignal) }
