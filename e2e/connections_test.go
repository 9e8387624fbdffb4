package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// TestConnections_IdleFloodWithLowFileLimit runs the binary with its open-file limit at 1024
// (soft and hard, as in issue 25's run, where idle keep-alive connections by the thousand
// exhausted the descriptors and both listeners hung). One address opens 1,500 keep-alive
// connections to the API and holds every one it gets: most are refused, the process stays well
// inside its descriptors, logs no "too many open files", and a client from another address is
// served at once.
func TestConnections_IdleFloodWithLowFileLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc and the 127.0.0.0/8 loopback network")
	}
	wrapper := filepath.Join(t.TempDir(), "convsvc-ulimit")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n 1024 || exit 1\nexec %q \"$@\"\n", binary)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	p := testproc.Serve(t, wrapper, filepath.Join(t.TempDir(), "data"))
	addr := strings.TrimPrefix(p.URL, "http://")
	fds := func() int {
		e, err := os.ReadDir("/proc/" + strconv.Itoa(p.Pid()) + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(e)
	}

	served, refused := 0, 0
	for range 1500 {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: convsvc\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		switch {
		case err != nil: // refused beyond the bounded number answered at once: closed
			refused++
		case resp.StatusCode == http.StatusServiceUnavailable:
			io.Copy(io.Discard, resp.Body)
			refused++
		default:
			io.Copy(io.Discard, resp.Body)
			if served++; served > 256 {
				t.Fatalf("%d connections from one address served and held: nothing caps them", served)
			}
		}
		c.SetDeadline(time.Time{})
	}
	open := fds()
	t.Logf("1,500 connections from 127.0.0.1: %d served and held, %d refused; the server holds %d descriptors", served, refused, open)
	if served == 0 || served > 256 {
		t.Fatalf("%d connections from one address served, want at least one and at most 256", served)
	}
	if open > 1024-256 {
		t.Fatalf("the server holds %d of its 1024 descriptors", open)
	}

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 10 * time.Second}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 10 * time.Second}
	resp, err := hc.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatalf("a client from another address: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a client from another address: status %d", resp.StatusCode)
	}
	if strings.Contains(p.Stderr(), "too many open files") {
		t.Fatal("the server ran out of file descriptors")
	}
	if !strings.Contains(p.Stderr(), "open_file_limit=1024") {
		t.Errorf("the start-up log does not show the file limit: %s", p.Stderr())
	}
}
