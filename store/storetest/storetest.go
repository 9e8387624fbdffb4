// Package storetest is the one conformance suite of the job store: every SPEC transition, the
// ledger, the spend cap, idempotency, paging, auth, claims and retention, written once and run
// against every backend (litestream's replica_client_test.go model, see shared/STYLE.md).
//
// A backend's tests call Run with a constructor that opens a fresh, empty store:
//
//	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Backend { ... })
//
// The suite injects no clock: the bbolt store reads the process clock and PostgreSQL its own,
// so the cases that depend on time (retention, idempotency expiry) use short durations from
// Options and poll with a generous bound. No case is skipped on any backend.
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// Backend is what the suite needs of a job store: the methods httpapi.Store uses (but Backup,
// which only the embedded store has, and with CancelJob for CancelJobWith: the write gate has
// tests of its own) and those the workers and the sweeper use.
type Backend interface {
	Authenticate(secret string) (store.APIKey, error)
	AuthenticateJob(secret, jobID string) (key store.APIKey, job store.Job, jobErr, err error)
	CreateJob(p store.CreateJobParams, render func(store.Job) (store.Response, error)) (store.Job, store.Response, error)
	Job(accountID, jobID string) (store.Job, error)
	ListJobs(accountID string, p store.ListParams) ([]store.Job, bool, error)
	StartJob(accountID, jobID string, uploadedSize int64) (store.Job, error)
	StartSealedJob(accountID, jobID string, up store.Upload) (store.Job, error)
	CancelJob(accountID, jobID string) (store.Job, error)
	WaitChange(jobID string) (<-chan struct{}, func())

	CreateAccount(name string, spendCapCents int64) (store.Account, error)
	Account(id string) (store.Account, error)
	Accounts() ([]store.Account, error)
	UpdateAccount(id string, name *string, spendCapCents *int64) (store.Account, error)
	CreateKey(accountID string) (store.APIKey, string, error)
	Keys(accountID string) ([]store.APIKey, error)
	RevokeKey(keyID string) (store.APIKey, error)

	ClaimJob() (store.Job, bool, error)
	FinishJob(jobID string, attempt int, o store.Outcome) (store.Job, error)
	ExpireJobs(limit int) (deleted []string, more bool, err error)
	PurgeIdempotencyKeys() (int, error)
	JobExists(jobID string) (bool, error)
	Unowned(ids []string) ([]string, error)
	JobUploadState(jobID string) (store.UploadState, error)
	ClosedUploads(ids []string) ([]string, error)
	RequeueJob(jobID string, attempt, maxAttempts int, reason string) (job store.Job, requeued bool, err error)
	NextExpiry() (time.Time, bool, error)
	AccountsPage(p store.PageParams) ([]store.Account, bool, error)
	KeysPage(accountID string, p store.PageParams) ([]store.APIKey, bool, error)
	EnsureDefaultAccount(spendCapCents int64) (store.Account, string, error)
	Ping() error
	Counts() (store.Counts, error)
	// VerifyLedger returns every violation of the ledger invariants the backend can find.
	VerifyLedger() error

	// The conversion cache (store/cache.go).
	OutputHeld(jobID string) (bool, error)
	DeadOutputs() ([]string, error)
	ForgetDeadOutputs(ids []string) error
	CachedOutput(key string) (store.CacheEntry, bool, error)
	DropCacheEntry(key string) error
	CacheStats() (store.CacheStats, error)
	FinishFromCache(jobID string, attempt int) (store.Job, bool, error)
}

// Options configures the store a case opens.
type Options struct {
	// Retention is how long a job lives after creation; 0 means the backend's default (24h).
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered; 0 means the default (24h).
	IdempotencyTTL time.Duration
	// OnFinished is the store's FinishHook (nil: none); the backend passes it to its Open.
	OnFinished store.FinishHook
	// Lease is how long a claim lasts without a heartbeat on a backend with leases
	// (LeaseReaper); 0 means its default. Backends without leases ignore it.
	Lease time.Duration
	// CacheMaxBytes bounds the conversion cache's outputs (0: no bound).
	CacheMaxBytes int64
	// CacheHitCents is the price of a cache hit (nil: 1 cent).
	CacheHitCents *int64
}

// NewFunc opens a fresh, empty store for t; the backend closes it at t's cleanup.
type NewFunc func(t *testing.T, o Options) Backend

// waitBound is how long a case waits for something that must happen (a notification, the
// clock passing an expiry) on a machine that may be very busy.
const waitBound = 30 * time.Second

// Run runs every case of the suite as a subtest, each on its own store.
func Run(t *testing.T, newStore NewFunc) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore)
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, newStore NewFunc)
}

// cases lists the suite; add a case here and every backend runs it.
var cases = []testCase{
	{"OutputVerified", testOutputVerified},
	{"CreateJob", testCreateJob},
	{"CreateJobInvalid", testCreateJobInvalid},
	{"StartJob", testStartJob},
	{"StartSizeMismatch", testStartSizeMismatch},
	{"StartRecordsSealedUpload", testStartSealed},
	{"StartOverCap", testStartOverCap},
	{"ClaimAndFinishSuccess", testClaimFinishSuccess},
	{"ClaimAndFinishFailure", testClaimFinishFailure},
	{"ClaimOrder", testClaimOrder},
	{"FinishStaleAttempt", testFinishStale},
	{"CancelEachState", testCancelEachState},
	{"OtherAccountHidden", testOtherAccountHidden},
	{"SpendCapExactUnderConcurrency", testSpendCapConcurrent},
	{"SpendCapCountsMonthSpend", testSpendCapMonth},
	{"Idempotency", testIdempotency},
	{"IdempotencyCommitsWithJob", testIdempotencyAtomic},
	{"IdempotencyTTL", testIdempotencyTTL},
	{"ListPaging", testListPaging},
	{"ListByStatus", testListByStatus},
	{"ListCostIsThePage", testListCostIsThePage},
	{"ListAfterExpiredCursor", testListAfterExpiredCursor},
	{"Auth", testAuth},
	{"AuthenticateJob", testAuthenticateJob},
	{"Accounts", testAccounts},
	{"EnsureDefaultAccountOnce", testEnsureDefault},
	{"ClaimsNeverDuplicate", testClaimsConcurrent},
	{"RetentionExpiry", testRetention},
	{"RequeueJob", testRequeue},
	{"UploadStateAndNextExpiry", testUploadState},
	{"NothingSucceedsAfterExpiry", testExpiryChecks},
	{"AdminListsPage", testAdminPages},
	{"WaitChange", testWaitChange},
	{"CountsAndPing", testCounts},
}

// --- helpers ---

// fixture is a store with one account and its live key.
type fixture struct {
	t      *testing.T
	s      Backend
	acct   store.Account
	secret string
}

func newFixture(t *testing.T, newStore NewFunc, o Options, capCents int64) *fixture {
	t.Helper()
	s := newStore(t, o)
	acct, err := s.CreateAccount("acme", capCents)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := s.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.VerifyLedger(); err != nil {
			t.Errorf("ledger after the case: %v", err)
		}
	})
	return &fixture{t: t, s: s, acct: acct, secret: secret}
}

func plainRender(j store.Job) (store.Response, error) {
	return store.Response{Status: 201, Body: []byte(`{"id":"` + j.ID + `"}`)}, nil
}

func (f *fixture) create(inputBytes int64) store.Job {
	f.t.Helper()
	job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: inputBytes}, plainRender)
	if err != nil {
		f.t.Fatalf("create: %v", err)
	}
	return job
}

