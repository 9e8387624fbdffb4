package worker

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter a worker installs on itself: no socket but AF_UNIX (its own socket to
// the server is one, and socketpair(AF_UNIX) stays usable), and no io_uring (whose
// IORING_OP_SOCKET would make sockets past the filter). It comes in addition to the network
// namespace, which leaves an AF_INET socket nowhere to go but does not refuse one (and inside
// its own user namespace a worker could open AF_PACKET).

// seccompArch returns the audit architecture of this build's system calls, and false where
// the filter is not written for it (it reads the first argument's low 32 bits at the offset of
// a little-endian machine).
func seccompArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	}
	return 0, false
}

// Offsets in struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args[6].
const (
	seccompNr    = 0
	seccompArchO = 4
	seccompArg0  = 16 // the low 32 bits of args[0] on a little-endian machine
)

// x32Bit marks the x32 system calls on amd64, which have numbers of their own.
const x32Bit = 0x40000000

// seccompRefuse is the filter's answer to what it refuses: the call fails with EPERM.
const seccompRefuse = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)

// seccompProgram returns the filter for the architecture arch: system calls of another
// architecture (and amd64's x32 calls) are refused, socket and socketpair are allowed only
// for AF_UNIX, io_uring_setup is refused, and everything else is allowed.
func seccompProgram(arch uint32) []bpf.Instruction {
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	refuse := bpf.RetConstant{Val: seccompRefuse}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArchO, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		refuse,
		bpf.LoadAbsolute{Off: seccompNr, Size: 4},
	}
	if arch == unix.AUDIT_ARCH_X86_64 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: x32Bit, SkipTrue: 1},
			refuse,
		)
	}
	return append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipTrue: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKETPAIR, SkipTrue: 3},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_SETUP, SkipTrue: 1},
		allow,
		refuse,
		// socket or socketpair: the domain decides.
		bpf.LoadAbsolute{Off: seccompArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
		refuse,
		allow,
	)
}

// seccompNote describes the filter, for the log, /readyz and `convsvc config`.
const seccompNote = "syscalls: seccomp filter (sockets: AF_UNIX only; io_uring refused)"

// installSeccomp installs the filter on every thread of this process (TSYNC); it cannot be
// removed. It sets no_new_privs, which an unprivileged process needs for a filter.
func installSeccomp() error {
	arch, ok := seccompArch()
	if !ok {
		return fmt.Errorf("no filter written for %s", runtime.GOARCH)
	}
	raw, err := bpf.Assemble(seccompProgram(arch))
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// no_new_privs is per thread: set it on the thread that installs the filter, which TSYNC
	// then sets on the others.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	if r != 0 {
		return errors.New("seccomp: a thread could not take the filter")
	}
	return nil
}
