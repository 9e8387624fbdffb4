package httpapi_test

import (
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/store"
)

// TestAPI_AccountQueueLimits: max_running and max_queued in the admin API (null is no limit;
// 0, negative and non-integer limits are 400 and change nothing), and a start past
// max_queued is 429 queue_full with Retry-After, the job left as it was to start again.
func TestAPI_AccountQueueLimits(t *testing.T) {
	e := testenv.Start(t)
	r := e.Do("POST", "/v1/admin/accounts", e.AdminToken, map[string]any{"name": "t", "spend_cap_cents": 100, "max_running": 1})
	must(t, r, 200, "")
	m := r.Map(t)
	acct := m["id"].(string)
	if m["max_running"] != 1.0 || m["max_queued"] != nil {
		t.Fatalf("created account: %v", m)
	}
	for _, bad := range []any{0, -1, 1.5, "3", true} {
		must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, map[string]any{"max_queued": bad}), 400, "invalid_request")
		must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, map[string]any{"name": "renamed", "max_running": bad}), 400, "invalid_request")
	}
	if m := e.Account(acct); m["max_running"] != 1.0 || m["max_queued"] != nil || m["name"] != "t" {
		t.Fatalf("account after refused changes: %v", m)
	}
	must(t, e.Do("PATCH", "/v1/admin/accounts/acct_nope", e.AdminToken, map[string]any{"max_queued": 1}), 404, "not_found")
	r = e.Do("POST", "/v1/admin/accounts/"+acct+"/keys", e.AdminToken, nil)
	must(t, r, 200, "")
	key := r.Map(t)["key"].(string)

	// Hold the account's one running slot: a job this test claims itself (a worker that
	// takes it first fails it, as nothing was uploaded; then take another).
	st := e.Main.JobStore()
	for held := false; !held; {
		res := e.Create(key, "png", "jpeg", 10)
		if _, err := st.StartSealedJob(acct, res.Job.ID, store.Upload{Size: 10}); err != nil {
			t.Fatal(err)
		}
		for {
			j, ok, err := st.ClaimJob()
			if err != nil {
				t.Fatal(err)
			}
			if !ok || j.AccountID != acct {
				break
			}
			if j.ID == res.Job.ID {
				held = true
				t.Cleanup(func() {
					st.FinishJob(j.ID, j.Attempt, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "test"})
				})
				break
			}
		}
	}
	r = e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, map[string]any{"max_queued": 1})
	must(t, r, 200, "")
	if m := r.Map(t); m["max_running"] != 1.0 || m["max_queued"] != 1.0 {
		t.Fatalf("after setting max_queued 1: %v", m)
	}
	data := testenv.Sample(t, "images/sample.png")
	first, second := e.Create(key, "png", "jpeg", int64(len(data))), e.Create(key, "png", "jpeg", int64(len(data)))
	must(t, e.Upload(first.UploadURL, data), 200, "")
	must(t, e.Upload(second.UploadURL, data), 200, "")
	must(t, e.Start(key, first.Job.ID), 200, "") // queued: the account is at max_running
	r = e.Start(key, second.Job.ID)
	must(t, r, 429, "queue_full")
	if got := r.Header.Get("Retry-After"); got != "5" {
		t.Fatalf("queue_full Retry-After %q, want 5", got)
	}
	var j testenv.Job
	e.Do("GET", "/v1/jobs/"+second.Job.ID, key, nil).JSON(t, &j)
	if j.Status != "created" {
		t.Fatalf("refused start left the job %s", j.Status)
	}
	// Lifted: the same start is accepted.
	must(t, e.Do("PATCH", "/v1/admin/accounts/"+acct, e.AdminToken, `{"max_queued":null}`), 200, "")
	if m := e.Account(acct); m["max_queued"] != nil {
		t.Fatalf("max_queued after null: %v", m["max_queued"])
	}
	must(t, e.Start(key, second.Job.ID), 200, "")
}
