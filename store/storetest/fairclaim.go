package storetest

import (
	"errors"
	"testing"

	"github.com/convsvc/convsvc/store"
)

// FairBackend is what the fair-claim cases need besides Backend: the accounts' queue limits.
type FairBackend interface {
	UpdateAccountLimits(id string, l store.AccountLimits) (store.Account, error)
}

// fairCases run on every backend like the rest of the suite.
var fairCases = []testCase{
	{"ClaimFairAcrossAccounts", testClaimFair},
	{"ClaimSkipsAccountAtMaxRunning", testMaxRunning},
	{"StartOverMaxQueued", testMaxQueued},
	{"AccountLimitsInvalid", testLimitsInvalid},
}

func init() { cases = append(cases, fairCases...) }

func (f *fixture) fair() FairBackend {
	f.t.Helper()
	fb, ok := f.s.(FairBackend)
	if !ok {
		f.t.Fatalf("%T does not implement storetest.FairBackend", f.s)
	}
	return fb
}

// limit is a LimitUpdate setting n (n < 0: lifting the limit, null).
func limit(n int64) store.LimitUpdate {
	if n < 0 {
		return store.LimitUpdate{Set: true}
	}
	return store.LimitUpdate{Set: true, Value: &n}
}

// other adds a second account to the fixture's store.
func (f *fixture) other(name string) store.Account {
	f.t.Helper()
	a, err := f.s.CreateAccount(name, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// queueFor creates and starts a job of acct.
func (f *fixture) queueFor(acct store.Account) store.Job {
	f.t.Helper()
	j, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
	if err == nil {
		j, err = f.s.StartJob(acct.ID, j.ID, 1)
	}
	if err != nil {
		f.t.Fatalf("queue a job of %s: %v", acct.ID, err)
	}
	return j
}

// testClaimFair: account A queues 500 jobs, then account B starts one; B's job is one of the
// next two claimed (the accounts take turns, so only A's turn can come first), and A's jobs
// are then claimed oldest first.
func testClaimFair(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	a, b := f.acct, f.other("b")
	var aJobs []string
	for range 500 {
		aJobs = append(aJobs, f.queueFor(a).ID)
	}
	bJob := f.queueFor(b)
	var got []string
	for i := 0; i < 2 && (len(got) == 0 || got[len(got)-1] != bJob.ID); i++ {
		got = append(got, f.claim().ID)
	}
	if got[len(got)-1] != bJob.ID {
		t.Fatalf("claims after B started its job took %v, not B's %s: B waits behind A's 500", got, bJob.ID)
	}
	if len(got) == 2 && got[0] != aJobs[0] {
		t.Fatalf("A's claim took %s, want its oldest %s", got[0], aJobs[0])
	}
	rest := aJobs[len(got)-1:]
	for i, want := range rest[:3] {
		if j := f.claim(); j.ID != want {
			t.Fatalf("claim %d of A's took %s, want %s (oldest start first within an account)", i, j.ID, want)
		}
	}
	// Both accounts with queued jobs again: they alternate.
	b2, b3 := f.queueFor(b), f.queueFor(b)
	var bs int
	for range 4 {
		if j := f.claim(); j.AccountID == b.ID {
			bs++
			if j.ID != b2.ID && j.ID != b3.ID {
				t.Fatalf("claimed B's %s, want %s or %s", j.ID, b2.ID, b3.ID)
			}
		}
	}
	if bs != 2 {
		t.Fatalf("4 claims with A and B queued took %d of B's 2 jobs, want both (turns)", bs)
	}
}

// testMaxRunning: an account at max_running waits (claims skip it, another account's job is
// claimed); a finish frees its slot.
func testMaxRunning(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	a, b := f.acct, f.other("b")
	got, err := f.fair().UpdateAccountLimits(a.ID, store.AccountLimits{MaxRunning: limit(2)})
	if err != nil || got.MaxRunning == nil || *got.MaxRunning != 2 || got.MaxQueued != nil {
		t.Fatalf("UpdateAccountLimits(max_running 2) = %+v, %v", got, err)
	}
	if read, err := f.s.Account(a.ID); err != nil || read.MaxRunning == nil || *read.MaxRunning != 2 {
		t.Fatalf("Account after setting max_running 2: %+v, %v", read, err)
	}
	for range 4 {
		f.queueFor(a)
	}
	bJob := f.queueFor(b)
	running := map[string][]store.Job{}
	for range 3 {
		j := f.claim()
		running[j.AccountID] = append(running[j.AccountID], j)
	}
	if len(running[a.ID]) != 2 || len(running[b.ID]) != 1 || running[b.ID][0].ID != bJob.ID {
		t.Fatalf("3 claims took %d of A's and %d of B's jobs, want 2 (A's max_running) and 1", len(running[a.ID]), len(running[b.ID]))
	}
	if j, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim with only A's jobs queued and A at max_running 2: claimed %s (ok=%v err=%v)", j.ID, ok, err)
	}
	done := running[a.ID][0]
	if _, err := f.s.FinishJob(done.ID, done.Attempt, success(1)); err != nil {
		t.Fatal(err)
	}
	if j := f.claim(); j.AccountID != a.ID {
		t.Fatalf("claim after one of A's finished took %s of %s", j.ID, j.AccountID)
	}
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim with A at max_running again: ok=%v err=%v", ok, err)
	}
	// Lifted (null): A's last job runs beside its two.
	if got, err := f.fair().UpdateAccountLimits(a.ID, store.AccountLimits{MaxRunning: limit(-1)}); err != nil || got.MaxRunning != nil {
		t.Fatalf("lift max_running: %+v, %v", got, err)
	}
	if j := f.claim(); j.AccountID != a.ID {
		t.Fatalf("claim after lifting max_running took %s of %s", j.ID, j.AccountID)
	}
}

