package testenv

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// HoldConnections opens n keep-alive connections from 127.0.0.1 to the listener at addr
// (host:port), has one GET of path answered on each without closing it, and returns them open
// (closed at cleanup): the address then holds n of the listener's places, as an idle client
// would. A connection that is refused (503) or closed fails the test.
func HoldConnections(t testing.TB, addr, path string, n int) []net.Conn {
	t.Helper()
	held := make([]net.Conn, 0, n)
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: held\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable || resp.Close {
			t.Fatalf("held connection %d of %d refused or closed: %d", len(held)+1, n, resp.StatusCode)
		}
		held = append(held, conn)
	}
	return held
}
