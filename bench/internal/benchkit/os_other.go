//go:build !unix

package benchkit

import (
	"errors"
	"os"
	"time"
)

// Settle waits a second between contenders (there is no sync(2) to call here).
func Settle() { time.Sleep(time.Second) }

// CutSignal is nil here: there is no user signal to cut a server's profile with.
var CutSignal os.Signal

// SendCut reports that profiles cannot be cut here.
func SendCut(pid int) error {
	return errors.New("benchkit: no signal to cut a profile with on this system")
}
