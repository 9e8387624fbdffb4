package pgstore_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// cancelOutcome is what one cancel did, with job ids replaced by the scenario's names so that
// two stores' outcomes compare.
type cancelOutcome struct {
	Err                           string
	Status, Code, Message, Reason string
	Finished, Output, Lease       bool
	Reserved, Spent               int64
	Hooked                        []string // the jobs the FinishHook was told of since the cancel before
	Deliveries                    []string // the webhook deliveries recorded since then: event type, job
	BatchFinished                 bool
}

// cancelRun is one store of its own database for cancelScenario, with its FinishHook's record.
type cancelRun struct {
	s      *pgstore.Store
	url    string
	c      *statementCounter
	mu     sync.Mutex
	hooked []string
}

func newCancelRun(t *testing.T, goTransitions bool) *cancelRun {
	r := &cancelRun{c: &statementCounter{}, url: testpg.NewDatabase(t)}
	r.s = open(t, r.url, pgstore.Options{Tracer: r.c, OnFinished: func(j store.Job) {
		r.mu.Lock()
		r.hooked = append(r.hooked, j.ID)
		r.mu.Unlock()
	}})
	if goTransitions {
		r.s.UseGoTransitions()
	}
	return r
}

// cancelScenario runs every kind of cancel on r: jobs created, queued, running, succeeded and
// failed, one cancelled twice, another account's, an unknown id, a job of an account with a
// webhook endpoint (its deliveries recorded by Go: CVWH0), and a batch's two jobs, the second
// finishing the batch (the Go transaction: CVFB0). It returns each cancel's outcome by name,
// and each cancel's statements.
func cancelScenario(t *testing.T, r *cancelRun) (map[string]cancelOutcome, map[string][]string) {
	t.Helper()
	s, ctx := r.s, context.Background()
	render := func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil }
	acct, hooks, other := account(t, s, 100), account(t, s, 100), account(t, s, 100)
	if _, err := s.CreateWebhookEndpoint(hooks.ID, "https://hooks.example/cancel", "whsec_cancelcall"); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	create := func(name string, a store.Account) store.Job {
		t.Helper()
		job, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, render)
		if err != nil {
			t.Fatal(err)
		}
		names[job.ID] = name
		return job
	}
	started := func(name string) store.Job { // queued: the only queued job until it is claimed
		t.Helper()
		job := create(name, acct)
		if _, err := s.StartJob(acct.ID, job.ID, 1); err != nil {
			t.Fatal(err)
		}
		return job
	}
	claimed := func(name string) store.Job {
		t.Helper()
		job := started(name)
		got, ok, err := s.ClaimJob()
		if err != nil || !ok || got.ID != job.ID {
			t.Fatalf("claim: %v %v %v, want %s", got.ID, ok, err, job.ID)
		}
		return got
	}
	finished := func(name string, o store.Outcome) store.Job {
		t.Helper()
		job := claimed(name)
		if _, err := s.FinishJob(job.ID, job.Attempt, o); err != nil {
			t.Fatal(err)
		}
		return job
	}
	type cancel struct {
		name      string
		accountID string
		id        string
	}
	var cancels []cancel
	add := func(name string, job store.Job) { cancels = append(cancels, cancel{name, job.AccountID, job.ID}) }
	add("created", create("created", acct))
	add("running", claimed("running"))
	add("succeeded", finished("succeeded", store.Outcome{Output: &store.Output{Bytes: 5, SHA256: strings.Repeat("a", 64)}}))
	add("failed", finished("failed", store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad input"}))
	add("queued", started("queued"))
	twice := create("twice", acct)
	add("twice", twice)
	add("twice again", twice)
	theirs := create("theirs", other)
	cancels = append(cancels, cancel{"another account's", acct.ID, theirs.ID}, cancel{"unknown", acct.ID, "job_nosuchjob"})
	add("webhook endpoint", create("webhook endpoint", hooks))
	batch, jobs, _, err := s.CreateBatch(store.CreateBatchParams{AccountID: acct.ID, Jobs: []store.CreateJobParams{
		{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
		{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
	}}, func(store.Batch, []store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
	if err != nil {
		t.Fatal(err)
	}
	names[jobs[0].ID], names[jobs[1].ID] = "batch's first", "batch's last"
	add("batch's first", jobs[0])
	add("batch's last", jobs[1])

	named := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			out = append(out, names[id])
		}
		return out
	}
	deliveries := func() []string {
		t.Helper()
		rows, err := s.Pool().Query(ctx, `SELECT event_type, job_id FROM webhook_deliveries ORDER BY created_at, id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var typ, id string
			if err := rows.Scan(&typ, &id); err != nil {
				t.Fatal(err)
			}
			out = append(out, typ+" "+names[id])
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	listener, err := pgx.Connect(ctx, r.url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, `LISTEN convsvc`); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.hooked = nil
	r.mu.Unlock()
	seen := len(deliveries())
	outcomes, statements := map[string]cancelOutcome{}, map[string][]string{}
	for _, cc := range cancels {
		var o cancelOutcome
		var returned store.Job
		statements[cc.name] = r.c.count(func() { returned, err = s.CancelJob(cc.accountID, cc.id) })
		if err != nil {
			o.Err = err.Error()
		}
		if job, err := s.Job(cc.accountID, cc.id); err == nil {
			if returned.ID != "" && !reflect.DeepEqual(returned, job) {
				t.Errorf("%s: CancelJob returned %+v, the job reads %+v", cc.name, returned, job)
			}
			o.Status, o.Code, o.Message, o.Reason = job.Status, job.ErrorCode, job.ErrorMessage, job.ErrorReason
			o.Finished, o.Output = job.FinishedAt != nil, job.Output != nil
			if err := s.Pool().QueryRow(ctx, `SELECT lease_owner IS NOT NULL FROM jobs WHERE id = $1`, cc.id).Scan(&o.Lease); err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.Account(cc.accountID)
		if err != nil {
			t.Fatal(err)
		}
		o.Reserved = a.ReservedCents
		for _, n := range a.MonthlySpend {
			o.Spent += n
		}
		r.mu.Lock()
		o.Hooked, r.hooked = named(r.hooked), nil
		r.mu.Unlock()
		all := deliveries()
		o.Deliveries, seen = all[seen:], len(all)
		b, _, err := s.Batch(acct.ID, batch.ID)
		if err != nil {
			t.Fatal(err)
		}
		o.BatchFinished = b.FinishedAt != nil
		outcomes[cc.name] = o
	}
	// The running job's cancel tells every node to stop its conversion ("c:" and the id),
	// after the commit.
	wctx, stopWait := context.WithTimeout(ctx, 30*time.Second)
	defer stopWait()
	for stop := "c:" + cancels[1].id; ; {
		n, err := listener.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("no %q notification after the running job's cancel: %v", stop, err)
		}
		if slices.Contains(strings.Split(n.Payload, ","), stop) {
			break
		}
	}
	return outcomes, statements
}

// TestCancel_FunctionAnswersAsGo: migration 0031's convsvc_cancel_job and the Go transaction
// it replaces give every kind of cancel the same answer, the same job, ledger, FinishHook
// calls, webhook deliveries and batch, each on a database of its own; the function's path is
// the one statement it should be for the plain cases, a running job's cancel notifies the
// nodes to stop it, and the answers are the contract's.
func TestCancel_FunctionAnswersAsGo(t *testing.T) {
	fn, goTx := newCancelRun(t, false), newCancelRun(t, true)
	got, statements := cancelScenario(t, fn)
	want, _ := cancelScenario(t, goTx)
	for name, w := range want {
		if g := got[name]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\nfunction       %+v\nGo transaction %+v", name, g, w)
		}
	}
	// Not the same wrong answer twice: the contract's answers.
	for name, check := range map[string]func(cancelOutcome) bool{
		"created": func(o cancelOutcome) bool {
			return o.Status == store.StatusCancelled && o.Finished && slices.Equal(o.Hooked, []string{"created"})
		},
		"running": func(o cancelOutcome) bool {
			return o.Status == store.StatusCancelled && !o.Lease && slices.Equal(o.Hooked, []string{"running"})
		},
		"succeeded": func(o cancelOutcome) bool { return o.Status == store.StatusSucceeded && o.Output && len(o.Hooked) == 0 },
		"failed":    func(o cancelOutcome) bool { return o.Status == store.StatusFailed && o.Message == "bad input" },
		"twice again": func(o cancelOutcome) bool {
			return o.Err == "" && o.Status == store.StatusCancelled && len(o.Hooked) == 0
		},
		"unknown":           func(o cancelOutcome) bool { return o.Err != "" && o.Status == "" },
		"another account's": func(o cancelOutcome) bool { return o.Err != "" && o.Status == "" },
		"webhook endpoint": func(o cancelOutcome) bool {
			return reflect.DeepEqual(o.Deliveries, []string{"job.cancelled webhook endpoint"})
		},
		"batch's first": func(o cancelOutcome) bool { return o.Status == store.StatusCancelled && !o.BatchFinished },
		"batch's last":  func(o cancelOutcome) bool { return o.Status == store.StatusCancelled && o.BatchFinished },
	} {
		if o := got[name]; !check(o) {
			t.Errorf("%s: %+v", name, o)
		}
	}
	if w := want["succeeded"].Err; !strings.Contains(w, "job already succeeded") {
		t.Errorf("a succeeded job's cancel: %q", w)
	}
	if final := got["batch's last"]; final.Reserved != 0 {
		t.Errorf("reserved %d cents after every cancel, want 0", final.Reserved)
	}
	// The plain cancels are one statement calling the function (and a take of the
	// notifications): no Go transaction behind them.
	for _, name := range []string{"created", "running", "queued", "twice", "twice again", "batch's first"} {
		if s := statements[name]; len(s) != 1 || !strings.Contains(s[0], "convsvc_cancel_job(") {
			t.Errorf("%s's cancel sent %d statements: %q", name, len(s), s)
		}
	}
}
