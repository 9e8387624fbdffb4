package worker

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysProcAttr returns how a worker is started: killed with the server (Pdeathsig), in a new
// process group, and with netns in a user and network namespace of its own, where it has no
// interface but a down loopback, so no socket it opens reaches anything.
func sysProcAttr(netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if netns {
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// landlockABI returns the kernel's Landlock ABI version, or 0 when it has none (or refuses it).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Landlock file-system rights by what a directory is for.
const (
	llRead = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llAll  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | llRead |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llWrite = llRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG
)

// libDirs hold the dynamic loader and shared libraries a dynamically linked build (the tests'
// binaries) needs to start again; a worker may read and map them.
var libDirs = []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64"}

// landlockExec limits this process to reading readDirs and reading and writing writeDirs
// (ABI 1 rights; descriptors it already holds keep working) and then runs the executable
// again with env. Landlock binds the thread that asks, and Go runs on several threads (and
// AllThreadsSyscall is refused in a binary that links purego), so the rules are set on one
// locked thread which then execs: the new image starts with that thread's domain on every
// thread it makes. It returns only on failure.
func landlockExec(readDirs, writeDirs []string, env []string) error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("the kernel has no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: llAll}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return fmt.Errorf("creating the ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, access uint64) error {
		d, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // what does not exist needs no rule
		}
		defer unix.Close(d)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(d)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("allowing %s: %w", path, errno)
		}
		return nil
	}
	if err := add(exe, unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_READ_FILE); err != nil {
		return err
	}
	for _, d := range libDirs {
		if err := add(d, llRead|unix.LANDLOCK_ACCESS_FS_EXECUTE); err != nil {
			return err
		}
	}
	for _, d := range readDirs {
		if err := add(d, llRead); err != nil {
			return err
		}
	}
	for _, d := range writeDirs {
		if err := add(d, llWrite); err != nil {
			return err
		}
	}
	runtime.LockOSThread() // never unlocked: the thread execs or the process exits
	if _, _, errno := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); errno != 0 {
		return fmt.Errorf("no_new_privs: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restricting: %w", errno)
	}
	err = syscall.Exec(exe, os.Args, env)
	// This thread is confined and the others are not: nothing sane is left to do.
	fmt.Fprintln(os.Stderr, "convsvc worker: exec after Landlock:", err)
	os.Exit(1)
	return err
}

// rss returns the resident size of process pid in bytes, from /proc/PID/statm.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("statm of %d: %q", pid, b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// raiseOOMScore makes the kernel's out-of-memory killer pick process pid before the server.
func raiseOOMScore(pid, adj int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(adj)), 0)
}

// supported reports whether process isolation runs on this system.
const supported = true

// socketPair returns a SOCK_SEQPACKET pair, closed on exec.
func socketPair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}
