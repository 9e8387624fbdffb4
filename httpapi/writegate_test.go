package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// The write gate (pgstore's key cache, migration 0024): on PostgreSQL a node that has
// authenticated a key before checks it and counts the write in the create's or start's own
// round trip. These tests hold that the API's contract is withKey's whatever the path: 403
// unauthorized for a key revoked on another node at once, 429 over the window before any
// other answer (with nothing written), exactly the limit allowed under concurrency, and one
// write counted for every other answer, failed ones included. The round trips themselves are counted by
// pgstore's TestRoundTrips_PerRequest.

// skipShort leaves these tests to the plain run: the race step (-race -short) keeps its time,
// and their Go is one request goroutine's (the concurrency they test is PostgreSQL's).
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL nodes through the API: the plain run covers it")
	}
}

// gateNode starts a node on the shared database pg with a write limit of limit a minute.
func gateNode(t *testing.T, pg func(*service.Config), limit int) *testenv.Env {
	t.Helper()
	return testenv.Start(t, pg, func(c *service.Config) { c.WriteLimit = limit })
}

// newKey makes an account with cap cents and a key on node e, returning the account, the key
// and the key's id.
func newKey(t *testing.T, e *testenv.Env, capCents int64) (accountID, key, keyID string) {
	t.Helper()
	r := e.Do("POST", "/v1/admin/accounts", e.AdminToken, map[string]any{"name": "gated", "spend_cap_cents": capCents})
	must(t, r, 200, "")
	accountID = r.Map(t)["id"].(string)
	r = e.Do("POST", "/v1/admin/accounts/"+accountID+"/keys", e.AdminToken, nil)
	must(t, r, 200, "")
	m := r.Map(t)
	return accountID, m["key"].(string), m["id"].(string)
}

var gateBody = map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10}

// remaining checks a response's status, error code and RateLimit-Remaining.
func remaining(t *testing.T, r testenv.Response, status int, code string, want int) {
	t.Helper()
	must(t, r, status, code)
	if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(want) {
		t.Fatalf("RateLimit-Remaining %q, want %d (status %d %s)", got, want, r.Status, r.Body)
	}
}

// refused429 checks a rate_limited answer's headers.
func refused429(t *testing.T, r testenv.Response, limit int) {
	t.Helper()
	must(t, r, 429, "rate_limited")
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if r.Header.Get("RateLimit-Limit") != strconv.Itoa(limit) || r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("headers %v", r.Header)
	}
}

// pgOf is node e's PostgreSQL store.
func pgOf(t *testing.T, e *testenv.Env) *pgstore.Store {
	t.Helper()
	s, ok := e.Main.JobStore().(*pgstore.Store)
	if !ok {
		t.Fatalf("node runs on %T", e.Main.JobStore())
	}
	return s
}

// cached fails the test unless node e holds key in its key cache with room in its window (so
// that its next create or start takes the gate).
func cached(t *testing.T, e *testenv.Env, key string) {
	t.Helper()
	if _, _, ok := pgOf(t, e).CachedWriteGate(key, 1, time.Minute); !ok {
		t.Fatal("the node did not keep the key: the test would not take the gate")
	}
}

// TestWriteGate_RevokedOnAnotherNodeIsRefused: node A writes with a key (so it keeps it), node B
// revokes it, and A's next create and start answer 403 unauthorized at once, creating and starting
// nothing.
func TestWriteGate_RevokedOnAnotherNodeIsRefused(t *testing.T) {
	skipShort(t)
	pg := testenv.Postgres(t)
	a, b := gateNode(t, pg, 120), gateNode(t, pg, 120)
	acct, key, keyID := newKey(t, a, 100)
	first := a.Create(key, "png", "jpeg", 10)
	must(t, a.Upload(first.UploadURL, bytes.Repeat([]byte{1}, 10)), 200, "")
	cached(t, a, key)
	remaining(t, a.Do("POST", "/v1/jobs", key, gateBody), 200, "", 118) // the gate's path
	must(t, b.Do("DELETE", "/v1/admin/keys/"+keyID, b.AdminToken, nil), 200, "")
	must(t, a.Do("POST", "/v1/jobs", key, gateBody), 403, "unauthorized")
	must(t, a.Start(key, first.Job.ID), 403, "unauthorized")
	must(t, a.Do("POST", "/v1/jobs/"+first.Job.ID+"/cancel", key, nil), 403, "unauthorized")
	must(t, a.Do("POST", "/v1/jobs", key, "{not json"), 403, "unauthorized")
	if job, err := a.Main.JobStore().Job(acct, first.Job.ID); err != nil || job.Status != store.StatusCreated {
		t.Fatalf("job after the revoked start and cancel: %+v %v", job, err)
	}
	if got := a.Account(acct)["reserved_cents"]; got != 2.0 {
		t.Fatalf("reserved_cents %v, want 2 (the revoked create made nothing)", got)
	}
}

