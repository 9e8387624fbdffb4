package worker

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCgroupLayout(t *testing.T) {
	const v1 = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/5697\n3:cpuset:/\n1:cpu:/\n0::/\n"
	cases := []struct {
		name   string
		fsType int64
		self   string
		want   string
	}{
		{"unified", unix.CGROUP2_SUPER_MAGIC, "0::/system.slice/convsvc.service\n", "v2"},
		{"v1 memory controller beside an empty unified hierarchy", unix.TMPFS_MAGIC, v1, "v1"},
		{"v1 with joined controllers", unix.TMPFS_MAGIC, "3:cpu,memory:/x\n", "v1"},
		{"v1 without a memory controller", unix.TMPFS_MAGIC, "8:pids:/\n0::/\n", ""},
		{"no cgroup file system", 0, "", ""},
	}
	for _, c := range cases {
		if got := cgroupLayout(c.fsType, c.self); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The pool says which enforces the memory cap on this host, and names the host's layout.
func TestPool_ConfinementNamesMemoryEnforcement(t *testing.T) {
	p := newPool(t, 1)
	conf := p.Confinement()
	last := conf[len(conf)-1]
	if !strings.HasPrefix(last, "memory: RSS watchdog (") {
		t.Fatalf("confinement %q, want the memory line last", conf)
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	_, v2 := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	switch {
	case v2 == nil:
		if !strings.Contains(last, "cgroup v2 here") {
			t.Errorf("on a cgroup v2 host: %q", last)
		}
	case strings.Contains(string(self), ":memory:"):
		if !strings.Contains(last, "cgroup v1 here") {
			t.Errorf("on a cgroup v1 host: %q", last)
		}
	}
}