// testMaxQueued: a start past max_queued is ErrQueueFull and loses nothing: the job stays
// created with its reservation, and starts once a queued job was claimed.
func testMaxQueued(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	if _, err := f.fair().UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: limit(2)}); err != nil {
		t.Fatal(err)
	}
	f.queueFor(f.acct)
	f.queueFor(f.acct)
	third := f.create(1)
	_, err := f.s.StartJob(f.acct.ID, third.ID, 1)
	if !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("start of a third job with max_queued 2: %v, want ErrQueueFull", err)
	}
	if got := f.get(third.ID); got.Status != store.StatusCreated {
		t.Fatalf("refused start left the job %s, want created", got.Status)
	}
	f.checkLedger(3, 0)
	f.claim() // running jobs do not count: one queued left
	if got := f.start(third); got.Status != store.StatusQueued {
		t.Fatalf("start after a claim: %s", got.Status)
	}
	// Raising the limit makes room; lowering it below the queue refuses starts, queued jobs stay.
	if _, err := f.fair().UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: limit(1)}); err != nil {
		t.Fatal(err)
	}
	fourth := f.create(1)
	if _, err := f.s.StartJob(f.acct.ID, fourth.ID, 1); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("start with 2 queued and max_queued lowered to 1: %v, want ErrQueueFull", err)
	}
	if _, err := f.fair().UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: limit(-1)}); err != nil {
		t.Fatal(err)
	}
	f.start(fourth)
	f.checkLedger(4, 0)
	// A source_url job is queued at create, so its create is held to max_queued: refused with
	// nothing reserved while the queue is full.
	if _, err := f.fair().UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: limit(3)}); err != nil {
		t.Fatal(err)
	}
	remote := store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1, SourceURL: "https://cdn.example/a.png"}
	if _, _, err := f.s.CreateJob(remote, plainRender); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("create with source_url and 3 queued, max_queued 3: %v, want ErrQueueFull", err)
	}
	f.checkLedger(4, 0)
	f.claim()
	if j, _, err := f.s.CreateJob(remote, plainRender); err != nil || j.Status != store.StatusQueued {
		t.Fatalf("create with source_url after a claim: %+v %v", j, err)
	}
	f.checkLedger(5, 0)
}

// testLimitsInvalid: a limit of 0 or below is ErrInvalidArgument and changes nothing; an
// unknown account is ErrNotFound; a field not set stays as it is.
func testLimitsInvalid(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	fb := f.fair()
	if _, err := fb.UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxRunning: limit(3), MaxQueued: limit(10)}); err != nil {
		t.Fatal(err)
	}
	zero, negative := int64(0), int64(-5)
	for _, l := range []store.AccountLimits{
		{MaxRunning: store.LimitUpdate{Set: true, Value: &zero}},
		{MaxQueued: store.LimitUpdate{Set: true, Value: &zero}},
		{MaxRunning: store.LimitUpdate{Set: true, Value: &negative}, MaxQueued: limit(4)},
		{MaxQueued: store.LimitUpdate{Set: true, Value: &negative}},
	} {
		if _, err := fb.UpdateAccountLimits(f.acct.ID, l); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("UpdateAccountLimits(%+v): %v, want ErrInvalidArgument", l, err)
		}
	}
	got, err := f.s.Account(f.acct.ID)
	if err != nil || got.MaxRunning == nil || *got.MaxRunning != 3 || got.MaxQueued == nil || *got.MaxQueued != 10 {
		t.Fatalf("account after refused changes: %+v, %v", got, err)
	}
	if got, err := fb.UpdateAccountLimits(f.acct.ID, store.AccountLimits{MaxQueued: limit(7)}); err != nil || *got.MaxRunning != 3 || *got.MaxQueued != 7 {
		t.Fatalf("change max_queued only: %+v, %v", got, err)
	}
	if _, err := fb.UpdateAccountLimits("acct_nosuchaccount", store.AccountLimits{MaxQueued: limit(7)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("limits of an unknown account: %v, want ErrNotFound", err)
	}
}
