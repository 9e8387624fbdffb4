package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/cputime"
)

func TestSelf_CountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no getrusage")
	}
	before := cputime.Self()
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if used := cputime.Self() - before; used < 20*time.Millisecond {
		t.Fatalf("50 ms of spinning counted %v of CPU (x=%d)", used, x)
	}
}