// waitExpired waits (up to waitBound) until the job with id is past its expires_at, which a
// store reports as its upload state turning closed; retention is the case's, for the message.
func (f *fixture) waitExpired(id string, retention time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		st, err := f.s.JobUploadState(id)
		if err != nil {
			f.t.Fatal(err)
		}
		if st == store.UploadClosed {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job upload state still %v %v after a %v retention", st, waitBound, retention)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *fixture) start(job store.Job) store.Job {
	f.t.Helper()
	got, err := f.s.StartJob(f.acct.ID, job.ID, job.InputBytes)
	if err != nil {
		f.t.Fatalf("start %s: %v", job.ID, err)
	}
	return got
}

func (f *fixture) claim() store.Job {
	f.t.Helper()
	job, ok, err := f.s.ClaimJob()
	if err != nil || !ok {
		f.t.Fatalf("claim: ok=%v err=%v", ok, err)
	}
	return job
}

func (f *fixture) get(id string) store.Job {
	f.t.Helper()
	job, err := f.s.Job(f.acct.ID, id)
	if err != nil {
		f.t.Fatalf("job %s: %v", id, err)
	}
	return job
}

func success(n int64) store.Outcome {
	return store.Outcome{Output: &store.Output{Bytes: n, SHA256: fmt.Sprintf("%064x", n)}}
}

// checkLedger asserts the invariant from the outside: the account reserves one cent per
// unfinished job and each month's spend is the charges (store.Job.Charge: 1 cent, or a cache
// hit's price) of the successes finished in it, and the backend's own check agrees.
// wantReserved and wantSpent (this month's cents) are the exact values the case expects.
func (f *fixture) checkLedger(wantReserved, wantSpent int64) {
	f.t.Helper()
	acct, err := f.s.Account(f.acct.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	var unfinished int64
	successes := map[string]int64{}
	for _, job := range f.all() {
		switch job.Status {
		case store.StatusCreated, store.StatusQueued, store.StatusRunning:
			unfinished++
		case store.StatusSucceeded:
			successes[store.MonthOf(*job.FinishedAt)] += job.Charge()
		}
	}
	if acct.ReservedCents != wantReserved || unfinished != wantReserved {
		f.t.Fatalf("reserved_cents %d, unfinished jobs %d, want both %d", acct.ReservedCents, unfinished, wantReserved)
	}
	var spent, total int64
	for m, n := range acct.MonthlySpend {
		if n != successes[m] {
			f.t.Fatalf("month %s spend %d, successes %d", m, n, successes[m])
		}
		total += n
	}
	for m, n := range successes {
		if acct.MonthlySpend[m] != n {
			f.t.Fatalf("month %s: %d successes, spend %d", m, n, acct.MonthlySpend[m])
		}
	}
	spent = total
	if spent != wantSpent {
		f.t.Fatalf("spend %d (%v), want %d", spent, acct.MonthlySpend, wantSpent)
	}
	if err := f.s.VerifyLedger(); err != nil {
		f.t.Fatalf("VerifyLedger: %v", err)
	}
}

// all lists every live job of the account, newest first, through the paging API.
func (f *fixture) all() []store.Job {
	f.t.Helper()
	var out []store.Job
	after := ""
	for {
		page, more, err := f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 100, StartingAfter: after})
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		after = page[len(page)-1].ID
	}
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

func ids(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// --- cases ---

func testCreateJob(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	before := time.Now().Add(-time.Minute)
	opts := json.RawMessage(`{"quality":80}`)
	job, resp, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "webp", InputBytes: 1234, Options: opts}, plainRender)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != store.StatusCreated || job.AccountID != f.acct.ID || job.InputFormat != "png" || job.TargetFormat != "webp" ||
		job.InputBytes != 1234 || job.Attempt != 0 || job.StartedAt != nil || job.FinishedAt != nil || job.Output != nil {
		t.Fatalf("created job %+v", job)
	}
	if len(job.ID) < 8 || job.ID[:4] != "job_" {
		t.Fatalf("job id %q", job.ID)
	}
	if job.CreatedAt.Before(before) || job.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Fatalf("created_at %v is not now", job.CreatedAt)
	}
	if d := job.ExpiresAt.Sub(job.CreatedAt); d != 24*time.Hour {
		t.Fatalf("expires_at - created_at = %v, want the default retention 24h", d)
	}
	if resp.Status != 201 || string(resp.Body) != `{"id":"`+job.ID+`"}` {
		t.Fatalf("response %d %s", resp.Status, resp.Body)
	}
	got := f.get(job.ID)
	if got.ID != job.ID || got.Status != store.StatusCreated || string(got.Options) != string(opts) ||
		!got.CreatedAt.Equal(job.CreatedAt) || !got.ExpiresAt.Equal(job.ExpiresAt) || got.Seq != job.Seq {
		t.Fatalf("read back %+v, created %+v", got, job)
	}
	if state, err := f.s.JobUploadState(job.ID); err != nil || state != store.UploadOpen {
		t.Fatalf("JobUploadState = %v, %v; want open", state, err)
	}
	if ok, err := f.s.JobExists(job.ID); err != nil || !ok {
		t.Fatalf("JobExists = %v, %v", ok, err)
	}
	if ok, err := f.s.JobExists("job_nosuchjob"); err != nil || ok {
		t.Fatalf("JobExists(unknown) = %v, %v", ok, err)
	}
	if gone, err := f.s.Unowned([]string{"job_nosuchjob", job.ID, "job_another"}); err != nil || !slices.Equal(gone, []string{"job_nosuchjob", "job_another"}) {
		t.Fatalf("Unowned = %v, %v; want the two unknown ids in order", gone, err)
	}
	if gone, err := f.s.Unowned(nil); err != nil || len(gone) != 0 {
		t.Fatalf("Unowned(nil) = %v, %v", gone, err)
	}
	f.checkLedger(1, 0)
	_, err = f.s.Job(f.acct.ID, "job_nosuchjob")
	wantErr(t, err, store.ErrNotFound, "unknown job")
}

func testCreateJobInvalid(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	for _, n := range []int64{0, -1, store.MaxInputBytes + 1} {
		_, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: n}, plainRender)
		wantErr(t, err, store.ErrInvalidArgument, fmt.Sprintf("input_bytes %d", n))
	}
	_, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: "acct_nosuchaccount", InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
	wantErr(t, err, store.ErrNotFound, "unknown account")
	f.create(store.MaxInputBytes)
	f.checkLedger(1, 0)
}

func testStartJob(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	job := f.create(10)
	got := f.start(job)
	if got.Status != store.StatusQueued || got.StartedAt == nil || got.Attempt != 0 {
		t.Fatalf("started job %+v", got)
	}
	if state, err := f.s.JobUploadState(job.ID); err != nil || state != store.UploadSealed {
		t.Fatalf("JobUploadState = %v, %v; want sealed", state, err)
	}
	// Started twice: returned unchanged.
	again, err := f.s.StartJob(f.acct.ID, job.ID, 10)
	if err != nil || again.Status != store.StatusQueued || !again.StartedAt.Equal(*got.StartedAt) {
		t.Fatalf("second start = %+v, %v", again, err)
	}
	f.checkLedger(1, 0)
	_, err = f.s.StartJob(f.acct.ID, "job_nosuchjob", 10)
	wantErr(t, err, store.ErrNotFound, "start unknown job")
}

func testStartSizeMismatch(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	for _, size := range []int64{9, 11, 0} {
		job := f.create(10)
		got, err := f.s.StartJob(f.acct.ID, job.ID, size)
		wantErr(t, err, store.ErrSizeMismatch, "start with the wrong size")
		if got.ID != job.ID || got.Status != store.StatusCancelled || got.FinishedAt == nil {
			t.Fatalf("after a size mismatch the job is %+v, want cancelled", got)
		}
		if read := f.get(job.ID); read.Status != store.StatusCancelled {
			t.Fatalf("read back %s", read.Status)
		}
		// The cancelled job stays cancelled when started again with the right size.
		again, err := f.s.StartJob(f.acct.ID, job.ID, 10)
		if err != nil || again.Status != store.StatusCancelled {
			t.Fatalf("start after mismatch = %s, %v", again.Status, err)
		}
	}
	f.checkLedger(0, 0)
}

func testStartOverCap(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 2)
	a, b := f.create(1), f.create(1)
	one := int64(1)
	if _, err := f.s.UpdateAccount(f.acct.ID, nil, &one); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.StartJob(f.acct.ID, a.ID, 1)
	wantErr(t, err, store.ErrLimitReached, "start with 2 reserved under a cap of 1")
	if got := f.get(a.ID); got.Status != store.StatusCreated {
		t.Fatalf("refused start left the job %s", got.Status)
	}
	if _, err := f.s.CancelJob(f.acct.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.start(a); got.Status != store.StatusQueued {
		t.Fatalf("start within the cap: %s", got.Status)
	}
	f.checkLedger(1, 0)
}

