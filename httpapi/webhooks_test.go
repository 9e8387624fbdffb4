package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/webhook"
)

// receiver is a real HTTP server that records what it is sent; answer decides each reply.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int) int // status for the n-th request (1-based)
	notify chan struct{}
	// location is the Location of a 3xx answer.
	location string
}

type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{answer: answer, notify: make(chan struct{}, 100)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body, at: time.Now()})
		n := len(rc.got)
		rc.mu.Unlock()
		status := 204
		if rc.answer != nil {
			status = rc.answer(n)
		}
		if status >= 300 && status < 400 {
			w.Header().Set("Location", rc.location)
		}
		w.WriteHeader(status)
		select {
		case rc.notify <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// wait returns the first n requests, failing after a generous bound.
func (rc *receiver) wait(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.After(testenv.Scale(60 * time.Second))
	for {
		rc.mu.Lock()
		if len(rc.got) >= n {
			out := append([]received(nil), rc.got...)
			rc.mu.Unlock()
			return out
		}
		rc.mu.Unlock()
		select {
		case <-rc.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("receiver got %d requests, want %d", len(rc.got), n)
		}
	}
}

// startOn starts a service on backend ("bbolt", or "postgres" with a fresh database) with opts.
func startOn(t *testing.T, backend string, opts ...func(*service.Config)) *testenv.Env {
	t.Helper()
	if backend == "postgres" {
		opts = append(opts, testenv.Postgres(t))
	}
	return testenv.Start(t, opts...)
}

// fastWebhooks lets webhooks reach this machine, retries after 50 ms and pauses a
// destination found down for 50 ms.
func fastWebhooks(c *service.Config) {
	c.WebhookAllowPrivate = true
	c.WebhookPoll = 50 * time.Millisecond
	c.WebhookBackoff = func(int) time.Duration { return 50 * time.Millisecond }
	c.WebhookPause = func(int) time.Duration { return 50 * time.Millisecond }
}

type endpointView struct {
	ID           string     `json:"id"`
	URL          string     `json:"url"`
	Secret       string     `json:"secret"`
	SecretPrefix string     `json:"secret_prefix"`
	DisabledAt   *time.Time `json:"disabled_at"`
}

type deliveryView struct {
	ID             string  `json:"id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	JobID          string  `json:"job_id"`
	EndpointID     *string `json:"endpoint_id"`
	State          string  `json:"state"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
}

func addEndpoint(t *testing.T, e *testenv.Env, acct, url string) endpointView {
	t.Helper()
	r := e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, map[string]string{"url": url})
	must(t, r, 200, "")
	var ep endpointView
	r.JSON(t, &ep)
	if !strings.HasPrefix(ep.Secret, "whsec_") || ep.URL != url || !strings.HasPrefix(ep.Secret, ep.SecretPrefix) || len(ep.SecretPrefix) >= len(ep.Secret) {
		t.Fatalf("new endpoint %s", r.Body)
	}
	return ep
}

func deliveries(t *testing.T, e *testenv.Env, acct, query string) []deliveryView {
	t.Helper()
	r := e.Do("GET", "/v1/admin/accounts/"+acct+"/webhook-deliveries"+query, e.AdminToken, nil)
	must(t, r, 200, "")
	var out struct{ Data []deliveryView }
	r.JSON(t, &out)
	return out.Data
}

