package worker

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupLayout names the cgroup hierarchy of this process: "v2" (one unified hierarchy, the
// file system at /sys/fs/cgroup is cgroup2), "v1" (a memory controller of the first version,
// alone or beside an empty unified hierarchy), or "" when there is none to see.
// fsType is the statfs type of /sys/fs/cgroup and self the contents of /proc/self/cgroup.
func cgroupLayout(fsType int64, self string) string {
	if fsType == unix.CGROUP2_SUPER_MAGIC {
		return "v2"
	}
	for _, line := range strings.Split(self, "\n") {
		// "4:memory:/path" in v1; "0::/path" is the unified hierarchy.
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[0] != "0" {
			for _, c := range strings.Split(f[1], ",") {
				if c == "memory" {
					return "v1"
				}
			}
		}
	}
	return ""
}

// memoryEnforcement says what enforces a worker's memory cap on this system: always the
// watchdog, and why the kernel's cgroup memory.max does not.
func memoryEnforcement() string {
	var st unix.Statfs_t
	fsType := int64(0)
	if unix.Statfs("/sys/fs/cgroup", &st) == nil {
		fsType = int64(st.Type)
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	return memoryNote(cgroupLayout(fsType, string(self)))
}

// memoryNote describes the memory cap's enforcement under a cgroup layout.
func memoryNote(layout string) string {
	const watchdog = "memory: RSS watchdog (the job's reservation + the worker's baseline + headroom; SIGKILL past it)"
	switch layout {
	case "v2":
		return watchdog + "; cgroup v2 here, but workers get no memory.max cgroup of their own yet"
	case "v1":
		return watchdog + "; cgroup v1 here: no memory.max for the workers"
	}
	return watchdog + "; no cgroup memory controller here"
}
