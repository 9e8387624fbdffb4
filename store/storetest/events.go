package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// EventBackend is what the event cases need besides Backend: the account event log.
type EventBackend interface {
	EventsAfter(accountID string, after int64, jobID string, limit int) ([]store.Event, error)
	EventSeq(accountID, eventID string) (int64, bool, error)
	LastEventSeq(accountID string) (int64, error)
	WaitEvents(accountID string) (<-chan struct{}, func())
}

var eventCases = []testCase{
	{"EventLog", testEventLog},
	{"EventLogBounded", testEventLogBounded},
}

func init() { cases = append(cases, eventCases...) }

func (f *fixture) events() EventBackend {
	f.t.Helper()
	eb, ok := f.s.(EventBackend)
	if !ok {
		f.t.Fatalf("%T does not implement storetest.EventBackend", f.s)
	}
	return eb
}

func (f *fixture) eventsAfter(after int64, jobID string) []store.Event {
	f.t.Helper()
	evs, err := f.events().EventsAfter(f.acct.ID, after, jobID, 10_000)
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

// testEventLog: each state change of a job (queued, running, succeeded; cancelled for
// another) is one event of its account's log, in order, in the transaction of the change: ids
// JobEventID (the final one the webhook's), the job as the change left it, a wake-up for the
// account's waiters; resume by id, a job filter, and nothing of it for another account.
func testEventLog(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	eb := f.events()
	if seq, err := eb.LastEventSeq(f.acct.ID); err != nil || seq != 0 {
		t.Fatalf("LastEventSeq of a new account: %d, %v; want 0", seq, err)
	}
	a := f.create(10)
	b := f.create(11)
	if evs := f.eventsAfter(0, ""); len(evs) != 0 {
		t.Fatalf("created jobs made %d events, want none", len(evs))
	}
	changed, release := eb.WaitEvents(f.acct.ID)
	defer release()
	f.start(a)
	select {
	case <-changed:
	case <-time.After(waitBound):
		t.Fatal("WaitEvents did not wake at a start")
	}
	claimed := f.claim()
	if claimed.ID != a.ID {
		t.Fatalf("claimed %s, want %s", claimed.ID, a.ID)
	}
	if _, err := f.s.FinishJob(a.ID, 1, success(5)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CancelJob(f.acct.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	evs := f.eventsAfter(0, "")
	want := []struct{ id, typ, job, status string }{
		{"evt_" + a.ID + "_queued", "job.queued", a.ID, store.StatusQueued},
		{"evt_" + a.ID + "_running_1", "job.running", a.ID, store.StatusRunning},
		{store.WebhookEventID(a.ID, store.StatusSucceeded), "job.succeeded", a.ID, store.StatusSucceeded},
		{store.WebhookEventID(b.ID, store.StatusCancelled), "job.cancelled", b.ID, store.StatusCancelled},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		var job store.Job
		if err := json.Unmarshal(ev.Job, &job); err != nil {
			t.Fatalf("event %d job: %v", i, err)
		}
		if ev.ID != w.id || ev.Type != w.typ || ev.JobID != w.job || ev.AccountID != f.acct.ID || job.Status != w.status || job.ID != w.job {
			t.Fatalf("event %d: %s %s job %s (%s) account %s, want %s %s job %s (%s)", i, ev.ID, ev.Type, ev.JobID, job.Status, ev.AccountID, w.id, w.typ, w.job, w.status)
		}
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Fatalf("event %d seq %d after %d: not increasing", i, ev.Seq, evs[i-1].Seq)
		}
		if ev.CreatedAt.IsZero() || ev.CreatedAt.Location() != time.UTC {
			t.Fatalf("event %d created_at %v, want a UTC time", i, ev.CreatedAt)
		}
	}
	if last, err := eb.LastEventSeq(f.acct.ID); err != nil || last != evs[3].Seq {
		t.Fatalf("LastEventSeq %d, %v; want %d", last, err, evs[3].Seq)
	}
	seq, found, err := eb.EventSeq(f.acct.ID, want[1].id)
	if err != nil || !found || seq != evs[1].Seq {
		t.Fatalf("EventSeq(%s) = %d, %v, %v; want %d", want[1].id, seq, found, err, evs[1].Seq)
	}
	if rest := f.eventsAfter(seq, ""); len(rest) != 2 || rest[0].ID != want[2].id {
		t.Fatalf("events after %s: %+v, want the last two", want[1].id, rest)
	}
	if only := f.eventsAfter(0, b.ID); len(only) != 1 || only[0].ID != want[3].id {
		t.Fatalf("events of job %s: %+v, want its cancel alone", b.ID, only)
	}
	if _, found, err := eb.EventSeq(f.acct.ID, "evt_job_none_queued"); err != nil || found {
		t.Fatalf("EventSeq of an unknown id: found=%v err=%v", found, err)
	}
	other, err := f.s.CreateAccount("other", 10)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := eb.EventsAfter(other.ID, 0, "", 100); err != nil || len(evs) != 0 {
		t.Fatalf("another account's events: %d, %v; want none", len(evs), err)
	}
	if _, found, err := eb.EventSeq(other.ID, want[0].id); err != nil || found {
		t.Fatalf("another account finds %s: found=%v err=%v", want[0].id, found, err)
	}
}

// testEventLogBounded: the log keeps the account's last store.EventLogSize events, the oldest
// dropped in the transaction that adds one more; the newest stay in order.
func testEventLogBounded(t *testing.T, newStore NewFunc) {
	if testing.Short() {
		t.Skip("writes more than store.EventLogSize events; not in -short")
	}
	const per, batches = 400, 3
	f := newFixture(t, newStore, Options{}, per*batches)
	var ids []string
	for range batches {
		p := f.batchParams(per)
		for i := range p.Jobs {
			p.Jobs[i].SourceURL = fmt.Sprintf("https://cdn.example/%d.md", i)
		}
		_, jobs, _, err := f.batches().CreateBatch(p, batchRender)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			ids = append(ids, "evt_"+j.ID+"_queued")
		}
	}
	evs := f.eventsAfter(0, "")
	if len(evs) != store.EventLogSize {
		t.Fatalf("%d events kept, want %d", len(evs), store.EventLogSize)
	}
	kept := ids[len(ids)-store.EventLogSize:]
	for i, ev := range evs {
		if ev.ID != kept[i] {
			t.Fatalf("event %d is %s, want %s", i, ev.ID, kept[i])
		}
	}
	if _, found, err := f.events().EventSeq(f.acct.ID, ids[0]); err != nil || found {
		t.Fatalf("the oldest event is still found (%v, %v)", found, err)
	}
}
