package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// startSlow reserves, uploads and starts a conversion that takes a while, and waits until a
// worker runs it.
func startSlow(t *testing.T, e *testenv.Env) testenv.Reservation {
	t.Helper()
	data := bigPNG(t, 3000, 2000)
	res := e.Create(e.Key, "png", "gif", int64(len(data)))
	must(t, e.Upload(res.UploadURL, data), 200, "")
	must(t, e.Start(e.Key, res.Job.ID), 200, "")
	deadline := time.Now().Add(30 * time.Second)
	for e.Get(e.Key, res.Job.ID, 0).Status != "running" {
		if time.Now().After(deadline) {
			t.Fatal("job never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return res
}

// throttleAdmin spends 127.0.0.1's budget of failed admin authentications.
func throttleAdmin(t *testing.T, e *testenv.Env) {
	t.Helper()
	for i := 0; i <= 60; i++ {
		r := e.Do("GET", "/v1/admin/accounts", "not-the-admin-token", nil)
		if r.Status == 429 {
			must(t, r, 429, "rate_limited")
			return
		}
		must(t, r, 403, "unauthorized")
	}
	t.Fatal("the admin budget never ran out")
}

// throttleAddress spends what is left of 127.0.0.1's budget for requests without a valid key
// (60 a minute); afterwards every request from it without a valid key is 429 for a minute.
func throttleAddress(t *testing.T, e *testenv.Env) {
	t.Helper()
	for i := 0; i <= 60; i++ {
		r := e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil)
		if r.Status == 429 {
			must(t, r, 429, "rate_limited")
			return
		}
		must(t, r, 403, "unauthorized")
	}
	t.Fatal("the address budget never ran out")
}

func TestOps_MetricsMoveWithTraffic(t *testing.T) {
	testenv.BboltOnly(t, "bbolt's counters")
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	before := e.Scrape()
	// Traffic: a success with its download, a failure, a job left created, a cancelled running
	// conversion, a cancelled queued job, then 429s.
	png := testenv.Sample(t, "images/sample.png")
	jpeg := testenv.Sample(t, "images/sample.jpeg")
	ok := e.Convert(e.Key, "png", "jpeg", png)
	if ok.Status != "succeeded" {
		t.Fatalf("job %+v", ok)
	}
	dl := e.Do("GET", ok.Output.URL, "", nil)
	must(t, dl, 200, "")
	if bad := e.Convert(e.Key, "png", "gif", jpeg); bad.Status != "failed" {
		t.Fatalf("job %+v", bad)
	}
	e.Create(e.Key, "png", "jpeg", 10)

	slow := startSlow(t, e)
	small := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	must(t, e.Upload(small.UploadURL, png), 200, "")
	must(t, e.Start(e.Key, small.Job.ID), 200, "")
	time.Sleep(20 * time.Millisecond)
	mid := e.Scrape()
	if mid.Value("convsvc_queue_depth") != 1 || mid.Value("convsvc_queue_oldest_age_seconds") <= 0 {
		t.Errorf("queue depth %v, oldest %v s; want 1 job waiting", mid.Value("convsvc_queue_depth"), mid.Value("convsvc_queue_oldest_age_seconds"))
	}
	if mid.Value("convsvc_jobs", "status", "running") != 1 || mid.Value("convsvc_jobs", "status", "queued") != 1 ||
		mid.Value("convsvc_workers_busy") != 1 || mid.Value("convsvc_workers") != 1 {
		t.Errorf("running %v queued %v busy %v workers %v", mid.Value("convsvc_jobs", "status", "running"),
			mid.Value("convsvc_jobs", "status", "queued"), mid.Value("convsvc_workers_busy"), mid.Value("convsvc_workers"))
	}
	// Cancel the queued job first, so the freed worker finds nothing to claim.
	must(t, e.Do("POST", "/v1/jobs/"+small.Job.ID+"/cancel", e.Key, nil), 200, "")
	must(t, e.Do("POST", "/v1/jobs/"+slow.Job.ID+"/cancel", e.Key, nil), 200, "")
	deadline := time.Now().Add(30 * time.Second)
	for e.Scrape().Value("convsvc_conversions_total", "input", "png", "target", "gif", "outcome", "cancelled") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled conversion's outcome was never counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	throttleAddress(t, e)

	after := e.Scrape()
	for name, typ := range map[string]string{
		"convsvc_http_requests_total": "counter", "convsvc_http_request_duration_seconds": "histogram",
		"convsvc_http_rate_limited_total": "counter", "convsvc_jobs": "gauge", "convsvc_queue_depth": "gauge",
		"convsvc_queue_oldest_age_seconds": "gauge", "convsvc_conversions_total": "counter",
		"convsvc_conversion_duration_seconds": "histogram", "convsvc_storage_bytes_total": "counter",
		"convsvc_ledger_reserved_cents": "gauge", "convsvc_ledger_spent_month_cents": "gauge",
		"convsvc_ledger_spent_cents_total": "counter", "convsvc_accounts": "gauge", "convsvc_db_size_bytes": "gauge",
		"convsvc_bolt_read_tx_total": "counter", "convsvc_bolt_open_read_tx": "gauge",
		"convsvc_bolt_freelist_free_pages": "gauge", "convsvc_bolt_page_alloc_bytes_total": "counter",
		"convsvc_bolt_writes_total": "counter", "convsvc_workers": "gauge", "convsvc_workers_busy": "gauge",
		"convsvc_conversions_abandoned_running": "gauge", "convsvc_conversions_abandoned_overrun_seconds": "histogram",
		"convsvc_store_writes_total": "counter", "convsvc_store_write_transactions_total": "counter", "convsvc_long_polls_waiting": "gauge",
		"go_goroutines": "gauge", "process_resident_memory_bytes": "gauge", "go_build_info": "gauge",
	} {
		if got := after.Types[name]; got != typ {
			t.Errorf("%s: TYPE %q, want %q", name, got, typ)
		}
	}

	delta := func(name string, labels ...string) float64 {
		return after.Value(name, labels...) - before.Value(name, labels...)
	}
	checks := []struct {
		what      string
		got, want float64
	}{
		{"POST /v1/jobs 200", delta("convsvc_http_requests_total", "server", "api", "method", "POST", "route", "/v1/jobs", "status", "200"), 5},
		{"POST /v1/jobs/:id/cancel 200", delta("convsvc_http_requests_total", "server", "api", "route", "/v1/jobs/:id/cancel", "status", "200"), 2},
		{"GET /v1/jobs 403", delta("convsvc_http_requests_total", "route", "/v1/jobs", "method", "GET", "status", "403"), 60},
		{"GET /v1/jobs 429", delta("convsvc_http_requests_total", "route", "/v1/jobs", "method", "GET", "status", "429"), 1},
		{"PUT /uploads/:id 200", delta("convsvc_http_requests_total", "server", "storage", "method", "PUT", "route", "/uploads/:id", "status", "200"), 4},
		{"GET /outputs/:id 200", delta("convsvc_http_requests_total", "server", "storage", "method", "GET", "route", "/outputs/:id", "status", "200"), 1},
		{"POST /v1/jobs latency count", delta("convsvc_http_request_duration_seconds_count", "method", "POST", "route", "/v1/jobs"), 5},
		{"429 address", delta("convsvc_http_rate_limited_total", "budget", "address"), 1},
		{"jobs created", after.Value("convsvc_jobs", "status", "created"), 1},
		{"jobs succeeded", after.Value("convsvc_jobs", "status", "succeeded"), 1},
		{"jobs failed", after.Value("convsvc_jobs", "status", "failed"), 1},
		{"jobs cancelled", after.Value("convsvc_jobs", "status", "cancelled"), 2},
		{"jobs running", after.Value("convsvc_jobs", "status", "running"), 0},
		{"queue depth", after.Value("convsvc_queue_depth"), 0},
		{"long-polls parked", after.Value("convsvc_long_polls_waiting"), 0},
		{"oldest queued", after.Value("convsvc_queue_oldest_age_seconds"), 0},
		{"png->jpeg succeeded", delta("convsvc_conversions_total", "input", "png", "target", "jpeg", "outcome", "succeeded"), 1},
		{"png->gif conversion_failed", delta("convsvc_conversions_total", "input", "png", "target", "gif", "outcome", "conversion_failed"), 1},
		{"png->gif cancelled", delta("convsvc_conversions_total", "input", "png", "target", "gif", "outcome", "cancelled"), 1},
		{"png->jpeg duration count", delta("convsvc_conversion_duration_seconds_count", "input", "png", "target", "jpeg", "outcome", "succeeded"), 1},
		{"uploaded bytes", delta("convsvc_storage_bytes_total", "direction", "upload"), float64(2*len(png) + len(jpeg) + int(*slow.Job.InputBytes))},
		{"downloaded bytes", delta("convsvc_storage_bytes_total", "direction", "download"), float64(ok.Output.Bytes)},
		{"reserved cents", after.Value("convsvc_ledger_reserved_cents"), 1},
		{"spent this month", after.Value("convsvc_ledger_spent_month_cents"), 1},
		{"spent all time", after.Value("convsvc_ledger_spent_cents_total"), 1},
		{"accounts", after.Value("convsvc_accounts"), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if d := delta("convsvc_conversion_duration_seconds_sum", "input", "png", "target", "jpeg"); d <= 0 {
		t.Errorf("conversion duration sum moved by %v", d)
	}
	for _, name := range []string{"convsvc_bolt_read_tx_total", "convsvc_bolt_page_allocations_total", "convsvc_bolt_writes_total"} {
		if delta(name) <= 0 {
			t.Errorf("%s did not move: %v -> %v", name, before.Value(name), after.Value(name))
		}
	}
	// 5 creates, 2 cancels, starts, claims and finishes: each one store write, some sharing a
	// transaction, never more transactions than writes.
	if w, tx := delta("convsvc_store_writes_total"), delta("convsvc_store_write_transactions_total"); w < 7 || tx < 1 || tx > w {
		t.Errorf("store writes moved by %v in %v transactions; want at least 7 writes in 1..writes transactions", w, tx)
	}
	if after.Value("convsvc_db_size_bytes") <= 0 || !after.Has("go_goroutines") || !after.Has("process_cpu_seconds_total") {
		t.Error("database size or runtime/process collectors missing")
	}
	// Routes are templates: no sample names a job, account or key.
	ids := regexp.MustCompile(`(job|acct|key)_[0-9A-Za-z]`)
	for _, s := range after.Samples {
		for k, v := range s.Labels {
			if ids.MatchString(v) {
				t.Errorf("%s has an id in label %s=%q", s.Name, k, v)
			}
		}
	}
}

func TestOps_RouteLabelsOfUnknownPathsAndMethods(t *testing.T) {
	e := testenv.Start(t)
	must(t, e.Do("DELETE", "/v1/jobs/job_abc/start", e.Key, nil), 405, "method_not_allowed")
	must(t, e.Do("GET", "/v1/nope/job_abc", "", nil), 404, "not_found")
	m := e.Scrape()
	if m.Value("convsvc_http_requests_total", "method", "DELETE", "route", "/v1/jobs/:id/start", "status", "405") != 1 {
		t.Errorf("405 not labelled with its template: %v", m.Find("convsvc_http_requests_total", "status", "405"))
	}
	if m.Value("convsvc_http_requests_total", "method", "GET", "route", "unmatched", "status", "404") != 1 {
		t.Errorf("unknown path not labelled unmatched: %v", m.Find("convsvc_http_requests_total", "status", "404"))
	}
}

func TestOps_MetricsListen(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.MetricsListen = "127.0.0.1:0" })
	if strings.HasPrefix(e.Main.MetricsURL(), e.URL) {
		t.Fatalf("metrics at %s, on the API listener", e.Main.MetricsURL())
	}
	if m := e.Scrape(); !m.Has("convsvc_jobs") {
		t.Fatal("no convsvc_jobs on the metrics listener")
	}
	// Off the API listener.
	must(t, e.Do("GET", "/metrics", "", nil), 404, "not_found")
}

func TestOps_LogLinesCarryFieldsAndNoSecrets(t *testing.T) {
	testenv.LocalBlobsOnly(t, "it reads the upload from the blob store's directory")
	var logs testenv.LogCapture
	e := testenv.Start(t, logs.Option())
	_, otherKey := e.NewAccount(100)
	png := testenv.Sample(t, "images/sample.png")

	// Every kind of request and transition: success with download, failure, cancel, size
	// mismatch, idempotent replay, bad and missing keys, admin calls, unknown routes.
	res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	must(t, e.Upload(res.UploadURL, png), 200, "")
	started := e.Start(e.Key, res.Job.ID)
	must(t, started, 200, "")
	ok := e.WaitFinished(e.Key, res.Job.ID)
	must(t, e.Do("GET", ok.Output.URL, "", nil), 200, "")
	failed := e.Convert(otherKey, "png", "gif", testenv.Sample(t, "images/sample.jpeg"))
	cancelled := e.Create(e.Key, "png", "jpeg", 10)
	must(t, e.Do("POST", "/v1/jobs/"+cancelled.Job.ID+"/cancel", e.Key, nil), 200, "")
	must(t, e.Do("POST", "/v1/jobs/"+cancelled.Job.ID+"/cancel", e.Key, nil), 200, "")
	mismatch := e.Create(e.Key, "png", "jpeg", int64(len(png))+1)
	if err := os.WriteFile(filepath.Join(e.Cfg.DataDir, "blobs", "uploads", mismatch.Job.ID), png, 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, e.Start(e.Key, mismatch.Job.ID), 400, "size_mismatch")
	body := map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 7}
	must(t, e.Do("POST", "/v1/jobs", e.Key, body, "Idempotency-Key", "k1"), 200, "")
	must(t, e.Do("POST", "/v1/jobs", e.Key, body, "Idempotency-Key", "k1"), 200, "")
	must(t, e.Do("GET", "/v1/jobs?limit=5", e.Key, nil), 200, "")
	must(t, e.Do("GET", "/v1/jobs", "", nil), 401, "unauthorized")
	must(t, e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil), 403, "unauthorized")
	must(t, e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil), 200, "")
	must(t, e.Do("GET", "/v1/admin/accounts", "cs_admin_wrong", nil), 403, "unauthorized")
	must(t, e.Do("GET", "/v1/nope", "", nil), 404, "not_found")
	must(t, e.Upload(res.UploadURL+"0", png), 403, "")

	// Retention in a second service writing to the same capture: the expiry transition.
	short := testenv.Start(t, logs.Option(), func(c *service.Config) {
		c.Retention = time.Second
		c.SweepInterval = 50 * time.Millisecond
	})
	expiring := short.Create(short.Key, "png", "jpeg", 10)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), `"job_id":"`+expiring.Job.ID+`","status":"expired"`) {
		if time.Now().After(deadline) {
			t.Fatal("no expiry transition logged")
		}
		time.Sleep(20 * time.Millisecond)
	}

	text := logs.String()
	for _, secret := range []string{e.Key, otherKey, e.AdminToken, short.Key, short.AdminToken, "cs_live_", "cs_admin_"} {
		if strings.Contains(text, secret) {
			t.Errorf("the log contains a secret %.12s...", secret)
		}
	}
	if _, query, _ := strings.Cut(res.UploadURL, "?"); strings.Contains(text, query) {
		t.Error("the log contains an upload URL's query")
	}
	requests := 0
	transitions := map[string][]map[string]any{}
	for _, rec := range logs.Records() {
		line := fmt.Sprint(rec)
		for _, problem := range checkLogLine(mustJSON(t, rec)) {
			t.Errorf("%s: %s", problem, line)
		}
		switch rec["msg"] {
		case "request":
			requests++
		case "job transition":
			id, _ := rec["job_id"].(string)
			transitions[id] = append(transitions[id], rec)
		}
	}
	if requests < 25 {
		t.Errorf("%d request lines, want one per request", requests)
	}
	// The Request-Id header names a logged line with the account.
	reqID := started.Header.Get("Request-Id")
	found := false
	for _, rec := range logs.Records() {
		if rec["msg"] == "request" && rec["request_id"] == reqID {
			found = true
			if rec["account_id"] != e.AccountID || rec["route"] != "/v1/jobs/:id/start" || rec["method"] != "POST" || rec["status"] != 200.0 {
				t.Errorf("start's line %v", rec)
			}
		}
	}
	if !found {
		t.Errorf("no request line with the Request-Id %s", reqID)
	}

	want := []struct {
		id       string
		statuses string
	}{
		{res.Job.ID, "created/0 queued/0 running/1 succeeded/1"},
		{failed.ID, "created/0 queued/0 running/1 failed/1"},
		{cancelled.Job.ID, "created/0 cancelled/0"},
		{mismatch.Job.ID, "created/0 cancelled/0"},
		{expiring.Job.ID, "created/0 expired/-"},
	}
	for _, w := range want {
		var got []string
		for _, rec := range transitions[w.id] {
			attempt := "-"
			if a, ok := rec["attempt"].(float64); ok {
				attempt = strconv.Itoa(int(a))
			}
			got = append(got, fmt.Sprintf("%s/%s", rec["status"], attempt))
		}
		if strings.Join(got, " ") != w.statuses {
			t.Errorf("job %s transitions %q, want %q", w.id, strings.Join(got, " "), w.statuses)
		}
	}
	if recs := transitions[failed.ID]; len(recs) == 4 && recs[3]["error_code"] != "conversion_failed" {
		t.Errorf("failure logged without its code: %v", recs[3])
	}
	if n := len(transitions[""]); n != 0 {
		t.Errorf("%d transitions without a job id", n)
	}
}