func testClaimFinishSuccess(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim on an empty queue: ok=%v err=%v", ok, err)
	}
	job := f.create(10)
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim with only a created job: ok=%v err=%v", ok, err)
	}
	f.start(job)
	claimed := f.claim()
	if claimed.ID != job.ID || claimed.Status != store.StatusRunning || claimed.Attempt != 1 {
		t.Fatalf("claimed %+v", claimed)
	}
	if got := f.get(job.ID); got.Status != store.StatusRunning || got.Attempt != 1 {
		t.Fatalf("read back %s attempt %d", got.Status, got.Attempt)
	}
	f.checkLedger(1, 0)
	_, err := f.s.FinishJob(job.ID, 1, store.Outcome{})
	wantErr(t, err, store.ErrInvalidArgument, "success without output")
	// The output's warnings are kept in order, messages byte for byte.
	warnings := []store.Warning{
		{Code: "sheets_dropped", Message: "sheets \"Costs\", Notes were not converted"},
		{Code: "metadata_dropped", Message: "EXIF metadata (camera, GPS) was not kept: é\x00"},
	}
	outcome := success(42)
	outcome.Output.Warnings = warnings
	done, err := f.s.FinishJob(job.ID, 1, outcome)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.StatusSucceeded || done.FinishedAt == nil || done.Output == nil ||
		done.Output.Bytes != 42 || done.Output.SHA256 != fmt.Sprintf("%064x", 42) || done.ErrorCode != "" ||
		!reflect.DeepEqual(done.Output.Warnings, warnings) {
		t.Fatalf("finished %+v", done)
	}
	if got := f.get(job.ID); got.Status != store.StatusSucceeded || !reflect.DeepEqual(got.Output, done.Output) {
		t.Fatalf("read back %+v output %+v, want output %+v", got, got.Output, done.Output)
	}
	if page, _, err := f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 10}); err != nil || len(page) != 1 || !reflect.DeepEqual(page[0].Output, done.Output) {
		t.Fatalf("listed %+v, %v; want the output with its warnings", page, err)
	}
	f.checkLedger(0, 1)
	_, err = f.s.FinishJob(job.ID, 1, success(42))
	wantErr(t, err, store.ErrInvalidState, "finish twice")
	f.checkLedger(0, 1)
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim after the only job finished: ok=%v err=%v", ok, err)
	}
}

// testStartSealed: the object a start sealed (size, ETag, version id) is recorded with the
// start and comes back with every read and the claim, where the worker needs it; a size-only
// seal records nothing; the output remembers the attempt that wrote it; a size mismatch
// records nothing and cancels.
func testStartSealed(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	up := store.Upload{Size: 10, ETag: `"0123456789abcdef"`, VersionID: "v-1"}
	job := f.create(10)
	started, err := f.s.StartSealedJob(f.acct.ID, job.ID, up)
	if err != nil {
		t.Fatal(err)
	}
	if started.Status != store.StatusQueued || started.Upload == nil || *started.Upload != up {
		t.Fatalf("started %+v, upload %+v; want queued with %+v", started, started.Upload, up)
	}
	if got := f.get(job.ID); got.Upload == nil || *got.Upload != up {
		t.Fatalf("read back upload %+v, want %+v", got.Upload, up)
	}
	// A repeated start returns the job unchanged, the first seal included.
	again, err := f.s.StartSealedJob(f.acct.ID, job.ID, store.Upload{Size: 10, ETag: `"other"`})
	if err != nil || again.Upload == nil || *again.Upload != up {
		t.Fatalf("repeat start: %+v, %v; want the first seal", again.Upload, err)
	}
	claimed := f.claim()
	if claimed.ID != job.ID || claimed.Upload == nil || *claimed.Upload != up {
		t.Fatalf("claimed %s with upload %+v, want %+v", claimed.ID, claimed.Upload, up)
	}
	// The first attempt's storage failed; the second one's output is recorded as its own.
	if _, requeued, err := f.s.RequeueJob(job.ID, 1, 5, "storage"); err != nil || !requeued {
		t.Fatalf("requeue: %v %v", requeued, err)
	}
	claimed = f.claim()
	if claimed.Attempt != 2 || claimed.Upload == nil || *claimed.Upload != up {
		t.Fatalf("second claim: attempt %d, upload %+v", claimed.Attempt, claimed.Upload)
	}
	_, err = f.s.FinishJob(job.ID, 1, success(7))
	wantErr(t, err, store.ErrInvalidState, "finish of the stale attempt")
	done, err := f.s.FinishJob(job.ID, 2, success(7))
	if err != nil {
		t.Fatal(err)
	}
	if done.Output == nil || done.Output.Attempt != 2 {
		t.Fatalf("output %+v, want attempt 2", done.Output)
	}
	if got := f.get(job.ID); got.Output == nil || got.Output.Attempt != 2 || got.Upload == nil || *got.Upload != up {
		t.Fatalf("read back output %+v upload %+v", got.Output, got.Upload)
	}

	plain := f.create(10)
	if got, err := f.s.StartSealedJob(f.acct.ID, plain.ID, store.Upload{Size: 10}); err != nil || got.Upload != nil {
		t.Fatalf("size-only seal: upload %+v, %v; want none recorded", got.Upload, err)
	}
	short := f.create(10)
	got, err := f.s.StartSealedJob(f.acct.ID, short.ID, store.Upload{Size: 9, ETag: `"x"`})
	wantErr(t, err, store.ErrSizeMismatch, "sealed upload of another size")
	if got.Status != store.StatusCancelled || got.Upload != nil {
		t.Fatalf("mismatch: %s with upload %+v, want cancelled with none", got.Status, got.Upload)
	}
}

