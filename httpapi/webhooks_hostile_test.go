package httpapi_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/webhook"
)

// TestWebhooks_RefusalTellsNothingOfDNS: a refused webhook_url (or endpoint url) is answered
// with one fixed message, whatever the name resolved to or however the lookup failed: neither
// the addresses nor the resolver reach the API key. The details are in the server's log.
func TestWebhooks_RefusalTellsNothingOfDNS(t *testing.T) {
	var logs testenv.LogCapture
	e := testenv.Start(t, logs.Option()) // no --webhook-allow-private
	acct, key := e.NewAccount(10)
	must(t, e.Do("POST", "/v1/admin/accounts/"+acct+"/webhook-secret", e.AdminToken, nil), 200, "")
	host, _ := net.LookupHost("vm") // a name of this machine (/etc/hosts), if it has one
	urls := []string{
		"http://no-such-name.invalid/hook", // the resolver's error names the resolver
		"http://10.1.2.3/hook",
		"http://localhost:9/hook",
	}
	if len(host) > 0 {
		urls = append(urls, "http://vm:9/hook") // resolves to this machine
	}
	want := "webhook_url: " + webhook.Refusal(webhook.ErrNotPublic) + " (an operator can allow private destinations with serve --webhook-allow-private)"
	for _, url := range urls {
		r := e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10, "webhook_url": url})
		must(t, r, 400, "invalid_request")
		var body struct{ Error struct{ Message string } }
		r.JSON(t, &body)
		if body.Error.Message != want {
			t.Errorf("refusal of %s says %q, want %q", url, body.Error.Message, want)
		}
		for _, leak := range append([]string{"lookup", ":53", "10.1.2.3", "127.0.0.1", "resolves to", "no such host"}, host...) {
			if strings.Contains(string(r.Body), leak) {
				t.Errorf("refusal of %s tells %q: %s", url, leak, r.Body)
			}
		}
		r = e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, map[string]string{"url": url})
		must(t, r, 400, "invalid_request")
		if strings.Contains(string(r.Body), "lookup") || strings.Contains(string(r.Body), "10.1.2.3") {
			t.Errorf("endpoint refusal of %s tells the details: %s", url, r.Body)
		}
	}
	// The server's log has what was refused and why.
	found := map[string]bool{}
	for _, rec := range logs.Records() {
		if rec["msg"] == "webhook destination refused" {
			u, _ := rec["url"].(string)
			errText, _ := rec["error"].(string)
			if u != "" && errText != "" && rec["request_id"] != nil {
				found[u] = true
			}
			if u == "http://10.1.2.3/hook" && !strings.Contains(errText, "10.1.2.3 is a private address") {
				t.Errorf("log of the refusal of %s: %v", u, rec)
			}
		}
	}
	for _, url := range urls {
		if !found[url] {
			t.Errorf("no log line for the refusal of %s", url)
		}
	}
}

// TestWebhooks_EscapedKeyHonoured: a create body whose webhook_url key is written with a JSON
// escape ("webhook\u005furl") is the same request as the plain key: the URL is checked and the
// job's final event is delivered to it. On both stores.
func TestWebhooks_EscapedKeyHonoured(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := startOn(t, backend, fastWebhooks)
			acct, key := e.NewAccount(10)
			must(t, e.Do("POST", "/v1/admin/accounts/"+acct+"/webhook-secret", e.AdminToken, nil), 200, "")
			own := newReceiver(t, nil)
			body := func(url string) string {
				return fmt.Sprintf(`{"input_format":"png","target_format":"jpeg","input_bytes":10,"webhook\u005furl":%q}`, url)
			}
			// Checked like the plain key: a bad scheme is refused.
			must(t, e.Do("POST", "/v1/jobs", key, body("ftp://example.com/")), 400, "invalid_request")
			r := e.Do("POST", "/v1/jobs", key, body(own.URL+"/escaped"))
			must(t, r, 200, "")
			var res testenv.Reservation
			r.JSON(t, &res)
			must(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", key, nil), 200, "")
			got := own.wait(t, 1)
			if id := got[0].header.Get(webhook.EventIDHeader); id != "evt_"+res.Job.ID+"_cancelled" {
				t.Fatalf("event %q", id)
			}
			waitDelivery(t, e, acct, "evt_"+res.Job.ID+"_cancelled.job", "delivered")
		})
	}
}

