//go:build !linux

package tests3

import "syscall"

// procAttr has nothing to add where there is no parent-death signal: Main's Stop kills the server.
func procAttr() *syscall.SysProcAttr { return nil }