func testClaimFinishFailure(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	job := f.create(10)
	f.start(job)
	f.claim()
	done, err := f.s.FinishJob(job.ID, 1, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad pixels"})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.StatusFailed || done.ErrorCode != store.CodeConversionFailed || done.ErrorMessage != "bad pixels" ||
		done.FinishedAt == nil || done.Output != nil {
		t.Fatalf("failed job %+v", done)
	}
	if got := f.get(job.ID); got.Status != store.StatusFailed || got.ErrorCode != store.CodeConversionFailed || got.ErrorMessage != "bad pixels" || got.ErrorReason != "" {
		t.Fatalf("read back %+v", got)
	}
	// A finer reason beside the code is kept with it.
	capped := f.create(10)
	f.start(capped)
	f.claim()
	done, err = f.s.FinishJob(capped.ID, 1, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "past the memory cap of 1 GiB", ErrorReason: "memory_exceeded"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.get(capped.ID); done.ErrorReason != "memory_exceeded" || got.ErrorReason != "memory_exceeded" || got.ErrorCode != store.CodeConversionFailed {
		t.Fatalf("finished %q, read back %+v; want error_reason memory_exceeded", done.ErrorReason, got)
	}
	f.checkLedger(0, 0)
}

func testClaimOrder(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	a, b, c := f.create(1), f.create(1), f.create(1)
	// Queue order is the order of starting, not of creation.
	for _, j := range []store.Job{b, c, a} {
		f.start(j)
	}
	for _, want := range []string{b.ID, c.ID, a.ID} {
		if got := f.claim(); got.ID != want {
			t.Fatalf("claimed %s, want %s (oldest start first)", got.ID, want)
		}
	}
	f.checkLedger(3, 0)
	for _, j := range []store.Job{a, b, c} {
		if _, err := f.s.FinishJob(j.ID, 1, success(1)); err != nil {
			t.Fatal(err)
		}
	}
	f.checkLedger(0, 3)
}

func testFinishStale(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	job := f.create(10)
	f.start(job)
	f.claim()
	for _, attempt := range []int{0, 2} {
		_, err := f.s.FinishJob(job.ID, attempt, success(1))
		wantErr(t, err, store.ErrInvalidState, fmt.Sprintf("finish attempt %d of a job running attempt 1", attempt))
	}
	if got := f.get(job.ID); got.Status != store.StatusRunning {
		t.Fatalf("stale finish changed the job to %s", got.Status)
	}
	f.checkLedger(1, 0)
	_, err := f.s.FinishJob("job_nosuchjob", 1, success(1))
	wantErr(t, err, store.ErrNotFound, "finish unknown job")
	queued := f.create(1)
	f.start(queued)
	_, err = f.s.FinishJob(queued.ID, 0, success(1))
	wantErr(t, err, store.ErrInvalidState, "finish a queued job")
	f.checkLedger(2, 0)
}

func testCancelEachState(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	created := f.create(1)
	running := f.create(1)
	f.start(running)
	if got := f.claim(); got.ID != running.ID {
		t.Fatalf("claimed %s, want %s", got.ID, running.ID)
	}
	queued := f.create(1)
	f.start(queued)
	f.checkLedger(3, 0)
	for i, j := range []store.Job{created, queued, running} {
		got, err := f.s.CancelJob(f.acct.ID, j.ID)
		if err != nil {
			t.Fatalf("cancel %s: %v", j.ID, err)
		}
		if got.ID != j.ID || got.Status != store.StatusCancelled || got.FinishedAt == nil {
			t.Fatalf("cancelled job %+v", got)
		}
		if read := f.get(j.ID); read.Status != store.StatusCancelled {
			t.Fatalf("read back %s", read.Status)
		}
		f.checkLedger(int64(2-i), 0)
	}
	// The cancelled running job's worker finishes later: refused, nothing moves.
	_, err := f.s.FinishJob(running.ID, 1, success(1))
	wantErr(t, err, store.ErrInvalidState, "finish after cancel")
	f.checkLedger(0, 0)
	// Cancelling a cancelled job returns it unchanged.
	before := f.get(created.ID)
	again, err := f.s.CancelJob(f.acct.ID, created.ID)
	if err != nil || again.Status != store.StatusCancelled || !again.FinishedAt.Equal(*before.FinishedAt) {
		t.Fatalf("cancel twice = %+v, %v", again, err)
	}
	// The claimer never sees the cancelled queued job.
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim after every job was cancelled: ok=%v err=%v", ok, err)
	}
	// Succeeded and failed jobs cannot be cancelled.
	ok, bad := f.create(1), f.create(1)
	f.start(ok)
	f.start(bad)
	f.claim()
	f.claim()
	if _, err := f.s.FinishJob(ok.ID, 1, success(5)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.FinishJob(bad.ID, 1, store.Outcome{ErrorCode: store.CodeConversionFailed}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.Job{ok, bad} {
		_, err := f.s.CancelJob(f.acct.ID, j.ID)
		wantErr(t, err, store.ErrInvalidState, "cancel a finished job")
	}
	if got := f.get(ok.ID); got.Status != store.StatusSucceeded {
		t.Fatalf("refused cancel changed the job to %s", got.Status)
	}
	if got := f.get(bad.ID); got.Status != store.StatusFailed {
		t.Fatalf("refused cancel changed the job to %s", got.Status)
	}
	f.checkLedger(0, 1)
	_, err = f.s.CancelJob(f.acct.ID, "job_nosuchjob")
	wantErr(t, err, store.ErrNotFound, "cancel unknown job")
}

func testOtherAccountHidden(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	other, err := f.s.CreateAccount("other", 100)
	if err != nil {
		t.Fatal(err)
	}
	job := f.create(1)
	_, err = f.s.Job(other.ID, job.ID)
	wantErr(t, err, store.ErrNotFound, "read another account's job")
	_, err = f.s.StartJob(other.ID, job.ID, 1)
	wantErr(t, err, store.ErrNotFound, "start another account's job")
	_, err = f.s.CancelJob(other.ID, job.ID)
	wantErr(t, err, store.ErrNotFound, "cancel another account's job")
	_, _, err = f.s.ListJobs(other.ID, store.ListParams{StartingAfter: job.ID})
	wantErr(t, err, store.ErrNotFound, "page after another account's job")
	list, more, err := f.s.ListJobs(other.ID, store.ListParams{})
	if err != nil || len(list) != 0 || more {
		t.Fatalf("other account lists %v, %v, %v", ids(list), more, err)
	}
	if got := f.get(job.ID); got.Status != store.StatusCreated {
		t.Fatalf("job is %s", got.Status)
	}
	f.checkLedger(1, 0)
}

func testSpendCapConcurrent(t *testing.T, newStore NewFunc) {
	const capCents, tries = 37, 200
	f := newFixture(t, newStore, Options{}, capCents)
	var accepted, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, tries)
	for range tries {
		wg.Go(func() {
			_, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
			switch {
			case err == nil:
				accepted.Add(1)
			case errors.Is(err, store.ErrLimitReached):
				refused.Add(1)
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	if accepted.Load() != capCents || refused.Load() != tries-capCents {
		t.Fatalf("accepted %d, refused %d; want %d and %d", accepted.Load(), refused.Load(), capCents, tries-capCents)
	}
	if n := len(f.all()); n != capCents {
		t.Fatalf("%d jobs stored, want %d", n, capCents)
	}
	f.checkLedger(capCents, 0)
}

func testSpendCapMonth(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 2)
	a := f.create(1)
	f.start(a)
	f.claim()
	if _, err := f.s.FinishJob(a.ID, 1, success(1)); err != nil {
		t.Fatal(err)
	}
	f.create(1) // 1 spent + 1 reserved = the cap of 2
	_, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
	wantErr(t, err, store.ErrLimitReached, "create over the cap with spend")
	f.checkLedger(1, 1)
	// A failure gives its cent back: a failed job does not count against the cap.
	three := int64(3)
	if _, err := f.s.UpdateAccount(f.acct.ID, nil, &three); err != nil {
		t.Fatal(err)
	}
	b := f.create(1)
	f.start(b)
	f.claim()
	if _, err := f.s.FinishJob(b.ID, 1, store.Outcome{ErrorCode: store.CodeConversionFailed}); err != nil {
		t.Fatal(err)
	}
	f.create(1)
	_, _, err = f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
	wantErr(t, err, store.ErrLimitReached, "create over the cap")
	f.checkLedger(2, 1)
}

func idemParams(acct, key, hash string) store.CreateJobParams {
	return store.CreateJobParams{AccountID: acct, InputFormat: "png", TargetFormat: "jpg", InputBytes: 5, IdempotencyKey: key, RequestHash: hash}
}

func testIdempotency(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	var renders atomic.Int64
	render := func(j store.Job) (store.Response, error) {
		renders.Add(1)
		return store.Response{Status: 201, Body: []byte(fmt.Sprintf(`{"id":%q,"n":%d}`, j.ID, renders.Load()))}, nil
	}
	first, resp1, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h1"), render)
	if err != nil {
		t.Fatal(err)
	}
	if renders.Load() != 1 {
		t.Fatalf("rendered %d times", renders.Load())
	}
	for range 3 {
		job, resp, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h1"), render)
		if err != nil {
			t.Fatal(err)
		}
		if job.ID != first.ID || resp.Status != resp1.Status || string(resp.Body) != string(resp1.Body) {
			t.Fatalf("replay gave job %s %d %s, first %s %d %s", job.ID, resp.Status, resp.Body, first.ID, resp1.Status, resp1.Body)
		}
	}
	if renders.Load() != 1 {
		t.Fatalf("a replay rendered again (%d renders)", renders.Load())
	}
	_, _, err = f.s.CreateJob(idemParams(f.acct.ID, "k1", "h2"), render)
	wantErr(t, err, store.ErrIdempotencyMismatch, "same key, different request")
	// Keys are per account, and another key is another job.
	other, err := f.s.CreateAccount("other", 10)
	if err != nil {
		t.Fatal(err)
	}
	theirs, _, err := f.s.CreateJob(idemParams(other.ID, "k1", "h2"), render)
	if err != nil || theirs.ID == first.ID {
		t.Fatalf("another account's k1: %s, %v", theirs.ID, err)
	}
	second, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k2", "h1"), render)
	if err != nil || second.ID == first.ID {
		t.Fatalf("k2: %s, %v", second.ID, err)
	}
	// A replay after the job moved on returns the first response and the job as it is now.
	f.start(first)
	job, resp, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h1"), render)
	if err != nil || job.Status != store.StatusQueued || string(resp.Body) != string(resp1.Body) {
		t.Fatalf("replay after start: %s %s %v", job.Status, resp.Body, err)
	}
	f.checkLedger(2, 0)
	// Concurrent first requests with one key make one job.
	var wg sync.WaitGroup
	got := make([]string, 20)
	for i := range got {
		wg.Go(func() {
			job, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k3", "h3"), render)
			if err != nil {
				t.Errorf("concurrent k3: %v", err)
				return
			}
			got[i] = job.ID
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("concurrent creates with one key made jobs %v", got)
		}
	}
	f.checkLedger(3, 0)
}

func testIdempotencyAtomic(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1)
	// A render that fails inside the transaction leaves neither job, key nor reservation.
	boom := errors.New("boom")
	_, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h1"), func(store.Job) (store.Response, error) { return store.Response{}, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("render error: %v", err)
	}
	if n := len(f.all()); n != 0 {
		t.Fatalf("%d jobs after a failed create", n)
	}
	f.checkLedger(0, 0)
	// The key was not kept: the same key with another request hash is a new create.
	job, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h2"), plainRender)
	if err != nil {
		t.Fatal(err)
	}
	// At the cap, a replay still answers; a new key is refused and not kept.
	replay, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h2"), plainRender)
	if err != nil || replay.ID != job.ID {
		t.Fatalf("replay at the cap: %s, %v", replay.ID, err)
	}
	_, _, err = f.s.CreateJob(idemParams(f.acct.ID, "k2", "h1"), plainRender)
	wantErr(t, err, store.ErrLimitReached, "new key at the cap")
	if _, err := f.s.CancelJob(f.acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	k2, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k2", "h9"), plainRender)
	if err != nil || k2.ID == job.ID {
		t.Fatalf("k2 after the refusal: %s, %v", k2.ID, err)
	}
	f.checkLedger(1, 0)
}

func testIdempotencyTTL(t *testing.T, newStore NewFunc) {
	const ttl = 2 * time.Second
	f := newFixture(t, newStore, Options{IdempotencyTTL: ttl}, 100)
	before := time.Now()
	first, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h1"), plainRender)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.s.PurgeIdempotencyKeys()
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(before) < ttl/2 && n != 0 { // asserted only when the machine was not stalled
		t.Fatalf("purged %d keys before the TTL", n)
	}
	deadline := time.Now().Add(waitBound)
	purged := 0
	for purged == 0 && n == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no idempotency key purged %v after a %v TTL", waitBound, ttl)
		}
		time.Sleep(100 * time.Millisecond)
		if purged, err = f.s.PurgeIdempotencyKeys(); err != nil {
			t.Fatal(err)
		}
	}
	if purged+n != 1 {
		t.Fatalf("purged %d keys, want 1", purged+n)
	}
	// The key is forgotten: the same key with another request is a new job.
	job, _, err := f.s.CreateJob(idemParams(f.acct.ID, "k1", "h2"), plainRender)
	if err != nil || job.ID == first.ID {
		t.Fatalf("create after the key was purged: %s, %v", job.ID, err)
	}
	f.checkLedger(2, 0)
}

func testListPaging(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	var made []store.Job
	for range 7 {
		made = append(made, f.create(1))
	}
	newest := slices.Clone(made)
	slices.Reverse(newest)
	var pages [][]string
	after := ""
	for {
		page, more, err := f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 3, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, ids(page))
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	want := [][]string{ids(newest[:3]), ids(newest[3:6]), ids(newest[6:])}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", pages, want)
	}
	// Exactly a page: no more.
	page, more, err := f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 7})
	if err != nil || len(page) != 7 || more {
		t.Fatalf("limit 7 of 7: %d jobs, more=%v, %v", len(page), more, err)
	}
	// Default limit is 20.
	for range 15 {
		f.create(1)
	}
	page, more, err = f.s.ListJobs(f.acct.ID, store.ListParams{})
	if err != nil || len(page) != 20 || !more {
		t.Fatalf("default limit: %d jobs, more=%v, %v", len(page), more, err)
	}
	// Status filter, with paging across non-matching jobs.
	for _, i := range []int{1, 3, 4} {
		if _, err := f.s.CancelJob(f.acct.ID, made[i].ID); err != nil {
			t.Fatal(err)
		}
	}
	page, more, err = f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 2, Status: store.StatusCancelled})
	if err != nil || fmt.Sprint(ids(page)) != fmt.Sprint([]string{made[4].ID, made[3].ID}) || !more {
		t.Fatalf("cancelled page 1: %v more=%v %v", ids(page), more, err)
	}
	page, more, err = f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 2, Status: store.StatusCancelled, StartingAfter: made[3].ID})
	if err != nil || fmt.Sprint(ids(page)) != fmt.Sprint([]string{made[1].ID}) || more {
		t.Fatalf("cancelled page 2: %v more=%v %v", ids(page), more, err)
	}
	page, more, err = f.s.ListJobs(f.acct.ID, store.ListParams{Limit: 50, Status: store.StatusSucceeded})
	if err != nil || len(page) != 0 || more {
		t.Fatalf("succeeded: %v more=%v %v", ids(page), more, err)
	}
	_, _, err = f.s.ListJobs(f.acct.ID, store.ListParams{StartingAfter: "job_nosuchjob"})
	wantErr(t, err, store.ErrNotFound, "starting_after an unknown job")
	f.checkLedger(19, 0)
}