func mustJSON(t *testing.T, rec map[string]any) string {
	t.Helper()
	// Re-encode so checkLogLine sees the line the way the sink does.
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOps_ReadyzTurns503WhileDraining(t *testing.T) {
	testenv.BboltOnly(t, "reopens the bbolt file")
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	h := e.Main.Handler()
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := ready(); code != 200 {
		t.Fatalf("before drain: %d %s", code, body)
	}
	slow := startSlow(t, e)
	// An in-flight long-poll keeps the HTTP drain going for about a second.
	waiting := e.Create(e.Key, "png", "jpeg", 10)
	polled := make(chan testenv.Response, 1)
	go func() {
		polled <- e.Do("GET", "/v1/jobs/"+waiting.Job.ID+"?wait=1", e.Key, nil)
	}()
	// Wait until the long-poll is in the server (waiting on the job), not a fixed time: on a busy
	// machine 300 ms was not always enough for it to get there (issue 24).
	inFlight := time.Now().Add(testenv.Scale(30 * time.Second))
	for e.Main.Store().Waiters() == 0 {
		if time.Now().After(inFlight) {
			t.Fatal("the long-poll never reached the server")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The drain timeout: the slow conversion holds the workers' drain this long.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- e.Main.Shutdown(ctx) }()
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for {
		code, body := ready()
		if code == 503 && strings.Contains(body, "draining") {
			select {
			case err := <-done:
				t.Fatalf("saw 503 only after Shutdown returned (%v)", err)
			default:
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness during drain: %d %s", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The listener is closed at once: new connections are refused while the drain goes on.
	if _, err := http.Get(e.URL + "/readyz"); err == nil {
		t.Error("a new connection was served during the drain")
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	took := time.Since(began)
	if r := <-polled; r.Status != 200 {
		t.Errorf("the in-flight long-poll got %d", r.Status)
	}
	// The drain timeout, or the 5 s least grace of in-flight requests, with room for a busy machine.
	if took > testenv.Scale(20*time.Second) {
		t.Errorf("drain took %v", took)
	}
	// The service stopped: the slow conversion was stopped at the drain timeout (or, on a very
	// fast machine, finished), and the database is closed.
	st, err := testenv.OpenStore(e.Cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j, err := st.Job(e.AccountID, slow.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "succeeded" && (j.Status != "failed" || j.ErrorCode != "worker_shutdown") {
		t.Fatalf("slow job after drain: %s %s", j.Status, j.ErrorCode)
	}
	t.Logf("drain took %v; the slow job ended %s %s", took.Round(time.Millisecond), j.Status, j.ErrorCode)
}

// TestOps_BackupOnPostgresIsNotImplemented: the API cannot copy a PostgreSQL database, so
// the backup answers 501 not_implemented naming pg_dump, not 500 internal_error.
func TestOps_BackupOnPostgresIsNotImplemented(t *testing.T) {
	e := testenv.Start(t, testenv.Postgres(t))
	r := e.Do("GET", "/v1/admin/backup", e.AdminToken, nil)
	must(t, r, 501, "not_implemented")
	if msg := r.Map(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "pg_dump") {
		t.Fatalf("message %q does not name pg_dump", msg)
	}
	if r.Header.Get("Request-Id") == "" {
		t.Fatal("no Request-Id")
	}
}

func TestOps_BackupAndRestore(t *testing.T) {
	testenv.BboltOnly(t, "backup is bbolt's")
	e := testenv.Start(t)
	png := testenv.Sample(t, "images/sample.png")
	done := e.Convert(e.Key, "png", "jpeg", png)
	pending := e.Create(e.Key, "png", "jpeg", 10)
	acct, key := e.NewAccount(50)
	other := e.Create(key, "png", "gif", 20)
	must(t, e.Do("POST", "/v1/jobs/"+other.Job.ID+"/cancel", key, nil), 200, "")

	must(t, e.Do("GET", "/v1/admin/backup", "", nil), 401, "unauthorized")
	must(t, e.Do("GET", "/v1/admin/backup", e.Key, nil), 403, "unauthorized")
	r := e.Do("GET", "/v1/admin/backup", e.AdminToken, nil)
	must(t, r, 200, "")
	if cd := r.Header.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename=convsvc-\d{8}-\d{6}\.db$`).MatchString(cd) {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if r.Header.Get("Content-Type") != "application/octet-stream" || r.Header.Get("Content-Length") != strconv.Itoa(len(r.Body)) {
		t.Fatalf("headers %v for %d bytes", r.Header, len(r.Body))
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}

	// The copy opens as a database with the same jobs, accounts and a balanced ledger.
	check := filepath.Join(t.TempDir(), "check.db")
	if err := os.WriteFile(check, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(check, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ acct, id, status string }{
		{e.AccountID, done.ID, "succeeded"}, {e.AccountID, pending.Job.ID, "created"}, {acct, other.Job.ID, "cancelled"},
	} {
		got, err := st.Job(j.acct, j.id)
		if err != nil || got.Status != j.status {
			t.Errorf("job %s in the backup: %v %v", j.id, got.Status, err)
		}
	}
	if accts, err := st.Accounts(); err != nil || len(accts) != 2 {
		t.Errorf("accounts in the backup: %d %v", len(accts), err)
	}
	if err := st.Check(); err != nil {
		t.Error(err)
	}
	if err := st.VerifyLedger(); err != nil {
		t.Error(err)
	}
	st.Close()

	// Restore as docs/operations.md says: the backup becomes DATA/convsvc.db of a stopped
	// service, which then starts and serves the same jobs to the same keys.
	data := filepath.Join(t.TempDir(), "restored")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, backup, filepath.Join(data, "convsvc.db"))
	restored := testenv.Start(t, func(c *service.Config) { c.DataDir = data })
	if restored.Key != "" {
		t.Error("a restored service created a new default account")
	}
	if j := restored.Get(e.Key, done.ID, 0); j.Status != "succeeded" || j.Output == nil || j.Output.SHA256 != done.Output.SHA256 {
		t.Errorf("restored job %+v", j)
	}
	if j := restored.Get(key, other.Job.ID, 0); j.Status != "cancelled" {
		t.Errorf("restored job %+v", j)
	}
	if got := restored.Account(acct)["reserved_cents"]; got != 0.0 {
		t.Errorf("restored reserved %v", got)
	}
	// The restored service keeps working: the pending job can still be uploaded and started.
	res := restored.Create(e.Key, "png", "jpeg", int64(len(png)))
	must(t, restored.Upload(res.UploadURL, png), 200, "")
	must(t, restored.Start(e.Key, res.Job.ID), 200, "")
	if j := restored.WaitFinished(e.Key, res.Job.ID); j.Status != "succeeded" {
		t.Errorf("new job on the restored service: %+v", j)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAPI_ThrottledAddressIsRateLimitedOnEveryKeyedEndpoint: once an address has spent its
// failed-authentication budget, every keyed endpoint answers its bad keys 429 with
// Retry-After, while a valid key from it goes on as if nothing happened (issue 18).
func TestAPI_ThrottledAddressIsRateLimitedOnEveryKeyedEndpoint(t *testing.T) {
	e := testenv.Start(t)
	res := e.Create(e.Key, "png", "jpeg", 10)
	throttleAddress(t, e)
	body := map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10}
	for _, ep := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/jobs", body},
		{"GET", "/v1/jobs", nil},
		{"GET", "/v1/jobs/" + res.Job.ID, nil},
		{"POST", "/v1/jobs/" + res.Job.ID + "/start", nil},
		{"POST", "/v1/jobs/" + res.Job.ID + "/cancel", nil},
	} {
		for _, token := range []string{"", store.NewKeySecret()} {
			r := e.Do(ep.method, ep.path, token, ep.body)
			must(t, r, 429, "rate_limited")
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After: %v", r.Header)
			}
		}
		if r := e.Do(ep.method, ep.path, e.Key, ep.body); r.Status == 429 {
			t.Errorf("%s %s with a valid key from the throttled address: 429", ep.method, ep.path)
		}
	}
	must(t, e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil), 200, "")
}
