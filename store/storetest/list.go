package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// ListVisitor is a backend that counts what one ListJobs call reads: index entries and job
// records on bbolt, the rows its statements read on PostgreSQL (EXPLAIN ANALYZE). Each
// backend's test build provides it (an export_test.go); the case that needs it fails
// without it.
type ListVisitor interface {
	ListJobsVisits(accountID string, p store.ListParams) (int, error)
}

// toStatus moves a new job of the fixture's account to status, through the transitions a
// client and a worker make. Only one job of the store may be queued at a time (claim takes
// the oldest).
func (f *fixture) toStatus(job store.Job, status string) store.Job {
	f.t.Helper()
	var err error
	switch status {
	case store.StatusCreated:
		return job
	case store.StatusCancelled:
		job, err = f.s.CancelJob(f.acct.ID, job.ID)
	default:
		job = f.start(job)
		if status == store.StatusQueued {
			return job
		}
		if job = f.claim(); status == store.StatusRunning {
			return job
		}
		o := success(1)
		if status == store.StatusFailed {
			o = store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad input"}
		}
		job, err = f.s.FinishJob(job.ID, job.Attempt, o)
	}
	if err != nil || job.Status != status {
		f.t.Fatalf("job %s to %s: %s, %v", job.ID, status, job.Status, err)
	}
	return job
}