// testAuthenticateJob holds AuthenticateJob to Authenticate and then Job: the key's answer
// first, then the job's, for the key's own live job, another account's, an unknown one, an
// expired one, and a key that is unknown, malformed or revoked.
func testAuthenticateJob(t *testing.T, newStore NewFunc) {
	const retention = 2 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	other, err := f.s.CreateAccount("other", 100)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, otherSecret, err := f.s.CreateKey(other.ID)
	if err != nil {
		t.Fatal(err)
	}
	job := f.start(f.create(1))
	want, err := f.s.Authenticate(f.secret)
	if err != nil {
		t.Fatal(err)
	}
	key, got, jobErr, err := f.s.AuthenticateJob(f.secret, job.ID)
	if err != nil || jobErr != nil {
		t.Fatalf("own job: key err %v, job err %v", err, jobErr)
	}
	if !reflect.DeepEqual(key, want) {
		t.Fatalf("key %+v, Authenticate gives %+v", key, want)
	}
	if read := f.get(job.ID); !reflect.DeepEqual(got, read) || got.Status != store.StatusQueued {
		t.Fatalf("job %+v, Job reads %+v", got, read)
	}
	key, _, jobErr, err = f.s.AuthenticateJob(otherSecret, job.ID)
	if err != nil || key.ID != otherKey.ID {
		t.Fatalf("another account's key: %+v, %v", key, err)
	}
	wantErr(t, jobErr, store.ErrNotFound, "another account's job")
	for _, id := range []string{"job_nosuchjob", "", "not an id"} {
		key, _, jobErr, err = f.s.AuthenticateJob(f.secret, id)
		if err != nil || key.ID != want.ID {
			t.Fatalf("job %q: key %+v, %v", id, key, err)
		}
		wantErr(t, jobErr, store.ErrNotFound, fmt.Sprintf("job %q", id))
	}
	for _, bad := range []string{"", "cs_live_short", store.NewKeySecret()} {
		_, _, _, err = f.s.AuthenticateJob(bad, job.ID)
		wantErr(t, err, store.ErrUnauthorized, fmt.Sprintf("key %q", bad))
	}
	if _, err := f.s.RevokeKey(otherKey.ID); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = f.s.AuthenticateJob(otherSecret, job.ID)
	wantErr(t, err, store.ErrUnauthorized, "revoked key, another account's job")
	theirs, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: other.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = f.s.AuthenticateJob(otherSecret, theirs.ID)
	wantErr(t, err, store.ErrUnauthorized, "revoked key, its own account's job")
	f.waitExpired(job.ID, retention)
	key, _, jobErr, err = f.s.AuthenticateJob(f.secret, job.ID)
	if err != nil || key.ID != want.ID {
		t.Fatalf("expired job: key %+v, %v", key, err)
	}
	wantErr(t, jobErr, store.ErrNotFound, "expired job")
}

