//go:build !unix

package benchkit

import "time"

// Settle waits a second between contenders (there is no sync(2) to call here).
func Settle() { time.Sleep(time.Second) }