// TestWebhooks_URLRedacted: a failing destination's URL is neither logged nor kept in
// last_error with its query or its path token; both show it redacted.
func TestWebhooks_URLRedacted(t *testing.T) {
	var logs testenv.LogCapture
	e := testenv.Start(t, fastWebhooks, logs.Option())
	acct, key := e.NewAccount(10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every attempt fails with net/http naming the URL
	const token, query = "Zk3xQ9pL0wR7vT2mN8bY5cH1", "s3cr3t-query-value"
	url := "http://" + addr + "/hooks/" + token + "?token=" + query
	ep := addEndpoint(t, e, acct, url)
	res := e.Create(key, "png", "jpeg", 10)
	must(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", key, nil), 200, "")
	id := "evt_" + res.Job.ID + "_cancelled." + ep.ID
	d := waitDeliveryAttempted(t, e, acct, id)
	redacted := "http://" + addr + "/hooks/REDACTED?REDACTED"
	if !strings.Contains(*d.LastError, redacted) {
		t.Errorf("last_error %q does not name %s", *d.LastError, redacted)
	}
	r := e.Do("GET", "/v1/admin/accounts/"+acct+"/webhook-deliveries", e.AdminToken, nil)
	if strings.Contains(string(r.Body), token) || strings.Contains(string(r.Body), query) {
		t.Errorf("the deliveries list shows the token: %s", r.Body)
	}
	// The dispatcher records the attempt, then logs it: wait for the line.
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for warned := false; !warned; time.Sleep(20 * time.Millisecond) {
		for _, rec := range logs.Records() {
			if rec["msg"] == "webhook delivery failed" {
				warned = true
				if rec["url"] != redacted {
					t.Errorf("logged url %v, want %s", rec["url"], redacted)
				}
			}
		}
		if !warned && time.Now().After(deadline) {
			t.Fatal("no WARN line for the failed attempt")
		}
	}
	if all := logs.String(); strings.Contains(all, token) || strings.Contains(all, query) {
		t.Errorf("the log holds the URL's token or query")
	}
}

// waitDeliveryAttempted polls until the delivery has had an attempt recorded.
func waitDeliveryAttempted(t *testing.T, e *testenv.Env, acct, id string) deliveryView {
	t.Helper()
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		for _, d := range deliveries(t, e, acct, "") {
			if d.ID == id && d.Attempts > 0 && d.LastError != nil {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s never attempted", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holdingListener is a real loopback listener that accepts connections and never answers
// them: a webhook receiver that hangs. It counts the connections it holds.
type holdingListener struct {
	net.Listener
	accepted chan struct{}
	mu       sync.Mutex
	conns    []net.Conn
}

func newHoldingListener(t *testing.T) *holdingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &holdingListener{Listener: ln, accepted: make(chan struct{}, 1000)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			h.accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *holdingListener) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// hangingWebhooks is fastWebhooks with attempts that never time out: whatever a hanging
// receiver holds stays held for the whole test.
func hangingWebhooks(c *service.Config) {
	fastWebhooks(c)
	c.WebhookTimeout = time.Hour
}

// TestWebhooks_OneAccountCannotStallAnother (issue 38): account A has 48 events for a receiver
// that accepts and never answers; account B's event for a fast receiver still arrives while
// A's are stuck, and A's receiver holds no more connections than the per-destination cap. On
// bbolt, on PostgreSQL, and on two nodes sharing one PostgreSQL database (A's events recorded
// by both), where the cap holds across the nodes.
func TestWebhooks_OneAccountCannotStallAnother(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres", "postgres-two-nodes"} {
		t.Run(backend, func(t *testing.T) {
			db := backend
			if backend == "postgres-two-nodes" {
				db = "postgres"
			}
			envs := []*testenv.Env{startOn(t, db, hangingWebhooks)}
			if backend == "postgres-two-nodes" {
				envs = append(envs, testenv.Start(t, hangingWebhooks, func(c *service.Config) {
					c.Database, c.AdminToken = envs[0].Cfg.Database, envs[0].Cfg.AdminToken
				}))
			}
			e := envs[0]
			acctA, keyA := e.NewAccount(100)
			acctB, keyB := e.NewAccount(100)
			hang := newHoldingListener(t)
			fast := newReceiver(t, nil)
			addEndpoint(t, e, acctA, "http://"+hang.Addr().String()+"/hook")
			epB := addEndpoint(t, e, acctB, fast.URL+"/hook")

			for i := range 48 { // within the key's 120 creates and cancels a minute
				node := envs[i%len(envs)]
				res := node.Create(keyA, "png", "jpeg", 10)
				must(t, node.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", keyA, nil), 200, "")
			}
			// A's receiver holds the first attempts (without the caps: every slot).
			select {
			case <-hang.accepted:
			case <-time.After(testenv.Scale(60 * time.Second)):
				t.Fatal("A's receiver got no connection")
			}
			res := envs[len(envs)-1].Create(keyB, "png", "jpeg", 10)
			must(t, envs[len(envs)-1].Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", keyB, nil), 200, "")
			select {
			case <-fast.notify:
			case <-time.After(testenv.Scale(60 * time.Second)):
				t.Fatalf("B's event did not arrive while A's receiver holds %d connections", hang.held())
			}
			got := fast.wait(t, 1)
			if id := got[0].header.Get(webhook.EventIDHeader); id != "evt_"+res.Job.ID+"_cancelled" {
				t.Fatalf("B's receiver got %q", id)
			}
			waitDelivery(t, e, acctB, "evt_"+res.Job.ID+"_cancelled."+epB.ID, "delivered")
			// A's are still stuck: none delivered, and its receiver holds at most the cap.
			stuck := 0
			for _, d := range deliveries(t, e, acctA, "?limit=500") {
				if d.State == "delivered" {
					t.Fatalf("A's delivery %s was delivered by a receiver that never answers", d.ID)
				}
				if d.State == "pending" {
					stuck++
				}
			}
			if stuck != 48 {
				t.Fatalf("%d of A's 48 deliveries pending", stuck)
			}
			if n := hang.held(); n < 1 || n > 2 {
				t.Fatalf("A's receiver holds %d connections; the cap per destination is 2", n)
			}
		})
	}
}