func testAuth(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	key, err := f.s.Authenticate(f.secret)
	if err != nil {
		t.Fatal(err)
	}
	if key.AccountID != f.acct.ID || key.RevokedAt != nil || key.Prefix != f.secret[:store.KeyDisplayPrefixLen] {
		t.Fatalf("authenticated key %+v", key)
	}
	if h := store.HashKey(f.secret); string(key.Hash) != string(h[:]) {
		t.Fatalf("key hash %x, want the SHA-256 of the secret", key.Hash)
	}
	lastChanged := f.secret[:len(f.secret)-1] + "x" // a wrong checksum
	if f.secret[len(f.secret)-1] == 'x' {
		lastChanged = f.secret[:len(f.secret)-1] + "y"
	}
	for _, bad := range []string{"", "cs_live_short", store.NewKeySecret(), lastChanged} {
		_, err := f.s.Authenticate(bad)
		wantErr(t, err, store.ErrUnauthorized, fmt.Sprintf("key %q", bad))
	}
	key2, secret2, err := f.s.CreateKey(f.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if secret2 == f.secret || store.ParseKey(secret2) != nil || key2.AccountID != f.acct.ID {
		t.Fatalf("second key %+v %q", key2, secret2)
	}
	keys, err := f.s.Keys(f.acct.ID)
	if err != nil || len(keys) != 2 || keys[0].ID != key.ID || keys[1].ID != key2.ID {
		t.Fatalf("keys %+v, %v", keys, err)
	}
	// Authenticate many times (a cache, if any, holds the key), then revoke: the very next
	// Authenticate refuses it.
	for range 5 {
		if _, err := f.s.Authenticate(secret2); err != nil {
			t.Fatal(err)
		}
	}
	revoked, err := f.s.RevokeKey(key2.ID)
	if err != nil || revoked.RevokedAt == nil {
		t.Fatalf("revoke: %+v, %v", revoked, err)
	}
	_, err = f.s.Authenticate(secret2)
	wantErr(t, err, store.ErrUnauthorized, "revoked key")
	again, err := f.s.RevokeKey(key2.ID)
	if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("revoke twice: %+v, %v", again, err)
	}
	if _, err := f.s.Authenticate(f.secret); err != nil {
		t.Fatalf("the other key after a revocation: %v", err)
	}
	keys, err = f.s.Keys(f.acct.ID)
	if err != nil || len(keys) != 2 || keys[1].RevokedAt == nil || keys[0].RevokedAt != nil {
		t.Fatalf("keys after revoke %+v, %v", keys, err)
	}
	_, err = f.s.RevokeKey("key_nosuchkey")
	wantErr(t, err, store.ErrNotFound, "revoke unknown key")
	_, _, err = f.s.CreateKey("acct_nosuchaccount")
	wantErr(t, err, store.ErrNotFound, "key for unknown account")
	_, err = f.s.Keys("acct_nosuchaccount")
	wantErr(t, err, store.ErrNotFound, "keys of unknown account")
}

func testAccounts(t *testing.T, newStore NewFunc) {
	s := newStore(t, Options{})
	a, err := s.CreateAccount("  first  ", 500)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "first" || a.SpendCapCents != 500 || a.ReservedCents != 0 || len(a.ID) < 6 || a.ID[:5] != "acct_" {
		t.Fatalf("account %+v", a)
	}
	b, err := s.CreateAccount("second", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		cap  int64
	}{{"", 1}, {"   ", 1}, {string(make([]byte, 101)), 1}, {"x", -1}} {
		_, err := s.CreateAccount(bad.name, bad.cap)
		wantErr(t, err, store.ErrInvalidArgument, fmt.Sprintf("account %q cap %d", bad.name, bad.cap))
	}
	all, err := s.Accounts()
	if err != nil || len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID {
		t.Fatalf("accounts %+v, %v", all, err)
	}
	name, capCents := "renamed", int64(7)
	got, err := s.UpdateAccount(a.ID, &name, nil)
	if err != nil || got.Name != "renamed" || got.SpendCapCents != 500 {
		t.Fatalf("rename: %+v, %v", got, err)
	}
	got, err = s.UpdateAccount(a.ID, nil, &capCents)
	if err != nil || got.Name != "renamed" || got.SpendCapCents != 7 {
		t.Fatalf("new cap: %+v, %v", got, err)
	}
	if read, err := s.Account(a.ID); err != nil || read.Name != "renamed" || read.SpendCapCents != 7 || !read.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("read back %+v, %v", read, err)
	}
	negative := int64(-1)
	_, err = s.UpdateAccount(a.ID, nil, &negative)
	wantErr(t, err, store.ErrInvalidArgument, "negative cap")
	_, err = s.UpdateAccount("acct_nosuchaccount", &name, nil)
	wantErr(t, err, store.ErrNotFound, "update unknown account")
	_, err = s.Account("acct_nosuchaccount")
	wantErr(t, err, store.ErrNotFound, "unknown account")
	// With accounts present, EnsureDefaultAccount does nothing.
	if acct, secret, err := s.EnsureDefaultAccount(100); err != nil || secret != "" || acct.ID != "" {
		t.Fatalf("EnsureDefaultAccount with accounts: %+v %q %v", acct, secret, err)
	}
}

func testEnsureDefault(t *testing.T, newStore NewFunc) {
	s := newStore(t, Options{})
	var wg sync.WaitGroup
	secrets := make([]string, 8)
	for i := range secrets {
		wg.Go(func() {
			_, secret, err := s.EnsureDefaultAccount(1000)
			if err != nil {
				t.Errorf("EnsureDefaultAccount: %v", err)
			}
			secrets[i] = secret
		})
	}
	wg.Wait()
	var secret string
	for _, s := range secrets {
		if s != "" {
			if secret != "" {
				t.Fatalf("two calls created a default account: %q", secrets)
			}
			secret = s
		}
	}
	all, err := s.Accounts()
	if err != nil || len(all) != 1 || all[0].Name != store.DefaultAccountName || all[0].SpendCapCents != 1000 {
		t.Fatalf("accounts %+v, %v", all, err)
	}
	key, err := s.Authenticate(secret)
	if err != nil || key.AccountID != all[0].ID {
		t.Fatalf("default key: %+v, %v", key, err)
	}
}