// waitDelivery polls the admin API until the delivery reaches state.
func waitDelivery(t *testing.T, e *testenv.Env, acct, id, state string) deliveryView {
	t.Helper()
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		for _, d := range deliveries(t, e, acct, "") {
			if d.ID == id && d.State == state {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s never %s: %+v", id, state, deliveries(t, e, acct, ""))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkEvent verifies one received request: signature over the raw body, headers, and the
// job as GET /v1/jobs/{id} shows it.
func checkEvent(t *testing.T, e *testenv.Env, key, secret string, got received, jobID, eventType string) {
	t.Helper()
	if err := webhook.Verify(secret, got.header.Get(webhook.SignatureHeader), got.body, time.Now(), webhook.DefaultTolerance); err != nil {
		t.Fatalf("signature: %v (header %q)", err, got.header.Get(webhook.SignatureHeader))
	}
	if err := webhook.Verify("whsec_wrong", got.header.Get(webhook.SignatureHeader), got.body, time.Now(), webhook.DefaultTolerance); err == nil {
		t.Fatal("a wrong secret verifies")
	}
	status := strings.TrimPrefix(eventType, "job.")
	wantID := "evt_" + jobID + "_" + status
	if got.header.Get(webhook.EventIDHeader) != wantID || got.header.Get(webhook.EventTypeHeader) != eventType ||
		got.header.Get("User-Agent") != webhook.UserAgent || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", got.header)
	}
	var ev struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			Job map[string]any `json:"job"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if ev.ID != wantID || ev.Type != eventType || ev.CreatedAt.IsZero() {
		t.Fatalf("event %s", got.body)
	}
	api := e.Do("GET", "/v1/jobs/"+jobID, key, nil).Map(t)
	if len(ev.Data.Job) != len(api) {
		t.Fatalf("event job has %d fields, GET has %d:\n%v\n%v", len(ev.Data.Job), len(api), ev.Data.Job, api)
	}
	for k, v := range api {
		if k == "output" && v != nil { // a fresh signed URL on each render
			o, eo := v.(map[string]any), ev.Data.Job[k].(map[string]any)
			if o["sha256"] != eo["sha256"] || o["bytes"] != eo["bytes"] || eo["url"] == "" {
				t.Fatalf("output %v, GET %v", eo, o)
			}
			continue
		}
		if a, b := mustJSONValue(t, v), mustJSONValue(t, ev.Data.Job[k]); a != b {
			t.Fatalf("job field %s: event %s, GET %s", k, b, a)
		}
	}
	if ev.Data.Job["status"] != status {
		t.Fatalf("event job status %v", ev.Data.Job["status"])
	}
}

func mustJSONValue(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWebhooks_AdminAPI(t *testing.T) {
	e := testenv.Start(t) // no --webhook-allow-private
	acct, key := e.NewAccount(10)
	base := "/v1/admin/accounts/" + acct
	for _, ep := range []struct{ method, path string }{
		{"POST", base + "/webhooks"}, {"GET", base + "/webhooks"}, {"DELETE", base + "/webhooks/whk_x"},
		{"POST", base + "/webhooks/whk_x/enable"}, {"POST", base + "/webhook-secret"}, {"GET", base + "/webhook-deliveries"},
	} {
		must(t, e.Do(ep.method, ep.path, "", nil), 401, "unauthorized")
		must(t, e.Do(ep.method, ep.path, key, nil), 403, "unauthorized")
	}
	// Private destinations are refused at registration, and so are other schemes and user info.
	for _, url := range []string{"http://127.0.0.1:9/hook", "http://localhost/hook", "http://10.1.2.3/", "http://169.254.169.254/latest",
		"http://[::1]/", "http://[fd00:ec2::254]/", "http://100.64.0.1/", "ftp://example.com/", "https://user:pw@example.com/", "", "not a url"} {
		r := e.Do("POST", base+"/webhooks", e.AdminToken, map[string]string{"url": url})
		must(t, r, 400, "invalid_request")
	}
	must(t, e.Do("POST", base+"/webhooks", e.AdminToken, `{}`), 400, "invalid_request")
	must(t, e.Do("POST", base+"/webhooks", e.AdminToken, `{"url":"https://example.com/","x":1}`), 400, "invalid_request")
	must(t, e.Do("POST", base+"/webhooks", e.AdminToken, `{"url":"https://example.com/"}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
	must(t, e.Do("POST", base+"/webhooks", e.AdminToken, `{"url":"`+strings.Repeat("a", 70000)+`"}`), 413, "request_too_large")
	must(t, e.Do("POST", "/v1/admin/accounts/acct_nope/webhooks", e.AdminToken, map[string]string{"url": "https://93.184.215.14/"}), 404, "not_found")
	must(t, e.Do("GET", "/v1/admin/accounts/acct_nope/webhooks", e.AdminToken, nil), 404, "not_found")
	must(t, e.Do("GET", "/v1/admin/accounts/acct_nope/webhook-deliveries", e.AdminToken, nil), 404, "not_found")
	must(t, e.Do("POST", "/v1/admin/accounts/acct_nope/webhook-secret", e.AdminToken, nil), 404, "not_found")
	must(t, e.Do("GET", base+"/webhook-deliveries?state=lost", e.AdminToken, nil), 400, "invalid_request")
	must(t, e.Do("GET", base+"/webhook-deliveries?limit=0", e.AdminToken, nil), 400, "invalid_request")

	// A public destination (example.com resolves to public addresses; offline, a literal one).
	url := "https://93.184.215.14/convsvc"
	ep := addEndpoint(t, e, acct, url)
	r := e.Do("GET", base+"/webhooks", e.AdminToken, nil)
	must(t, r, 200, "")
	if strings.Contains(string(r.Body), ep.Secret) || !strings.Contains(string(r.Body), ep.SecretPrefix) || !strings.Contains(string(r.Body), ep.ID) {
		t.Fatalf("list shows the secret or not the endpoint: %s", r.Body)
	}
	must(t, e.Do("DELETE", "/v1/admin/accounts/"+e.AccountID+"/webhooks/"+ep.ID, e.AdminToken, nil), 404, "not_found")
	must(t, e.Do("POST", "/v1/admin/accounts/"+e.AccountID+"/webhooks/"+ep.ID+"/enable", e.AdminToken, nil), 404, "not_found")
	must(t, e.Do("POST", base+"/webhooks/"+ep.ID+"/enable", e.AdminToken, nil), 200, "")
	must(t, e.Do("DELETE", base+"/webhooks/"+ep.ID, e.AdminToken, nil), 200, "")
	must(t, e.Do("DELETE", base+"/webhooks/"+ep.ID, e.AdminToken, nil), 404, "not_found")

	// webhook_url on create: checked like an endpoint's, and it needs the signing secret.
	create := func(url string) testenv.Response {
		return e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10, "webhook_url": url})
	}
	must(t, create("http://127.0.0.1:9/hook"), 400, "invalid_request")
	must(t, create(""), 400, "invalid_request")
	r = create(url)
	must(t, r, 400, "invalid_request")
	if !strings.Contains(string(r.Body), "webhook-secret") && !strings.Contains(string(r.Body), "signing secret") {
		t.Fatalf("refusal does not say what is missing: %s", r.Body)
	}
	r = e.Do("POST", base+"/webhook-secret", e.AdminToken, nil)
	must(t, r, 200, "")
	var sec struct{ Secret, SecretPrefix string }
	r.JSON(t, &sec)
	if !strings.HasPrefix(sec.Secret, "whsec_") {
		t.Fatalf("signing secret %s", r.Body)
	}
	must(t, create(url), 200, "")
	if ds := deliveries(t, e, acct, "?state=pending"); len(ds) != 0 {
		t.Fatalf("deliveries before any event: %+v", ds)
	}
}

