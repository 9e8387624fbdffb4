//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// Settle flushes the dirty pages a previous contender left and waits a second, so that their
// writeback does not slow the fsyncs of the next one.
func Settle() {
	syscall.Sync()
	time.Sleep(time.Second)
}
