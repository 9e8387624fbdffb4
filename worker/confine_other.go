//go:build !linux

package worker

import (
	"errors"
	"syscall"
)

func sysProcAttr(netns bool) *syscall.SysProcAttr { return nil }

func landlockABI() int { return 0 }

func landlockExec(readDirs, writeDirs, env []string) error {
	return errors.New("Landlock is Linux's")
}

func rss(pid int) (int64, error) { return 0, errors.New("no /proc on this system") }

func raiseOOMScore(pid, adj int) error { return nil }

const supported = false

func socketPair() ([2]int, error) { return [2]int{}, errors.New("worker processes run on Linux only") }

const seccompNote = "syscalls: seccomp filter"

func installSeccomp() error { return errors.New("seccomp is Linux's") }

func memoryEnforcement() string {
	return "memory: RSS watchdog (the job's reservation + the worker's baseline + headroom; SIGKILL past it)"
}