// TestWebhooks_Delivered runs on both stores: an endpoint and a job's webhook_url each get
// the job's final event, signed, with the job as GET shows it; the admin API and /metrics
// show the deliveries.
func TestWebhooks_Delivered(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := startOn(t, backend, fastWebhooks)
			acct, key := e.NewAccount(10)
			recv := newReceiver(t, nil)
			own := newReceiver(t, nil)
			ep := addEndpoint(t, e, acct, recv.URL+"/hook")
			r := e.Do("POST", "/v1/admin/accounts/"+acct+"/webhook-secret", e.AdminToken, nil)
			must(t, r, 200, "")
			var sec struct{ Secret string }
			r.JSON(t, &sec)

			png := testenv.Sample(t, "images/sample.png")
			r = e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": len(png), "webhook_url": own.URL + "/job"})
			must(t, r, 200, "")
			var res testenv.Reservation
			r.JSON(t, &res)
			must(t, e.Upload(res.UploadURL, png), 200, "")
			must(t, e.Start(key, res.Job.ID), 200, "")
			job := e.WaitFinished(key, res.Job.ID)
			if job.Status != "succeeded" {
				t.Fatalf("job %+v", job)
			}
			got := recv.wait(t, 1)
			checkEvent(t, e, key, ep.Secret, got[0], job.ID, "job.succeeded")
			gotOwn := own.wait(t, 1)
			checkEvent(t, e, key, sec.Secret, gotOwn[0], job.ID, "job.succeeded")
			if webhook.Verify(ep.Secret, gotOwn[0].header.Get(webhook.SignatureHeader), gotOwn[0].body, time.Now(), 0) == nil {
				t.Fatal("the job's own webhook_url is signed with the endpoint's secret")
			}

			// A cancelled job: job.cancelled to the endpoint only.
			res2 := e.Create(key, "png", "jpeg", 10)
			must(t, e.Do("POST", "/v1/jobs/"+res2.Job.ID+"/cancel", key, nil), 200, "")
			got = recv.wait(t, 2)
			checkEvent(t, e, key, ep.Secret, got[1], res2.Job.ID, "job.cancelled")

			d := waitDelivery(t, e, acct, "evt_"+res2.Job.ID+"_cancelled."+ep.ID, "delivered")
			if d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 204 || d.LastError != nil || d.EndpointID == nil || *d.EndpointID != ep.ID {
				t.Fatalf("delivery %+v", d)
			}
			waitDelivery(t, e, acct, "evt_"+job.ID+"_succeeded.job", "delivered")
			waitDelivery(t, e, acct, "evt_"+job.ID+"_succeeded."+ep.ID, "delivered")
			m := e.Scrape()
			if m.Value("convsvc_webhook_deliveries", "state", "delivered") != 3 || m.Value("convsvc_webhook_deliveries", "state", "pending") != 0 ||
				m.Value("convsvc_webhook_attempts_total", "outcome", "delivered") != 3 || !m.Has("convsvc_webhook_endpoints_disabled") {
				t.Fatalf("metrics: %v", m.Find("convsvc_webhook_deliveries"))
			}
			// Exactly one request per event and destination.
			time.Sleep(testenv.Scale(300 * time.Millisecond))
			if n := len(recv.wait(t, 2)); n != 2 {
				t.Fatalf("endpoint got %d requests, want 2", n)
			}
		})
	}
}

