package service_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// holdWait opens a connection from local to addr and sends a long poll on it (a GET with
// ?wait=) as key, through a proxy that names the client in X-Forwarded-For when xff is set,
// and leaves it waiting for its answer. The connection is closed at the test's cleanup.
func holdWait(t *testing.T, local, addr, path, key, xff string) net.Conn {
	t.Helper()
	c := dialFrom(t, local, addr)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: convsvc\r\nAuthorization: Bearer %s\r\n", path, key)
	if xff != "" {
		req += "X-Forwarded-For: " + xff + "\r\n"
	}
	if _, err := fmt.Fprint(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitMetrics scrapes until done says the metrics show what the test waits for.
func waitMetrics(e *testenv.Env, done func(long, refused float64) bool) (long, refused float64) {
	for {
		m := e.Scrape()
		long, refused = m.Value("convsvc_long_polls"), m.Value("convsvc_connections_refused_total", "listener", "api")
		if done(long, refused) {
			return long, refused
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnections_TrustedProxyNotCappedPerAddress: behind a reverse proxy (--trusted-proxies
// 127.0.0.1) every client's connection comes from the proxy's address. Key A holds three
// times the per-address cap in long polls through it, and key B's create through the same
// proxy still succeeds: connections from a trusted proxy are not capped per address. Before,
// A's polls filled the proxy address's cap and B's create got 503. A peer that is not a
// trusted proxy is still capped.
func TestConnections_TrustedProxyNotCappedPerAddress(t *testing.T) {
	const perAddr = 4
	const polls = 3 * perAddr
	e := testenv.Start(t, func(c *service.Config) {
		c.MaxConnectionsPerAddress = perAddr
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	addr := strings.TrimPrefix(e.URL, "http://")
	job := e.Create(e.Key, "png", "jpeg", 100).Job.ID
	for range polls {
		holdWait(t, "127.0.0.1", addr, "/v1/jobs/"+job+"?wait=60", e.Key, "203.0.113.7")
	}
	long, refused := waitMetrics(e, func(long, refused float64) bool { return long >= polls || refused > 0 })
	if refused != 0 || long != polls {
		t.Fatalf("%v of key A's %d polls held, %v connections refused; want all held, none refused", long, polls, refused)
	}
	_, keyB := e.NewAccount(100_000)
	r := e.Do("POST", "/v1/jobs", keyB, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 100},
		"X-Forwarded-For", "198.51.100.9")
	testenv.MustStatus(t, r, 200, "")

	for i := range perAddr {
		if _, resp := keepAlive(t, "127.0.0.2", addr, "/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("untrusted peer's connection %d of %d: %d", i+1, perAddr, resp.StatusCode)
		}
	}
	if _, resp := keepAlive(t, "127.0.0.2", addr, "/healthz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("untrusted peer over the per-address cap: %d, want 503", resp.StatusCode)
	}
}

// TestLongPolls_BoundedPerKey: a key holds at most MaxWaitsPerKey long polls; one more is
// answered at once with the job as it is (status 200, not held), and another key's poll is
// still held.
func TestLongPolls_BoundedPerKey(t *testing.T) {
	const bound = 3
	e := testenv.Start(t, func(c *service.Config) { c.MaxWaitsPerKey = bound })
	addr := strings.TrimPrefix(e.URL, "http://")
	job := e.Create(e.Key, "png", "jpeg", 100).Job.ID
	for range bound {
		holdWait(t, "127.0.0.1", addr, "/v1/jobs/"+job+"?wait=60", e.Key, "")
	}
	if long, _ := waitMetrics(e, func(long, _ float64) bool { return long >= bound }); long != bound {
		t.Fatalf("%v polls held, want %d", long, bound)
	}
	// One over the bound: a 60 s poll answered well inside its 60 s (the client gives up at 45).
	req, err := http.NewRequest("GET", e.URL+"/v1/jobs/"+job+"?wait=60", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Key)
	resp, err := (&http.Client{Timeout: 45 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("the poll over the bound was held: %v", err)
	}
	defer resp.Body.Close()
	var j struct{ ID, Status string }
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != 200 || j.ID != job || j.Status != "created" {
		t.Fatalf("poll over the bound: %d %+v %v; want 200 with the job, created", resp.StatusCode, j, err)
	}
	// Another key's poll is held: the bound is per key.
	_, keyB := e.NewAccount(100_000)
	jobB := e.Create(keyB, "png", "jpeg", 100).Job.ID
	holdWait(t, "127.0.0.1", addr, "/v1/jobs/"+jobB+"?wait=60", keyB, "")
	if long, _ := waitMetrics(e, func(long, _ float64) bool { return long >= bound+1 }); long != bound+1 {
		t.Fatalf("%v polls held, want %d (key B's too)", long, bound+1)
	}
}
