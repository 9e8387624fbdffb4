package worker

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProgram runs the filter in x/net/bpf's virtual machine over seccomp_data
// records. The machine loads words big-endian (network order) where the kernel loads them in
// the machine's order, so the records are written big-endian: the program's logic is what is
// checked here; TestPool_Confinement checks the filter in a real worker.
func TestSeccompProgram(t *testing.T) {
	for _, arch := range []uint32{unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64} {
		vm, err := bpf.NewVM(seccompProgram(arch))
		if err != nil {
			t.Fatal(err)
		}
		data := func(a uint32, nr uint32, arg0 uint32) []byte {
			b := make([]byte, 64)
			binary.BigEndian.PutUint32(b[seccompNr:], nr)
			binary.BigEndian.PutUint32(b[seccompArchO:], a)
			binary.BigEndian.PutUint32(b[seccompArg0:], arg0)
			return b
		}
		allow, refuse := int(unix.SECCOMP_RET_ALLOW), int(seccompRefuse)
		cases := []struct {
			name          string
			arch, nr, arg uint32
			want          int
		}{
			{"socket AF_UNIX", arch, unix.SYS_SOCKET, unix.AF_UNIX, allow},
			{"socket AF_INET", arch, unix.SYS_SOCKET, unix.AF_INET, refuse},
			{"socket AF_INET6", arch, unix.SYS_SOCKET, unix.AF_INET6, refuse},
			{"socket AF_PACKET", arch, unix.SYS_SOCKET, unix.AF_PACKET, refuse},
			{"socket AF_NETLINK", arch, unix.SYS_SOCKET, unix.AF_NETLINK, refuse},
			{"socketpair AF_UNIX", arch, unix.SYS_SOCKETPAIR, unix.AF_UNIX, allow},
			{"socketpair AF_INET", arch, unix.SYS_SOCKETPAIR, unix.AF_INET, refuse},
			{"io_uring_setup", arch, unix.SYS_IO_URING_SETUP, 0, refuse},
			{"read", arch, unix.SYS_READ, 0, allow},
			{"connect", arch, unix.SYS_CONNECT, 3, allow},
			{"another architecture", unix.AUDIT_ARCH_I386, 1, 0, refuse},
		}
		if arch == unix.AUDIT_ARCH_X86_64 {
			cases = append(cases, struct {
				name          string
				arch, nr, arg uint32
				want          int
			}{"x32 socket", arch, x32Bit | 41, unix.AF_INET, refuse})
		}
		for _, c := range cases {
			got, err := vm.Run(data(c.arch, c.nr, c.arg))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("arch %#x %s: %#x, want %#x", arch, c.name, got, c.want)
			}
		}
	}
}