// TestWriteGate_ExactUnderConcurrency: a key with room for limit-1 more writes, on a node that
// keeps it, sends 3*limit creates at once: exactly limit-1 are made, each told a different
// RateLimit-Remaining, and the rest are 429.
func TestWriteGate_ExactUnderConcurrency(t *testing.T) {
	skipShort(t)
	const limit, n = 8, 24
	e := gateNode(t, testenv.Postgres(t), limit)
	acct, key, _ := newKey(t, e, 1000)
	remaining(t, e.Do("POST", "/v1/jobs", key, gateBody), 200, "", limit-1)
	cached(t, e, key)
	var mu sync.Mutex
	left := map[string]int{}
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), "POST", e.URL+"/v1/jobs",
				bytes.NewReader([]byte(`{"input_format":"png","target_format":"jpeg","input_bytes":10}`)))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == 200 {
				left[resp.Header.Get("RateLimit-Remaining")]++
			}
		}()
	}
	wg.Wait()
	if statuses[200] != limit-1 || statuses[429] != n-(limit-1) {
		t.Fatalf("statuses %v, want %d made and %d refused", statuses, limit-1, n-(limit-1))
	}
	for i := 0; i < limit-1; i++ {
		if left[strconv.Itoa(i)] != 1 {
			t.Fatalf("RateLimit-Remaining of the made creates %v, want 0..%d once each", left, limit-2)
		}
	}
	if got := e.Account(acct)["reserved_cents"]; got != float64(limit) {
		t.Fatalf("reserved_cents %v, want %d", got, limit)
	}
}

// TestWriteGate_FailedWritesCount: on a node that keeps the key, a create refused by the
// transition (403 limit_reached: the cap), a start of no job (404), a malformed body (400)
// and a start whose upload differs from input_sha256 (409, which the transition leaves to the
// Go transaction) each count one write, as before the gate; the window then refuses, a
// malformed body too.
func TestWriteGate_FailedWritesCount(t *testing.T) {
	skipShort(t)
	const limit = 8
	e := gateNode(t, testenv.Postgres(t), limit)
	_, key, _ := newKey(t, e, 1)
	res := e.Do("POST", "/v1/jobs", key, `{"input_format":"png","target_format":"jpeg","input_bytes":10,"input_sha256":"`+strings.Repeat("0", 64)+`"}`)
	remaining(t, res, 200, "", 7) // the account's one cent
	var first testenv.Reservation
	res.JSON(t, &first)
	must(t, e.Upload(first.UploadURL, bytes.Repeat([]byte{1}, 10)), 200, "")
	cached(t, e, key)
	remaining(t, e.Do("POST", "/v1/jobs", key, gateBody), 403, "limit_reached", 6)
	remaining(t, e.Start(key, "job_nosuchjob"), 404, "not_found", 5)
	remaining(t, e.Do("POST", "/v1/jobs/job_nosuchjob/cancel", key, nil), 404, "not_found", 4)
	remaining(t, e.Do("POST", "/v1/jobs", key, "{not json"), 400, "invalid_request", 3)
	remaining(t, e.Start(key, first.Job.ID), 409, "checksum_mismatch", 2)                // releases the cent
	remaining(t, e.Do("POST", "/v1/jobs/"+first.Job.ID+"/cancel", key, nil), 200, "", 1) // cancelled already: as it is
	remaining(t, e.Do("POST", "/v1/jobs", key, gateBody), 200, "", 0)
	refused429(t, e.Do("POST", "/v1/jobs", key, gateBody), limit)
	refused429(t, e.Do("POST", "/v1/jobs", key, "{not json"), limit)
	refused429(t, e.Do("POST", "/v1/jobs/job_nosuchjob/cancel", key, nil), limit)
}

// TestWriteGate_FullWindowFromAnotherNodeIs429: node A keeps the key with room left in its
// window as A saw it; node B fills the window. A's next create, malformed create and start
// answer 429 with its headers, not 400, and make and start nothing.
func TestWriteGate_FullWindowFromAnotherNodeIs429(t *testing.T) {
	skipShort(t)
	const limit = 3
	pg := testenv.Postgres(t)
	a, b := gateNode(t, pg, limit), gateNode(t, pg, limit)
	acct, key, _ := newKey(t, a, 100)
	first := a.Create(key, "png", "jpeg", 10)
	must(t, a.Upload(first.UploadURL, bytes.Repeat([]byte{1}, 10)), 200, "")
	cached(t, a, key)
	remaining(t, b.Do("POST", "/v1/jobs", key, gateBody), 200, "", 1)
	remaining(t, b.Do("POST", "/v1/jobs", key, gateBody), 200, "", 0)
	refused429(t, a.Do("POST", "/v1/jobs", key, "{not json"), limit)
	refused429(t, a.Do("POST", "/v1/jobs", key, gateBody), limit)
	refused429(t, a.Start(key, first.Job.ID), limit)
	refused429(t, a.Do("POST", "/v1/jobs/"+first.Job.ID+"/cancel", key, nil), limit)
	if job, err := a.Main.JobStore().Job(acct, first.Job.ID); err != nil || job.Status != store.StatusCreated {
		t.Fatalf("job after the refused start and cancel: %+v %v", job, err)
	}
	if got := a.Account(acct)["reserved_cents"]; got != 3.0 {
		t.Fatalf("reserved_cents %v, want 3 (the refused create made nothing)", got)
	}
}
