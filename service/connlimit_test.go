package service_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/promtext"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// keepAlive opens a connection from local (an address on the loopback network, e.g.
// 127.0.0.2) to addr, makes one request on it and leaves it open and idle, as a keep-alive
// client does. It returns the connection and the response.
func keepAlive(t *testing.T, local, addr, path string) (net.Conn, *http.Response) {
	t.Helper()
	c := dialFrom(t, local, addr)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: convsvc\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("request from %s: %v", local, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return c, resp
}

// dialFrom opens a TCP connection from local (an address on the loopback network) to addr,
// closed at the test's cleanup.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConnections_OneAddressAtItsCapDoesNotShutOthersOut: one address holds its maximum of idle
// keep-alive connections on the API and on object storage; its next connection is answered
// 503 with Retry-After at once and closed, while a client from another address is served.
// Closing one of the held connections frees its place. Before, nothing was capped: the
// connections piled up until the process ran out of file descriptors.
func TestConnections_OneAddressAtItsCapDoesNotShutOthersOut(t *testing.T) {
	const perAddr = 8
	e := testenv.Start(t, func(c *service.Config) { c.MaxConnectionsPerAddress = perAddr })
	for _, l := range []struct{ name, addr, path string }{
		{"api", strings.TrimPrefix(e.URL, "http://"), "/healthz"},
		{"storage", strings.TrimPrefix(e.Main.BlobURL(), "http://"), "/uploads/job_x"},
	} {
		t.Run(l.name, func(t *testing.T) {
			if l.name == "storage" {
				testenv.LocalBlobsOnly(t, "the local blob listener")
			}
			var held []net.Conn
			for i := range perAddr {
				c, resp := keepAlive(t, "127.0.0.1", l.addr, l.path)
				if resp.StatusCode == http.StatusServiceUnavailable || resp.Close {
					t.Fatalf("connection %d of %d refused or closed: %d", i+1, perAddr, resp.StatusCode)
				}
				held = append(held, c)
			}
			_, resp := keepAlive(t, "127.0.0.1", l.addr, l.path)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !resp.Close {
				t.Fatalf("connection over the per-address cap: status %d, Retry-After %q, close %v; want 503 with Retry-After, closed",
					resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
			}
			if _, resp := keepAlive(t, "127.0.0.2", l.addr, l.path); resp.StatusCode == http.StatusServiceUnavailable {
				t.Fatalf("a client from another address was refused while 127.0.0.1 held its %d connections", perAddr)
			}
			// Giving one back lets the address in again (the server notices the close on its own time).
			held[0].Close()
			deadline := time.Now().Add(60 * time.Second)
			for {
				_, resp := keepAlive(t, "127.0.0.1", l.addr, l.path)
				if resp.StatusCode != http.StatusServiceUnavailable {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the address stayed refused 60 s after it closed a connection")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestConnections_ListenerCap: with every address under its own cap, the listener's cap
// still holds.
func TestConnections_ListenerCap(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.MaxConnections = 6; c.MaxConnectionsPerAddress = 2 })
	addr := strings.TrimPrefix(e.URL, "http://")
	for i := range 6 {
		if _, resp := keepAlive(t, fmt.Sprintf("127.0.0.%d", 10+i/2), addr, "/healthz"); resp.StatusCode != 200 {
			t.Fatalf("connection %d: status %d", i+1, resp.StatusCode)
		}
	}
	if _, resp := keepAlive(t, "127.0.0.20", addr, "/healthz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection over the listener's cap: status %d, want 503", resp.StatusCode)
	}
}

// TestConnections_MetricsListenerCap: the --metrics-listen listener has caps of its own, small
// ones (4 connections per address, 16 in all), with the API listener's answer: the fifth idle
// connection from one address is answered 503 too_many_connections with Retry-After and closed
// while another address is served, the seventeenth from anywhere is refused too, the API
// listener is not affected, and the refusals are counted under listener="metrics". Before, the
// metrics listener took connections without limit.
func TestConnections_MetricsListenerCap(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.MetricsListen = "127.0.0.1:0" })
	addr := strings.TrimSuffix(strings.TrimPrefix(e.Main.MetricsURL(), "http://"), "/metrics")
	var held []net.Conn
	hold := func(local string) {
		t.Helper()
		c, resp := keepAlive(t, local, addr, "/metrics")
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("connection %d (from %s): status %d, close %v; want 200, kept open", len(held)+1, local, resp.StatusCode, resp.Close)
		}
		held = append(held, c)
	}
	refused := func(local, why string) {
		t.Helper()
		_, resp := keepAlive(t, local, addr, "/metrics")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close {
			t.Fatalf("%s: status %d, Retry-After %q, close %v; want 503 with Retry-After 1, closed", why, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
		}
	}
	for range 4 {
		hold("127.0.0.1")
	}
	refused("127.0.0.1", "a fifth connection from one address")
	if _, resp := keepAlive(t, "127.0.0.1", strings.TrimPrefix(e.URL, "http://"), "/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the API refused 127.0.0.1 (%d) while it held its metrics connections", resp.StatusCode)
	}
	for _, local := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		for range 4 {
			hold(local)
		}
	}
	refused("127.0.0.5", "a seventeenth connection")

	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for more := 0; ; more++ { // more: the scrapes refused until the server saw the closes
		r := e.Do("GET", e.Main.MetricsURL(), "", nil)
		if r.Status == http.StatusOK {
			m, err := promtext.Parse(string(r.Body))
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Value("convsvc_connections_refused_total", "listener", "metrics"); got != float64(2+more) {
				t.Errorf("convsvc_connections_refused_total{listener=\"metrics\"} = %v, want %d", got, 2+more)
			}
			break
		}
		if r.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("the metrics listener answers %d after its connections closed", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