// waitHidden waits (up to waitBound) until reads hide the job with id: it is past its
// expires_at by the store's clock.
func (f *fixture) waitHidden(id string) {
	f.t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		_, err := f.s.Job(f.acct.ID, id)
		if errors.Is(err, store.ErrNotFound) {
			return
		} else if err != nil {
			f.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s still visible after %v", id, waitBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pages lists the account's jobs page by page and returns their ids, newest first.
func (f *fixture) pages(p store.ListParams) []string {
	f.t.Helper()
	var out []string
	for range 1000 {
		page, more, err := f.s.ListJobs(f.acct.ID, p)
		if err != nil {
			f.t.Fatalf("list %+v: %v", p, err)
		}
		if len(page) > p.Limit || (more && len(page) != p.Limit) {
			f.t.Fatalf("list %+v: %d jobs, more=%v", p, len(page), more)
		}
		for _, j := range page {
			if p.Status != "" && j.Status != p.Status {
				f.t.Fatalf("list %+v returned job %s in %s", p, j.ID, j.Status)
			}
			out = append(out, j.ID)
		}
		if !more {
			return out
		}
		p.StartingAfter = page[len(page)-1].ID
	}
	f.t.Fatalf("list %+v: more than 1000 pages", p)
	return nil
}

// testListByStatus: a status filter returns exactly the account's jobs in that status, newest
// first, page after page, however many jobs of other statuses (and of other accounts) lie
// between them; the unfiltered list interleaves the statuses in creation order.
func testListByStatus(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	other, err := f.s.CreateAccount("other", 1000)
	if err != nil {
		t.Fatal(err)
	}
	statuses := []string{store.StatusCancelled, store.StatusSucceeded, store.StatusCancelled, store.StatusFailed,
		store.StatusCreated, store.StatusCancelled, store.StatusSucceeded, store.StatusRunning, store.StatusCancelled}
	want := map[string][]string{}
	var all []string
	for i := range 45 {
		st := statuses[i%len(statuses)]
		if i == 44 {
			st = store.StatusQueued // one queued job, made last (a claim takes the oldest queued)
		}
		job := f.toStatus(f.create(1), st)
		want[st] = append([]string{job.ID}, want[st]...)
		all = append([]string{job.ID}, all...)
		if i%5 == 0 { // another account's job between them
			if _, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: other.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, limit := range []int{1, 2, 7, 100} {
		for _, st := range []string{store.StatusCreated, store.StatusQueued, store.StatusRunning,
			store.StatusSucceeded, store.StatusFailed, store.StatusCancelled, store.StatusUploaded} {
			if got := f.pages(store.ListParams{Limit: limit, Status: st}); fmt.Sprint(got) != fmt.Sprint(want[st]) {
				t.Fatalf("status %s, limit %d: %v, want %v", st, limit, got, want[st])
			}
		}
		if got := f.pages(store.ListParams{Limit: limit}); fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("unfiltered, limit %d: %v, want %v", limit, got, all)
		}
	}
	// A cursor of another status: the page continues from its place in creation order.
	after := want[store.StatusSucceeded][1]
	i := slices.Index(all, after)
	var wantAfter []string
	for _, id := range all[i+1:] {
		if slices.Contains(want[store.StatusCancelled], id) {
			wantAfter = append(wantAfter, id)
		}
	}
	if got := f.pages(store.ListParams{Limit: 3, Status: store.StatusCancelled, StartingAfter: after}); fmt.Sprint(got) != fmt.Sprint(wantAfter) {
		t.Fatalf("cancelled after a succeeded job: %v, want %v", got, wantAfter)
	}
	f.checkLedger(int64(len(want[store.StatusCreated])+len(want[store.StatusQueued])+len(want[store.StatusRunning])),
		int64(len(want[store.StatusSucceeded])))
}

// testListCostIsThePage: a page reads about what it returns, not the account's history. With
// 200 cancelled jobs and two running ones, ?status=running&limit=1 (issue 38 measured it over
// 8,000 jobs), a page after a cursor and the unfiltered first page each read a handful of
// index entries, records or rows (ListVisitor), not hundreds.
func testListCostIsThePage(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	lv, ok := f.s.(ListVisitor)
	if !ok {
		t.Fatalf("backend %T does not count what ListJobs reads (storetest.ListVisitor)", f.s)
	}
	running := []store.Job{f.toStatus(f.create(1), store.StatusRunning)}
	const history = 200
	for range history {
		f.toStatus(f.create(1), store.StatusCancelled)
	}
	running = append(running, f.toStatus(f.create(1), store.StatusRunning))
	// A page of n jobs reads the n jobs, the one after them (has_more), the cursor, and on
	// bbolt the first entry of each status's run: far below the history.
	const statuses = 7 // created, uploaded, queued, running, succeeded, failed, cancelled
	maxVisits := func(limit int) int { return 2*(limit+2) + 2*statuses }
	for _, c := range []struct {
		p     store.ListParams
		wantN int
	}{
		{store.ListParams{Limit: 1, Status: store.StatusRunning}, 1},
		{store.ListParams{Limit: 1, Status: store.StatusRunning, StartingAfter: running[1].ID}, 1},
		{store.ListParams{Limit: 5, Status: store.StatusCancelled}, 5},
		{store.ListParams{Limit: 5}, 5},
		{store.ListParams{Limit: 5, StartingAfter: running[1].ID}, 5},
		{store.ListParams{Limit: 3, Status: store.StatusFailed}, 0},
	} {
		page, _, err := f.s.ListJobs(f.acct.ID, c.p)
		if err != nil || len(page) != c.wantN {
			t.Fatalf("list %+v: %d jobs, %v; want %d", c.p, len(page), err, c.wantN)
		}
		n, err := lv.ListJobsVisits(f.acct.ID, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if n > maxVisits(c.p.Limit) {
			t.Errorf("list %+v read %d entries, records or rows for a page of %d over %d jobs; want at most %d",
				c.p, n, len(page), history+2, maxVisits(c.p.Limit))
		}
	}
}

// testListAfterExpiredCursor: a cursor whose job has expired since (swept or not) still marks
// its place: the page after it holds the account's older live jobs (none here, since the
// older ones expired first) and never the newer ones, and is not an unknown-cursor error.
func testListAfterExpiredCursor(t *testing.T, newStore NewFunc) {
	const retention = 2 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	var old []store.Job
	for _, st := range []string{store.StatusCancelled, store.StatusCreated, store.StatusCancelled} {
		old = append(old, f.toStatus(f.create(1), st))
	}
	f.waitHidden(old[2].ID)
	newer := []store.Job{f.create(1), f.create(1)}
	check := func(when string) {
		t.Helper()
		for _, c := range old {
			for _, p := range []store.ListParams{
				{Limit: 10, StartingAfter: c.ID},
				{Limit: 1, StartingAfter: c.ID, Status: store.StatusCreated},
				{Limit: 1, StartingAfter: c.ID, Status: store.StatusCancelled},
			} {
				page, more, err := f.s.ListJobs(f.acct.ID, p)
				if err != nil || len(page) != 0 || more {
					t.Fatalf("%s: list %+v: %v more=%v %v; want an empty last page", when, p, ids(page), more, err)
				}
			}
		}
		page, more, err := f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 10})
		if err != nil || fmt.Sprint(ids(page)) != fmt.Sprint([]string{newer[1].ID, newer[0].ID}) || more {
			t.Fatalf("%s: first page %v more=%v %v", when, ids(page), more, err)
		}
	}
	check("expired, not swept")
	for {
		deleted, more, err := f.s.ExpireJobs(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(deleted) == 0 && !more {
			break
		}
	}
	if ok, err := f.s.JobExists(old[1].ID); err != nil || ok {
		t.Fatalf("expired job still exists: %v %v", ok, err)
	}
	check("swept")
	// Still an error: an id that is no job's, and another account's job.
	other, err := f.s.CreateAccount("other", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"job_nosuchjob", "job_zzzzzzzz0000000000000000", newer[0].ID} {
		_, _, err := f.s.ListJobs(other.ID, store.ListParams{StartingAfter: after})
		wantErr(t, err, store.ErrNotFound, "page after "+after+" on another account")
	}
	f.checkLedger(2, 0)
}

// OpenFunc opens a store with the given retention on the one database of a test; each call
// may close the store the previous call returned (bbolt allows one at a time).
type OpenFunc func(t *testing.T, retention time.Duration) Backend

// RunCursorAcrossRetention checks, on one database opened with a long retention, then a
// short one, then a long one again (as an operator who shortened --retention for a while),
// that a page after a cursor whose job expired and was deleted continues with exactly the
// older jobs that live on, filtered or not.
func RunCursorAcrossRetention(t *testing.T, open OpenFunc) {
	const short, long = 2 * time.Second, time.Hour
	s := open(t, long)
	acct, err := s.CreateAccount("acme", 100)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, s: s, acct: acct}
	older := []store.Job{f.toStatus(f.create(1), store.StatusCancelled), f.create(1), f.toStatus(f.create(1), store.StatusCancelled)}
	f.s = open(t, short)
	gone := []store.Job{f.create(1), f.toStatus(f.create(1), store.StatusCancelled)}
	f.waitHidden(gone[1].ID)
	f.s = open(t, long)
	newest := f.create(1)
	olderIDs := []string{older[2].ID, older[1].ID, older[0].ID}
	check := func(when string) {
		t.Helper()
		for _, c := range gone {
			if got := f.pages(store.ListParams{Limit: 2, StartingAfter: c.ID}); fmt.Sprint(got) != fmt.Sprint(olderIDs) {
				t.Fatalf("%s: after %s: %v, want %v", when, c.ID, got, olderIDs)
			}
			want := []string{older[2].ID, older[0].ID}
			if got := f.pages(store.ListParams{Limit: 1, StartingAfter: c.ID, Status: store.StatusCancelled}); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: cancelled after %s: %v, want %v", when, c.ID, got, want)
			}
		}
		want := append([]string{newest.ID}, olderIDs...)
		if got := f.pages(store.ListParams{Limit: 3}); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: all: %v, want %v", when, got, want)
		}
	}
	check("expired, not swept")
	deleted, _, err := f.s.ExpireJobs(100)
	if err != nil || len(deleted) != len(gone) {
		t.Fatalf("swept %v, %v; want the %d short-lived jobs", deleted, err, len(gone))
	}
	check("swept")
	if err := f.s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}