// TestWebhooks_ReceiverDownThenBack: a receiver that fails for a while gets the event once
// it answers, with the same event id on every attempt; the failures are visible meanwhile.
func TestWebhooks_ReceiverDownThenBack(t *testing.T) {
	e := testenv.Start(t, fastWebhooks)
	acct, key := e.NewAccount(10)
	var mu sync.Mutex
	up := false
	recv := newReceiver(t, func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		if up {
			return 200
		}
		return 503
	})
	ep := addEndpoint(t, e, acct, recv.URL)
	res := e.Create(key, "png", "jpeg", 10)
	must(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", key, nil), 200, "")
	id := "evt_" + res.Job.ID + "_cancelled." + ep.ID
	recv.wait(t, 3) // failing: retried
	var d deliveryView
	for _, x := range deliveries(t, e, acct, "?state=pending") {
		if x.ID == id {
			d = x
		}
	}
	if d.ID != id || d.Attempts < 2 || d.LastError == nil || !strings.Contains(*d.LastError, "503") {
		t.Fatalf("pending delivery while the receiver is down: %+v", d)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	d = waitDelivery(t, e, acct, id, "delivered")
	got := recv.wait(t, d.Attempts)
	for _, g := range got {
		if g.header.Get(webhook.EventIDHeader) != "evt_"+res.Job.ID+"_cancelled" {
			t.Fatalf("attempt with event id %q", g.header.Get(webhook.EventIDHeader))
		}
		if err := webhook.Verify(ep.Secret, g.header.Get(webhook.SignatureHeader), g.body, time.Now(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if *d.LastStatusCode != 200 || d.LastError != nil {
		t.Fatalf("delivered %+v", d)
	}
}

// TestWebhooks_RedirectNotFollowed: a 3xx answer is a failed attempt; the Location is never
// requested.
func TestWebhooks_RedirectNotFollowed(t *testing.T) {
	e := testenv.Start(t, fastWebhooks)
	acct, key := e.NewAccount(10)
	target := newReceiver(t, nil)
	recv := newReceiver(t, func(int) int { return 302 })
	recv.location = target.URL + "/moved"
	ep := addEndpoint(t, e, acct, recv.URL)
	res := e.Create(key, "png", "jpeg", 10)
	must(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", key, nil), 200, "")
	id := "evt_" + res.Job.ID + "_cancelled." + ep.ID
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		var d deliveryView
		for _, x := range deliveries(t, e, acct, "") {
			if x.ID == id {
				d = x
			}
		}
		if d.Attempts >= 2 && d.LastStatusCode != nil {
			if *d.LastStatusCode != 302 || d.State != "pending" || d.LastError == nil || !strings.Contains(*d.LastError, "redirect not followed") {
				t.Fatalf("delivery after a redirect: %+v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second attempt: %+v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	target.mu.Lock()
	n := len(target.got)
	target.mu.Unlock()
	if n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

// TestWebhooks_TwoNodesSendEachEventOnce: two services share one PostgreSQL database; every
// recorded event wakes both dispatchers, which claim with FOR UPDATE SKIP LOCKED. A receiver
// that always answers gets each event exactly once, whichever node recorded it.
func TestWebhooks_TwoNodesSendEachEventOnce(t *testing.T) {
	a := testenv.Start(t, fastWebhooks, testenv.Postgres(t))
	b := testenv.Start(t, fastWebhooks, func(c *service.Config) {
		c.Database, c.AdminToken = a.Cfg.Database, a.Cfg.AdminToken
	})
	acct, key := a.NewAccount(100)
	recv := newReceiver(t, nil)
	ep := addEndpoint(t, a, acct, recv.URL)
	const jobs = 30
	want := map[string]bool{}
	for i := range jobs {
		e := a
		if i%2 == 1 {
			e = b // half the events are recorded by the other node
		}
		res := e.Create(key, "png", "jpeg", 10)
		must(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", key, nil), 200, "")
		want["evt_"+res.Job.ID+"_cancelled"] = true
	}
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		n := 0
		for _, d := range deliveries(t, b, acct, "?state=delivered&limit=500") {
			if d.EndpointID != nil && *d.EndpointID == ep.ID {
				n++
			}
		}
		if n == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries delivered", n, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(testenv.Scale(300 * time.Millisecond)) // a duplicate would have arrived by now
	got := recv.wait(t, jobs)
	seen := map[string]int{}
	for _, g := range got {
		id := g.header.Get(webhook.EventIDHeader)
		if !want[id] {
			t.Fatalf("event %s was not recorded", id)
		}
		seen[id]++
		if seen[id] > 1 {
			t.Fatalf("event %s sent twice", id)
		}
	}
	if len(seen) != jobs || len(got) != jobs {
		t.Fatalf("%d requests for %d events, want %d", len(got), len(seen), jobs)
	}
	ma, mb := a.Scrape(), b.Scrape()
	sa, sb := ma.Value("convsvc_webhook_attempts_total", "outcome", "delivered"), mb.Value("convsvc_webhook_attempts_total", "outcome", "delivered")
	if sa+sb != jobs {
		t.Fatalf("attempts: node a %v, node b %v, want %d in all", sa, sb, jobs)
	}
	t.Logf("node a sent %v, node b sent %v", sa, sb)
	if ma.Value("convsvc_webhook_deliveries", "state", "delivered") != jobs || mb.Value("convsvc_webhook_deliveries", "state", "delivered") != jobs {
		t.Fatal("a node's /metrics does not show every delivery of the shared database")
	}
}