func testClaimsConcurrent(t *testing.T, newStore NewFunc) {
	const jobs, claimers = 40, 8
	f := newFixture(t, newStore, Options{}, 1000)
	for range jobs {
		f.start(f.create(1))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range claimers {
		wg.Go(func() {
			for {
				job, ok, err := f.s.ClaimJob()
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if !ok {
					return
				}
				if job.Attempt != 1 || job.Status != store.StatusRunning {
					t.Errorf("claimed %s attempt %d status %s", job.ID, job.Attempt, job.Status)
				}
				mu.Lock()
				seen[job.ID]++
				mu.Unlock()
				if _, err := f.s.FinishJob(job.ID, job.Attempt, success(1)); err != nil {
					t.Errorf("finish %s: %v", job.ID, err)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Fatalf("%d distinct jobs claimed, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %s claimed %d times", id, n)
		}
	}
	f.checkLedger(0, jobs)
}

func testRetention(t *testing.T, newStore NewFunc) {
	const retention = 3 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	before := time.Now()
	done := f.create(1)
	f.start(done)
	f.claim()
	if _, err := f.s.FinishJob(done.ID, 1, success(1)); err != nil {
		t.Fatal(err)
	}
	running := f.create(1)
	f.start(running)
	if got := f.claim(); got.ID != running.ID {
		t.Fatalf("claimed %s", got.ID)
	}
	queued := f.create(1)
	f.start(queued)
	created := f.create(1)
	if d := created.ExpiresAt.Sub(created.CreatedAt); d != retention {
		t.Fatalf("expires_at - created_at = %v, want %v", d, retention)
	}
	if time.Since(before) < retention/2 { // asserted only when the machine was not stalled
		if deleted, more, err := f.s.ExpireJobs(100); err != nil || len(deleted) != 0 || more {
			t.Fatalf("expire before the retention: %v %v %v", deleted, more, err)
		}
		f.checkLedger(3, 1)
	}
	wake, release := f.s.WaitChange(created.ID)
	defer release()
	// Wait until the newest job is past its expiry (so are the older ones): Job then hides it.
	deadline := time.Now().Add(waitBound)
	for {
		_, err := f.s.Job(f.acct.ID, created.ID)
		if errors.Is(err, store.ErrNotFound) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still visible %v after a %v retention", waitBound, retention)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Expired but not yet swept: hidden from reads and lists, still holding their cents.
	if list, _, err := f.s.ListJobs(f.acct.ID, store.ListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("list of expired jobs: %v, %v", ids(list), err)
	}
	if acct, err := f.s.Account(f.acct.ID); err != nil || acct.ReservedCents != 3 {
		t.Fatalf("reserved before the sweep: %d, %v", acct.ReservedCents, err)
	}
	var deleted []string
	for {
		d, more, err := f.s.ExpireJobs(3)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) > 3 {
			t.Fatalf("ExpireJobs(3) deleted %d", len(d))
		}
		deleted = append(deleted, d...)
		if len(d) == 0 && !more {
			break
		}
	}
	want := []string{created.ID, queued.ID, running.ID, done.ID}
	slices.Sort(want)
	slices.Sort(deleted)
	if fmt.Sprint(deleted) != fmt.Sprint(want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	for _, id := range want {
		if ok, err := f.s.JobExists(id); err != nil || ok {
			t.Fatalf("JobExists(%s) after expiry = %v, %v", id, ok, err)
		}
	}
	select {
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("WaitChange did not fire when the job expired")
	}
	// The running job's worker finds its job gone.
	_, err := f.s.FinishJob(running.ID, 1, success(1))
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalidState) {
		t.Fatalf("finish an expired job: %v", err)
	}
	// Every unfinished job released its cent; the success stays spent this month.
	acct, err := f.s.Account(f.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, n := range acct.MonthlySpend {
		spent += n
	}
	if acct.ReservedCents != 0 || spent != 1 {
		t.Fatalf("after expiry reserved %d, spend %v; want 0 and 1", acct.ReservedCents, acct.MonthlySpend)
	}
	if err := f.s.VerifyLedger(); err != nil {
		t.Fatalf("VerifyLedger after expiry (the purged success still counts): %v", err)
	}
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim after expiry: ok=%v err=%v", ok, err)
	}
}

func testWaitChange(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	job := f.create(1)
	wait := func(what string, change func()) {
		t.Helper()
		ch, release := f.s.WaitChange(job.ID)
		defer release()
		change()
		select {
		case <-ch:
		case <-time.After(waitBound):
			t.Fatalf("WaitChange did not fire within %v on %s", waitBound, what)
		}
	}
	wait("start", func() { f.start(job) })
	wait("claim", func() { f.claim() })
	wait("finish", func() {
		if _, err := f.s.FinishJob(job.ID, 1, success(1)); err != nil {
			t.Fatal(err)
		}
	})
	other := f.create(1)
	ch, release := f.s.WaitChange(other.ID)
	release() // a released waiter is never closed by a change later
	if _, err := f.s.CancelJob(f.acct.ID, other.ID); err != nil {
		t.Fatal(err)
	}
	job = other
	select {
	case <-ch:
		t.Fatal("a released WaitChange channel was closed")
	default:
	}
	third := f.create(1)
	job = third
	wait("cancel", func() {
		if _, err := f.s.CancelJob(f.acct.ID, third.ID); err != nil {
			t.Fatal(err)
		}
	})
	f.checkLedger(0, 1)
}

func testCounts(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	if err := f.s.Ping(); err != nil {
		t.Fatal(err)
	}
	f.create(1)
	a, b := f.create(1), f.create(1)
	f.start(a)
	f.start(b)
	c := f.create(1)
	f.start(c)
	f.claim()
	f.claim()
	if _, err := f.s.FinishJob(a.ID, 1, success(1)); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.Counts()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{store.StatusCreated: 1, store.StatusRunning: 1, store.StatusQueued: 1, store.StatusSucceeded: 1}
	for status, n := range got.Jobs {
		if n != want[status] {
			t.Fatalf("counts %v, want %v", got.Jobs, want)
		}
	}
	for status, n := range want {
		if got.Jobs[status] != n {
			t.Fatalf("counts %v, want %v", got.Jobs, want)
		}
	}
	cJob := f.get(c.ID)
	if got.QueueDepth != 1 || !got.OldestQueued.Equal(*cJob.StartedAt) || got.Accounts != 1 ||
		got.ReservedCents != 3 || got.SpentCentsMonth != 1 || got.SpentCentsAllTime != 1 || got.DBBytes <= 0 {
		t.Fatalf("counts %+v (queued job started at %v)", got, cJob.StartedAt)
	}
	f.checkLedger(3, 1)
}

// testRequeue: a storage fault returns the running attempt to the queue in its original place,
// the attempt counted; at maxAttempts the job fails conversion_failed with the fault's reason
// as its message, and its cent goes.
func testRequeue(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	first := f.start(f.create(1))
	second := f.start(f.create(1))
	if got := f.claim(); got.ID != first.ID || got.Attempt != 1 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 1", got.ID, got.Attempt, first.ID)
	}
	_, _, err := f.s.RequeueJob(first.ID, 2, 2, "disk full")
	wantErr(t, err, store.ErrInvalidState, "requeue another attempt")
	_, _, err = f.s.RequeueJob(second.ID, 1, 2, "disk full")
	wantErr(t, err, store.ErrInvalidState, "requeue a queued job")
	_, _, err = f.s.RequeueJob("job_nosuchjob", 1, 2, "disk full")
	wantErr(t, err, store.ErrNotFound, "requeue an unknown job")

	job, requeued, err := f.s.RequeueJob(first.ID, 1, 2, "disk full")
	if err != nil || !requeued {
		t.Fatalf("requeue: requeued=%v err=%v", requeued, err)
	}
	if job.Status != store.StatusQueued || job.Attempt != 1 || job.ErrorCode != "" {
		t.Fatalf("requeued job: status %s attempt %d code %q", job.Status, job.Attempt, job.ErrorCode)
	}
	if got := f.get(first.ID); got.Status != store.StatusQueued || got.Attempt != 1 {
		t.Fatalf("stored job after requeue: %s attempt %d", got.Status, got.Attempt)
	}
	f.checkLedger(2, 0)
	// Its original place: before the job started after it.
	if got := f.claim(); got.ID != first.ID || got.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d after the requeue, want %s attempt 2", got.ID, got.Attempt, first.ID)
	}
	const reason = "storage full: the service's disk has no room for the output"
	job, requeued, err = f.s.RequeueJob(first.ID, 2, 2, reason)
	if err != nil || requeued {
		t.Fatalf("requeue at max attempts: requeued=%v err=%v", requeued, err)
	}
	// The code says what happened: the conversion did not complete because its output could
	// not be stored, which the message says first; the job did not expire.
	wantMsg := reason + " (2 attempts, --max-attempts 2)"
	if job.Status != store.StatusFailed || job.ErrorCode != store.CodeConversionFailed || job.ErrorMessage != wantMsg || job.FinishedAt == nil {
		t.Fatalf("exhausted job: status %s code %q message %q finished %v; want failed %s %q",
			job.Status, job.ErrorCode, job.ErrorMessage, job.FinishedAt, store.CodeConversionFailed, wantMsg)
	}
	if got := f.get(first.ID); got.Status != store.StatusFailed || got.ErrorCode != store.CodeConversionFailed || got.ErrorMessage != wantMsg || got.Attempt != 2 {
		t.Fatalf("stored exhausted job: %s %q %q attempt %d", got.Status, got.ErrorCode, got.ErrorMessage, got.Attempt)
	}
	f.checkLedger(1, 0)
	if got := f.claim(); got.ID != second.ID {
		t.Fatalf("claimed %s, want %s", got.ID, second.ID)
	}
}

// testUploadState: what each job is to its upload, and the earliest expiry the sweeper sleeps
// until.
func testUploadState(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	if _, ok, err := f.s.NextExpiry(); err != nil || ok {
		t.Fatalf("NextExpiry of an empty store: ok=%v err=%v", ok, err)
	}
	created := f.create(1)
	queued := f.start(f.create(1))
	running := f.start(f.create(1))
	done := f.start(f.create(1))
	cancelled := f.create(1)
	if _, err := f.s.CancelJob(f.acct.ID, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(); got.ID != queued.ID {
		t.Fatalf("claimed %s", got.ID)
	}
	if _, err := f.s.FinishJob(queued.ID, 1, store.Outcome{ErrorCode: "conversion_failed", ErrorMessage: "bad"}); err != nil {
		t.Fatal(err)
	}
	// queued failed; claim running and done, finish done.
	if got := f.claim(); got.ID != running.ID {
		t.Fatalf("claimed %s", got.ID)
	}
	if got := f.claim(); got.ID != done.ID {
		t.Fatalf("claimed %s", got.ID)
	}
	if _, err := f.s.FinishJob(done.ID, 1, success(1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]store.UploadState{
		created.ID:      store.UploadOpen,
		running.ID:      store.UploadSealed,
		queued.ID:       store.UploadClosed, // failed
		done.ID:         store.UploadClosed,
		cancelled.ID:    store.UploadClosed,
		"job_nosuchjob": store.UploadGone,
	}
	for id, w := range want {
		if got, err := f.s.JobUploadState(id); err != nil || got != w {
			t.Fatalf("JobUploadState(%s) = %v, %v; want %v", id, got, err, w)
		}
	}
	queued2 := f.start(f.create(1))
	if got, err := f.s.JobUploadState(queued2.ID); err != nil || got != store.UploadSealed {
		t.Fatalf("JobUploadState(queued) = %v, %v; want sealed", got, err)
	}
	ids := []string{created.ID, running.ID, queued.ID, "job_nosuchjob", done.ID, queued2.ID, cancelled.ID}
	if got, err := f.s.ClosedUploads(ids); err != nil || !slices.Equal(got, []string{queued.ID, done.ID, cancelled.ID}) {
		t.Fatalf("ClosedUploads = %v, %v; want the failed, succeeded and cancelled jobs in order", got, err)
	}
	if got, err := f.s.ClosedUploads(nil); err != nil || len(got) != 0 {
		t.Fatalf("ClosedUploads(nil) = %v, %v", got, err)
	}
	at, ok, err := f.s.NextExpiry()
	if err != nil || !ok || !at.Equal(created.ExpiresAt) {
		t.Fatalf("NextExpiry = %v, %v, %v; want %v (the first job's)", at, ok, err, created.ExpiresAt)
	}
}

// testExpiryChecks: nothing succeeds, or is charged, after expires_at, even before the sweep:
// a finish fails the job expired_or_exhausted and is ErrNotFound, a claim fails a queued job
// instead of running it, a requeue fails it; each releases the job's cent in its transaction.
func testExpiryChecks(t *testing.T, newStore NewFunc) {
	const retention = 2 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	created := f.create(1)
	queued := f.start(f.create(1))
	toFinish := f.start(f.create(1))
	toRequeue := f.start(f.create(1))
	var order []store.Job
	for range 2 {
		order = append(order, f.claim())
	}
	if order[0].ID != queued.ID || order[1].ID != toFinish.ID {
		t.Fatalf("claimed %s, %s", order[0].ID, order[1].ID)
	}
	// queued went running above; make a fresh queued job the claim will meet after expiry.
	lateQueued := f.start(f.create(1))
	if got := f.claim(); got.ID != toRequeue.ID {
		t.Fatalf("claimed %s, want %s", got.ID, toRequeue.ID)
	}
	// Wait until every job is past expires_at: the newest job's upload state says so.
	f.waitExpired(lateQueued.ID, retention)
	if st, err := f.s.JobUploadState(created.ID); err != nil || st != store.UploadClosed {
		t.Fatalf("JobUploadState(expired created job) = %v, %v; want closed", st, err)
	}
	reserved := func(want int64) {
		t.Helper()
		acct, err := f.s.Account(f.acct.ID)
		if err != nil {
			t.Fatal(err)
		}
		var spent int64
		for _, n := range acct.MonthlySpend {
			spent += n
		}
		if acct.ReservedCents != want || spent != 0 {
			t.Fatalf("reserved %d, spend %v; want %d and nothing spent", acct.ReservedCents, acct.MonthlySpend, want)
		}
		if err := f.s.VerifyLedger(); err != nil {
			t.Fatalf("VerifyLedger: %v", err)
		}
	}
	reserved(5)
	_, err := f.s.FinishJob(toFinish.ID, 1, success(1))
	wantErr(t, err, store.ErrNotFound, "finish after expires_at")
	reserved(4)
	_, err = f.s.FinishJob(toFinish.ID, 1, success(1))
	wantErr(t, err, store.ErrInvalidState, "finish the expired job again")
	if _, ok, err := f.s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim of an expired queued job: ok=%v err=%v", ok, err)
	}
	reserved(3)
	job, requeued, err := f.s.RequeueJob(toRequeue.ID, 1, 3, "disk full")
	if err != nil || requeued {
		t.Fatalf("requeue after expires_at: requeued=%v err=%v", requeued, err)
	}
	if job.Status != store.StatusFailed || job.ErrorCode != store.CodeExpiredOrExhausted || job.Output != nil {
		t.Fatalf("expired requeue: status %s code %q output %v", job.Status, job.ErrorCode, job.Output)
	}
	reserved(2) // created and the first claimed job stay unfinished until the sweep
	deleted, _, err := f.s.ExpireJobs(100)
	if err != nil || len(deleted) != 5 {
		t.Fatalf("sweep deleted %v, %v; want all 5", deleted, err)
	}
	reserved(0)
}

// testAdminPages: the admin account and key lists page oldest first with has_more, and a cursor
// that names nothing is ErrNotFound.
func testAdminPages(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	for i := range 4 {
		if _, err := f.s.CreateAccount(fmt.Sprintf("acct%d", i), 10); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		if _, _, err := f.s.CreateKey(f.acct.ID); err != nil {
			t.Fatal(err)
		}
	}
	allAccts, err := f.s.Accounts()
	if err != nil || len(allAccts) != 5 {
		t.Fatalf("accounts: %d, %v", len(allAccts), err)
	}
	allKeys, err := f.s.Keys(f.acct.ID)
	if err != nil || len(allKeys) != 5 {
		t.Fatalf("keys: %d, %v", len(allKeys), err)
	}
	var gotAccts []string
	after := ""
	for pages := 0; ; pages++ {
		page, more, err := f.s.AccountsPage(store.PageParams{Limit: 2, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 || (more && len(page) != 2) || pages > 3 {
			t.Fatalf("accounts page %d: %d items, more=%v", pages, len(page), more)
		}
		for _, a := range page {
			gotAccts = append(gotAccts, a.ID)
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	wantAccts := make([]string, len(allAccts))
	for i, a := range allAccts {
		wantAccts[i] = a.ID
	}
	if fmt.Sprint(gotAccts) != fmt.Sprint(wantAccts) {
		t.Fatalf("paged accounts %v, want %v", gotAccts, wantAccts)
	}
	if page, more, err := f.s.AccountsPage(store.PageParams{}); err != nil || len(page) != 5 || more {
		t.Fatalf("default page: %d items, more=%v, %v", len(page), more, err)
	}
	_, _, err = f.s.AccountsPage(store.PageParams{Limit: 2, StartingAfter: "acct_nosuchaccount"})
	wantErr(t, err, store.ErrNotFound, "accounts page after an unknown account")

	page, more, err := f.s.KeysPage(f.acct.ID, store.PageParams{Limit: 3})
	if err != nil || len(page) != 3 || !more {
		t.Fatalf("keys page 1: %d items, more=%v, %v", len(page), more, err)
	}
	rest, more, err := f.s.KeysPage(f.acct.ID, store.PageParams{Limit: 3, StartingAfter: page[2].ID})
	if err != nil || len(rest) != 2 || more {
		t.Fatalf("keys page 2: %d items, more=%v, %v", len(rest), more, err)
	}
	var gotKeys, wantKeys []string
	for _, k := range append(page, rest...) {
		gotKeys = append(gotKeys, k.ID)
	}
	for _, k := range allKeys {
		wantKeys = append(wantKeys, k.ID)
	}
	if fmt.Sprint(gotKeys) != fmt.Sprint(wantKeys) {
		t.Fatalf("paged keys %v, want %v", gotKeys, wantKeys)
	}
	_, _, err = f.s.KeysPage(f.acct.ID, store.PageParams{StartingAfter: "key_nosuchkey"})
	wantErr(t, err, store.ErrNotFound, "keys page after an unknown key")
}
