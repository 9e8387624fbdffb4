package httpapi_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// getChanged is GET /v1/jobs/{id}?wait=N&changed_from=STATUS.
func getChanged(e *testenv.Env, id string, wait int, from string) testenv.Response {
	return e.Do("GET", "/v1/jobs/"+id+"?wait="+strconv.Itoa(wait)+"&changed_from="+from, e.Key, nil)
}

// jobOf checks a 200 answer and decodes its job.
func jobOf(t *testing.T, r testenv.Response) testenv.Job {
	t.Helper()
	must(t, r, 200, "")
	var j testenv.Job
	r.JSON(t, &j)
	return j
}

// TestAPI_GetJobChangedFrom follows a job through queued and running with changed_from: each
// call returns at the next move, not only at the end as plain wait does.
func TestAPI_GetJobChangedFrom(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	must(t, e.Do("GET", "/v1/jobs/job_x?wait=5&changed_from=done", e.Key, nil), 400, "invalid_request")

	data := bigPNG(t, 6000, 4000) // converts for seconds: long enough to watch it run
	next := e.Create(e.Key, "png", "gif", int64(len(data)))
	if j := jobOf(t, getChanged(e, next.Job.ID, 0, "created")); j.Status != "created" {
		t.Fatalf("wait=0 returned %s", j.Status)
	}
	must(t, e.Upload(next.UploadURL, data), 200, "")
	busy := startSlow(t, e) // holds the only worker
	must(t, e.Start(e.Key, next.Job.ID), 200, "")
	if j := jobOf(t, getChanged(e, next.Job.ID, 0, "queued")); j.Status != "queued" && j.Status != "running" {
		t.Fatalf("wait=0 after start returned %s", j.Status)
	}

	// Freeing the worker moves the job to running, and the held request returns with it
	// (plain wait would hold on until the long conversion finished).
	got := make(chan testenv.Response, 1)
	go func() { got <- getChanged(e, next.Job.ID, 60, "queued") }()
	if r := e.Do("POST", "/v1/jobs/"+busy.Job.ID+"/cancel", e.Key, nil); r.Status != 200 && r.ErrorCode() != "invalid_state" {
		t.Fatalf("cancel the busy job: %d %s", r.Status, r.Body)
	}
	if j := jobOf(t, <-got); j.Status != "running" {
		t.Fatalf("changed_from=queued returned %s, want running", j.Status)
	}

	// While nothing moves, the wait runs out and the job comes back as it was. A job that
	// waits for its upload cannot move by itself, however fast the machine converts.
	idle := e.Create(e.Key, "png", "gif", 10)
	start := time.Now()
	if j := jobOf(t, getChanged(e, idle.Job.ID, 1, "created")); j.Status != "created" || time.Since(start) < time.Second {
		t.Fatalf("changed_from=created on a job waiting for its upload: %s after %v", j.Status, time.Since(start))
	}

	// changed_from=running returns at the next move: the cancel, or the conversion's own end
	// when a fast machine finished it first (the cancel then answers invalid_state).
	go func() { got <- getChanged(e, next.Job.ID, 60, "running") }()
	want := "cancelled"
	if r := e.Do("POST", "/v1/jobs/"+next.Job.ID+"/cancel", e.Key, nil); r.Status == 409 && r.ErrorCode() == "invalid_state" {
		want = "succeeded"
	} else {
		must(t, r, 200, "")
	}
	if j := jobOf(t, <-got); string(j.Status) != want {
		t.Fatalf("changed_from=running returned %s, want %s", j.Status, want)
	}

	// A finished job never changes again: it is answered at once, whatever changed_from says.
	start = time.Now()
	if j := jobOf(t, getChanged(e, next.Job.ID, 60, want)); string(j.Status) != want || time.Since(start) > 30*time.Second {
		t.Fatalf("changed_from on a finished job: %s after %v", j.Status, time.Since(start))
	}
}
