// Package testfs gives tests a real file system that fills up: a small tmpfs mounted for the
// test, so writes fail with ENOSPC as on a full disk.
package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallDir mounts a tmpfs of size bytes (rounded up to whole pages by the kernel) on a new
// directory under t.TempDir, unmounted at t's cleanup, and returns the directory. Mounting
// needs privilege (root or CAP_SYS_ADMIN): when the system refuses it, the test is skipped,
// saying so, except under CI=true, where it fails.
func SmallDir(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small-fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mount(dir, size); err != nil {
		if os.Getenv("CI") == "true" || !refused(err) {
			t.Fatalf("mount a %d-byte tmpfs on %s: %v", size, dir, err)
		}
		t.Skipf("needs a full file system, and mounting a %d-byte tmpfs was refused (%v): run as root", size, err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file named name under dir until the file system is full, so that the next
// write that needs a new block fails with ENOSPC, and returns the bytes it wrote.
func Fill(t testing.TB, dir, name string) int64 {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		m, err := f.Write(buf)
		n += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOSYS)
}
