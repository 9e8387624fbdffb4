//go:build !linux

package testfs

import "syscall"

func mount(string, int64) error { return syscall.ENOSYS }

func unmount(string) error { return nil }
