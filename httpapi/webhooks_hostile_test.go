package httpapi_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testenv"
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
			opts := []func(*service.Config){fastWebhooks}
			if backend == "postgres" {
				opts = append(opts, testenv.Postgres(t))
			}
			e := testenv.Start(t, opts...)
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
	warned := false
	for _, rec := range logs.Records() {
		if rec["msg"] == "webhook delivery failed" {
			warned = true
			if rec["url"] != redacted {
				t.Errorf("logged url %v, want %s", rec["url"], redacted)
			}
		}
	}
	if !warned {
		t.Error("no WARN line for the failed attempt")
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
