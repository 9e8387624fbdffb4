package worker

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// connPair returns both ends of a SOCK_SEQPACKET pair as conns, closed at cleanup.
func connPair(t *testing.T) (a, b *conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a, err = newConn(os.NewFile(uintptr(fds[0]), "a")); err != nil {
		t.Fatal(err)
	}
	if b, err = newConn(os.NewFile(uintptr(fds[1]), "b")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close(); b.close() })
	return a, b
}

// TestConn_RecvReusesItsBuffer: receiving a message allocates what the message decodes to,
// not a packet buffer of maxMessage each time (a worker sends up to 100 progress messages a
// job; a 1 MiB buffer each was 15% of the server's CPU on a 12 MP TIFF conversion). Each
// decoded reply keeps its own copy of its strings, so a later packet cannot change it.
func TestConn_RecvReusesItsBuffer(t *testing.T) {
	a, b := connPair(t)
	const n = 64
	var got []reply
	var before, after runtime.MemStats
	for i := range n + 1 {
		p := float64(i) / n
		if err := a.send(reply{Progress: &p, Confinement: []string{"message " + string(rune('A'+i%26))}}); err != nil {
			t.Fatal(err)
		}
		if i == 1 { // the first receive allocates the buffer
			runtime.ReadMemStats(&before)
		}
		var r reply
		files, err := b.recv(&r)
		if err != nil || len(files) != 0 {
			t.Fatalf("recv %d: %v, %d files", i, err, len(files))
		}
		got = append(got, r)
	}
	runtime.ReadMemStats(&after)
	if perMsg := (after.TotalAlloc - before.TotalAlloc) / n; perMsg > maxMessage/4 { // ample room for what else the process allocates meanwhile
		t.Errorf("recv allocated %d bytes per message, want far less than maxMessage (%d)", perMsg, maxMessage)
	}
	for i, r := range got {
		if want := "message " + string(rune('A'+i%26)); r.Progress == nil || *r.Progress != float64(i)/n || len(r.Confinement) != 1 || r.Confinement[0] != want {
			t.Fatalf("reply %d decoded as %+v, want progress %v and confinement [%s]", i, r, float64(i)/n, want)
		}
	}
}
