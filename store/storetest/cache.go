package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// The conversion cache (store/cache.go, docs/cache.md) on every backend.
var cacheCases = []testCase{
	{"CacheHitAtCreate", testCacheHitAtCreate},
	{"CacheChecksumMismatch", testCacheChecksumMismatch},
	{"CacheHitAtStartAndClaim", testCacheHitAtStartAndClaim},
	{"CacheIdenticalJobsOneConversion", testCacheIdenticalJobs},
	{"CacheOffStoresNothing", testCacheOff},
	{"CacheEvictsLeastRecentlyUsed", testCacheLRU},
	{"CacheReferencesKeepOutputs", testCacheReferences},
	{"CacheSingleFlight", testCacheSingleFlight},
	{"CacheHitCents", testCacheHitCents},
}

func init() { cases = append(cases, cacheCases...) }

// sha is a fake input SHA-256 (64 lowercase hex digits) numbered n.
func sha(n int) string { return fmt.Sprintf("%064x", 0xc0ffee00+n) }

// cached creates a job taking part in the cache as base says, with input_sha256 inputSHA
// when it is not "".
func (f *fixture) cached(base, inputSHA string) store.Job {
	f.t.Helper()
	job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 10,
		InputSHA256: inputSHA, CacheBase: base}, plainRender)
	if err != nil {
		f.t.Fatalf("create: %v", err)
	}
	return job
}

// convert starts job with an upload of SHA-256 upload, claims it and finishes it with an
// output of n bytes; it returns the finished job.
func (f *fixture) convert(job store.Job, upload string, n int64) store.Job {
	f.t.Helper()
	started, err := f.s.StartSealedJob(f.acct.ID, job.ID, store.Upload{Size: job.InputBytes, SHA256: upload})
	if err != nil || started.Status != store.StatusQueued {
		f.t.Fatalf("start: %v, status %s", err, started.Status)
	}
	claimed := f.claim()
	if claimed.ID != job.ID {
		f.t.Fatalf("claimed %s, want %s", claimed.ID, job.ID)
	}
	out := success(n)
	out.Output.Warnings = []store.Warning{{Code: "metadata_dropped", Message: "EXIF was not kept"}}
	out.Output.Verified = true
	done, err := f.s.FinishJob(job.ID, claimed.Attempt, out)
	if err != nil {
		f.t.Fatal(err)
	}
	return done
}

// wantHit asserts a job answered from the cache with from's output.
func wantHit(t *testing.T, got, from store.Job) {
	t.Helper()
	if got.Status != store.StatusSucceeded || got.Output == nil || !got.Output.Cached || got.Output.Object != from.ID {
		t.Fatalf("job %s: status %s, output %+v; want succeeded from the cache with %s's output", got.ID, got.Status, got.Output, from.ID)
	}
	if got.Output.SHA256 != from.Output.SHA256 || got.Output.Bytes != from.Output.Bytes || got.Output.Attempt != from.Output.Attempt ||
		got.Output.Verified != from.Output.Verified || !slices.Equal(got.Output.Warnings, from.Output.Warnings) {
		t.Fatalf("cached output %+v, want %+v", got.Output, from.Output)
	}
	if got.FinishedAt == nil {
		t.Fatalf("job %s succeeded without finished_at", got.ID)
	}
}

// testCacheHitAtCreate: a create with the input_sha256 of an input converted the same way is
// answered succeeded at once with the cached output, charged its cent in the same
// transaction; another base, another hash or none is a plain created job.
func testCacheHitAtCreate(t *testing.T, newStore NewFunc) {
	var mu sync.Mutex
	var hooked []store.Job
	f := newFixture(t, newStore, Options{OnFinished: func(j store.Job) {
		mu.Lock()
		hooked = append(hooked, j)
		mu.Unlock()
	}}, 100)
	first := f.convert(f.cached("base-a", sha(1)), sha(1), 7)
	if first.Output.Cached || first.Output.Object != "" {
		t.Fatalf("converted job's output %+v: want neither cached nor another's", first.Output)
	}
	e, ok, err := f.s.CachedOutput(store.CacheKey("base-a", sha(1)))
	if err != nil || !ok || e.Object != first.ID || e.Output.Bytes != 7 {
		t.Fatalf("cache entry %+v, %v, %v; want %s's 7 bytes", e, ok, err, first.ID)
	}
	hit := f.cached("base-a", sha(1))
	wantHit(t, hit, first)
	wantHit(t, f.get(hit.ID), first)
	mu.Lock()
	if len(hooked) != 2 || hooked[1].ID != hit.ID {
		t.Errorf("FinishHook saw %v, want the converted job and the hit", ids(hooked))
	}
	mu.Unlock()
	for _, miss := range []store.Job{f.cached("base-b", sha(1)), f.cached("base-a", sha(2)), f.create(10)} {
		if miss.Status != store.StatusCreated || miss.Output != nil {
			t.Fatalf("job %s: %s with output %+v, want a plain created job", miss.ID, miss.Status, miss.Output)
		}
	}
	if held, err := f.s.OutputHeld(first.ID); err != nil || !held {
		t.Fatalf("OutputHeld(%s) = %v, %v; want true (a job uses it)", first.ID, held, err)
	}
	st, err := f.s.CacheStats()
	if err != nil || st.Entries != 1 || st.Bytes != 7 {
		t.Fatalf("CacheStats %+v, %v; want 1 entry of 7 bytes", st, err)
	}
	f.checkLedger(3, 2)
}

// testCacheChecksumMismatch: a start whose upload's SHA-256 differs from input_sha256 cancels
// the job and releases its cent, as a size mismatch does; a start with the right hash queues.
func testCacheChecksumMismatch(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	job := f.cached("base", sha(1))
	got, err := f.s.StartSealedJob(f.acct.ID, job.ID, store.Upload{Size: 10, SHA256: sha(2)})
	wantErr(t, err, store.ErrChecksumMismatch, "start with other bytes")
	if got.Status != store.StatusCancelled || !strings.Contains(got.ErrorMessage, sha(2)) || !strings.Contains(got.ErrorMessage, sha(1)) {
		t.Fatalf("job %s, message %q; want cancelled naming both hashes", got.Status, got.ErrorMessage)
	}
	f.checkLedger(0, 0)
	again, err := f.s.StartSealedJob(f.acct.ID, job.ID, store.Upload{Size: 10, SHA256: sha(1)})
	if err != nil || again.Status != store.StatusCancelled {
		t.Fatalf("start again: %v, %s; want the cancelled job unchanged", err, again.Status)
	}
	ok := f.cached("", sha(3)) // input_sha256 without the cache: still checked
	if got, err := f.s.StartSealedJob(f.acct.ID, ok.ID, store.Upload{Size: 10, SHA256: sha(3)}); err != nil || got.Status != store.StatusQueued {
		t.Fatalf("start with the right bytes: %v, %s", err, got.Status)
	}
	f.checkLedger(1, 0)
}

// testCacheHitAtStartAndClaim: without input_sha256, the upload's hash found at start answers
// the job from the cache; a job queued before its twin finished is answered at claim, and the
// claim moves on to the next job.
func testCacheHitAtStartAndClaim(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	first := f.cached("base", "")
	waiting := f.cached("base", "")
	other := f.create(10)
	if _, err := f.s.StartSealedJob(f.acct.ID, first.ID, store.Upload{Size: 10, SHA256: sha(1)}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.StartSealedJob(f.acct.ID, waiting.ID, store.Upload{Size: 10, SHA256: sha(1)}); err != nil || got.Status != store.StatusQueued {
		t.Fatalf("start of the twin: %v, %s; want queued (nothing cached yet)", err, got.Status)
	}
	f.start(other)
	claimed := f.claim()
	if claimed.ID != first.ID || claimed.InputSHA256 != sha(1) {
		t.Fatalf("claimed %s (input_sha256 %q), want %s with the upload's hash", claimed.ID, claimed.InputSHA256, first.ID)
	}
	done, err := f.s.FinishJob(first.ID, claimed.Attempt, success(9))
	if err != nil {
		t.Fatal(err)
	}
	next := f.claim()
	if next.ID != other.ID {
		t.Fatalf("claim took %s, want %s: the twin is answered from the cache on the way", next.ID, other.ID)
	}
	wantHit(t, f.get(waiting.ID), done)
	late := f.cached("base", "")
	got, err := f.s.StartSealedJob(f.acct.ID, late.ID, store.Upload{Size: 10, SHA256: sha(1)})
	if err != nil {
		t.Fatal(err)
	}
	wantHit(t, got, done)
	f.checkLedger(1, 3)
}

// testCacheIdenticalJobs: N identical jobs queued at once cost one conversion and N cents;
// concurrent claimers never convert a job the cache can answer.
func testCacheIdenticalJobs(t *testing.T, newStore NewFunc) {
	const n = 12
	f := newFixture(t, newStore, Options{}, 100)
	jobs := make([]store.Job, n)
	for i := range jobs {
		jobs[i] = f.cached("base", sha(1))
		if _, err := f.s.StartSealedJob(f.acct.ID, jobs[i].ID, store.Upload{Size: 10, SHA256: sha(1)}); err != nil {
			t.Fatal(err)
		}
	}
	first := f.claim()
	if _, err := f.s.FinishJob(first.ID, first.Attempt, success(5)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var converted []string
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				job, ok, err := f.s.ClaimJob()
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				converted = append(converted, job.ID)
				mu.Unlock()
				if _, err := f.s.FinishJob(job.ID, job.Attempt, success(5)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if len(converted) != 0 {
		t.Fatalf("%d more conversions (%v), want none: the cache answers every twin", len(converted), converted)
	}
	hits := 0
	for _, j := range jobs {
		got := f.get(j.ID)
		if got.Status != store.StatusSucceeded {
			t.Fatalf("job %s is %s", j.ID, got.Status)
		}
		if got.Output.Cached {
			hits++
		}
	}
	if hits != n-1 {
		t.Fatalf("%d hits, want %d", hits, n-1)
	}
	f.checkLedger(0, n)
}

// testCacheOff: a job without a cache base neither stores nor takes a cached output, even
// with input_sha256.
func testCacheOff(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	done := f.convert(f.cached("", sha(1)), sha(1), 4)
	if st, err := f.s.CacheStats(); err != nil || st.Entries != 0 {
		t.Fatalf("CacheStats %+v, %v; want empty", st, err)
	}
	if held, err := f.s.OutputHeld(done.ID); err != nil || held {
		t.Fatalf("OutputHeld = %v, %v; want false", held, err)
	}
	if again := f.cached("", sha(1)); again.Status != store.StatusCreated {
		t.Fatalf("job without the cache is %s", again.Status)
	}
	// Object storage that reports no hash at start: input_sha256 stays unchecked, and the job
	// leaves the cache instead of storing an output under a hash nobody verified.
	unchecked := f.convert(f.cached("base", sha(2)), "", 4)
	if st, err := f.s.CacheStats(); err != nil || st.Entries != 0 {
		t.Fatalf("CacheStats after a job with an unchecked input_sha256: %+v, %v; want empty", st, err)
	}
	if got := f.get(unchecked.ID); got.CacheBase != "" {
		t.Fatalf("job with an unchecked input_sha256 keeps cache base %q", got.CacheBase)
	}
	f.checkLedger(1, 2)
}

// testCacheLRU: past CacheMaxBytes the least recently used entries go; a hit makes an entry
// recent; an evicted entry's output stays its job's, no longer held.
func testCacheLRU(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{CacheMaxBytes: 10}, 100)
	a := f.convert(f.cached("base", sha(1)), sha(1), 4)
	b := f.convert(f.cached("base", sha(2)), sha(2), 4)
	wantHit(t, f.cached("base", sha(1)), a) // a is now the more recent
	c := f.convert(f.cached("base", sha(3)), sha(3), 4)
	if e, ok, err := f.s.CachedOutput(store.CacheKey("base", sha(3))); err != nil || !ok || e.Object != c.ID {
		t.Fatalf("newest entry %+v, %v, %v; want %s's", e, ok, err, c.ID)
	}
	for key, want := range map[string]bool{sha(1): true, sha(2): false, sha(3): true} {
		if _, ok, err := f.s.CachedOutput(store.CacheKey("base", key)); err != nil || ok != want {
			t.Errorf("entry of %s: %v, %v; want %v", key[56:], ok, err, want)
		}
	}
	if held, err := f.s.OutputHeld(b.ID); err != nil || held {
		t.Errorf("evicted output held: %v, %v", held, err)
	}
	if held, err := f.s.OutputHeld(a.ID); err != nil || !held {
		t.Errorf("output a hit uses not held: %v, %v", held, err)
	}
	if st, err := f.s.CacheStats(); err != nil || st.Entries != 2 || st.Bytes != 8 {
		t.Fatalf("CacheStats %+v, %v; want 2 entries, 8 bytes", st, err)
	}
	big := f.convert(f.cached("base", sha(4)), sha(4), 11) // over the bound alone: not cached
	if held, err := f.s.OutputHeld(big.ID); err != nil || held {
		t.Errorf("an output over --cache-max-bytes was cached")
	}
	if dead, err := f.s.DeadOutputs(); err != nil || len(dead) != 0 {
		t.Errorf("DeadOutputs %v, %v; want none while every job lives", dead, err)
	}
	f.checkLedger(0, 5)
}

// testCacheReferences: retention deletes jobs, never an output another job uses; the entry
// of an output lives while a job uses it (a hit after the converting job expired still gets
// it), and the last job's expiry makes the output dead, for the sweeper, and drops its entry,
// so no file outlives every job's expires_at.
func testCacheReferences(t *testing.T, newStore NewFunc) {
	const retention = 2 * time.Second
	f := newFixture(t, newStore, Options{Retention: retention}, 100)
	first := f.convert(f.cached("base", sha(1)), sha(1), 6)
	hit := f.cached("base", sha(1))
	wantHit(t, hit, first)
	// The converting job expires first (limit 1: the earliest expiry).
	if ids := f.expireUntil(1, first.ID); !slices.Equal(ids, []string{first.ID}) {
		t.Fatalf("ExpireJobs(1) = %v; want [%s]", ids, first.ID)
	}
	if held, err := f.s.OutputHeld(first.ID); err != nil || !held {
		t.Fatalf("OutputHeld after its job expired = %v, %v; want true (a hit uses it)", held, err)
	}
	if ok, err := f.s.JobExists(first.ID); err != nil || !ok {
		t.Fatalf("JobExists(%s) = %v, %v; want true while its output is held", first.ID, ok, err)
	}
	if gone, err := f.s.Unowned([]string{first.ID}); err != nil || len(gone) != 0 {
		t.Fatalf("Unowned(%s) = %v, %v; want none while its output is held", first.ID, gone, err)
	}
	late := f.cached("base", sha(1)) // the entry lives on with the output
	if late.Output == nil || late.Output.Object != first.ID {
		t.Fatalf("late hit %+v, want the expired job's output", late.Output)
	}
	if dead, err := f.s.DeadOutputs(); err != nil || len(dead) != 0 {
		t.Fatalf("DeadOutputs %v, %v; want none while jobs use it", dead, err)
	}
	f.expireUntil(100, hit.ID, late.ID)
	dead, err := f.s.DeadOutputs()
	if err != nil || !slices.Equal(dead, []string{first.ID}) {
		t.Fatalf("DeadOutputs %v, %v; want [%s]", dead, err, first.ID)
	}
	if _, ok, err := f.s.CachedOutput(store.CacheKey("base", sha(1))); err != nil || ok {
		t.Fatalf("entry after its output's last job expired: %v, %v; want gone", ok, err)
	}
	if ok, err := f.s.JobExists(first.ID); err != nil || ok {
		t.Fatalf("JobExists(%s) = %v, %v; want false once nothing holds it", first.ID, ok, err)
	}
	if gone, err := f.s.Unowned([]string{first.ID}); err != nil || !slices.Equal(gone, []string{first.ID}) {
		t.Fatalf("Unowned(%s) = %v, %v; want it once nothing holds it", first.ID, gone, err)
	}
	if err := f.s.ForgetDeadOutputs(dead); err != nil {
		t.Fatal(err)
	}
	if dead, err := f.s.DeadOutputs(); err != nil || len(dead) != 0 {
		t.Fatalf("DeadOutputs after forgetting: %v, %v", dead, err)
	}
	// A converted job that no hit used takes its entry with it.
	alone := f.convert(f.cached("base", sha(2)), sha(2), 3)
	f.expireUntil(100, alone.ID)
	if st, err := f.s.CacheStats(); err != nil || st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("CacheStats after every job expired: %+v, %v; want empty", st, err)
	}
	if err := f.s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}

// testCacheSingleFlight: a claim of a job whose twin is converting names the twin (WaitFor);
// FinishFromCache answers it once the twin's output is cached, and makes it the converting
// job when the twin failed.
func testCacheSingleFlight(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	var jobs []store.Job
	for range 3 {
		j := f.cached("base", sha(1))
		if _, err := f.s.StartSealedJob(f.acct.ID, j.ID, store.Upload{Size: 10, SHA256: sha(1)}); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	a, b := f.claim(), f.claim()
	if a.WaitFor != "" || b.WaitFor != a.ID {
		t.Fatalf("claims: %s waits for %q, %s waits for %q; want the second to wait for the first", a.ID, a.WaitFor, b.ID, b.WaitFor)
	}
	got, hit, err := f.s.FinishFromCache(b.ID, b.Attempt)
	if err != nil || hit || got.WaitFor != a.ID {
		t.Fatalf("FinishFromCache while the twin converts: hit %v, waits for %q, %v", hit, got.WaitFor, err)
	}
	// The twin fails: the waiting job becomes the one that converts.
	if _, err := f.s.FinishJob(a.ID, a.Attempt, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "bad"}); err != nil {
		t.Fatal(err)
	}
	got, hit, err = f.s.FinishFromCache(b.ID, b.Attempt)
	if err != nil || hit || got.WaitFor != "" {
		t.Fatalf("FinishFromCache after the twin failed: hit %v, waits for %q, %v; want to convert", hit, got.WaitFor, err)
	}
	c := f.claim()
	if c.WaitFor != b.ID {
		t.Fatalf("third job waits for %q, want %s (now converting)", c.WaitFor, b.ID)
	}
	done, err := f.s.FinishJob(b.ID, b.Attempt, success(3))
	if err != nil {
		t.Fatal(err)
	}
	got, hit, err = f.s.FinishFromCache(c.ID, c.Attempt)
	if err != nil || !hit {
		t.Fatalf("FinishFromCache after the twin succeeded: hit %v, %v", hit, err)
	}
	wantHit(t, got, done)
	if _, _, err := f.s.FinishFromCache(c.ID, c.Attempt); !errors.Is(err, store.ErrInvalidState) {
		t.Fatalf("FinishFromCache of a finished job: %v, want ErrInvalidState", err)
	}
	f.checkLedger(0, 2)
}

// testCacheHitCents: with a price for hits (--cache-hit-cents), a job answered from the cache
// at create, start or claim is charged it instead of 1 cent, reserved and spent in the
// transaction that answers it; a free hit (0) spends nothing; a price above 1 that the cap
// cannot take beside the spend and the other reservations is no hit, and the job converts for
// its 1 cent. Retention deleting the jobs keeps the month's spend and the ledger exact.
func testCacheHitCents(t *testing.T, newStore NewFunc) {
	t.Run("free", func(t *testing.T) {
		t.Parallel()
		free := int64(0)
		f := newFixture(t, newStore, Options{CacheHitCents: &free, Retention: 3 * time.Second}, 100)
		first := f.convert(f.cached("base", sha(1)), sha(1), 4) // 1 cent
		atCreate := f.cached("base", sha(1))
		wantHit(t, atCreate, first)
		if atCreate.Charge() != 0 {
			t.Fatalf("hit at create charged %d cents, want 0", atCreate.Charge())
		}
		atStart, err := f.s.StartSealedJob(f.acct.ID, f.cached("base", "").ID, store.Upload{Size: 10, SHA256: sha(1)})
		if err != nil {
			t.Fatal(err)
		}
		wantHit(t, atStart, first)
		f.checkLedger(0, 1)
		f.expireUntil(100, first.ID, atCreate.ID, atStart.ID)
		if acct, err := f.s.Account(f.acct.ID); err != nil || acct.MonthlySpend[store.MonthOf(*first.FinishedAt)] != 1 {
			t.Fatalf("spend after retention: %+v, %v; want the conversion's 1 cent", acct.MonthlySpend, err)
		}
		if err := f.s.VerifyLedger(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("dear", func(t *testing.T) {
		t.Parallel()
		price := int64(3)
		f := newFixture(t, newStore, Options{CacheHitCents: &price}, 6)
		// A twin queued before the conversion is answered at claim.
		first := f.cached("base", "")
		twin := f.cached("base", "")
		for _, j := range []store.Job{first, twin} {
			if _, err := f.s.StartSealedJob(f.acct.ID, j.ID, store.Upload{Size: 10, SHA256: sha(1)}); err != nil {
				t.Fatal(err)
			}
		}
		claimed := f.claim()
		done, err := f.s.FinishJob(claimed.ID, claimed.Attempt, success(4))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := f.s.ClaimJob(); err != nil || ok {
			t.Fatalf("claim: %v, %v; want the twin answered from the cache on the way and nothing to convert", ok, err)
		}
		wantHit(t, f.get(twin.ID), done)
		f.checkLedger(0, 1+3)
		// 4 spent: a hit at 3 cents would make 7 of a 6 cent cap, so the job converts (1 cent).
		over := f.cached("base", sha(1))
		if over.Status != store.StatusCreated || over.Output != nil {
			t.Fatalf("create over the cap at the hit's price: %s, %+v; want a created job that converts", over.Status, over.Output)
		}
		f.checkLedger(1, 4)
		if _, err := f.s.CancelJob(f.acct.ID, over.ID); err != nil {
			t.Fatal(err)
		}
		f.checkLedger(0, 4)
	})
}

// expireUntil runs ExpireJobs(limit) until every job of ids was deleted (their expiry has to
// come first), and returns what the first pass that deleted anything deleted.
func (f *fixture) expireUntil(limit int, ids ...string) (first []string) {
	f.t.Helper()
	deadline := time.Now().Add(waitBound)
	deleted := map[string]bool{}
	for {
		got, _, err := f.s.ExpireJobs(limit)
		if err != nil {
			f.t.Fatal(err)
		}
		if first == nil && len(got) > 0 {
			first = got
		}
		for _, id := range got {
			deleted[id] = true
		}
		all := true
		for _, id := range ids {
			all = all && deleted[id]
		}
		if all {
			return first
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("jobs %v not all expired after %v (deleted %v)", ids, waitBound, deleted)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// NodesFunc opens n stores on one fresh database, standing in for n convsvc nodes; a backend
// that one process owns alone (bbolt) returns its one store n times.
type NodesFunc func(t *testing.T, n int, o Options) []Backend

// RunCacheAcrossNodes: identical jobs (one input, one cache base) on several nodes cost one
// conversion, N-1 hits and N cents, and every start succeeds. Half of them are queued before
// the one conversion; then, at once, every node's workers answer those from the cache at
// claim while the other half are started on every node and answered at start: the hits of
// starts and claims meet on the account's row and the cache entry's, which a lock order
// other than cache.go's (pgstore) turns into deadlocks.
func RunCacheAcrossNodes(t *testing.T, open NodesFunc) {
	const nodes, n, workersPerNode = 3, 30, 2
	ss := open(t, nodes, Options{})
	acct, err := ss[0].CreateAccount("acme", 1000)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, s: ss[0], acct: acct}
	jobs := make([]store.Job, n)
	start := func(i int) (store.Job, error) {
		return ss[i%nodes].StartSealedJob(acct.ID, jobs[i].ID, store.Upload{Size: 10, SHA256: sha(1)})
	}
	for i := range jobs {
		job, _, err := ss[i%nodes].CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 10,
			CacheBase: "base"}, plainRender)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		jobs[i] = job
		if i < n/2 {
			if got, err := start(i); err != nil || got.Status != store.StatusQueued {
				t.Fatalf("start %d: %v, %s; want queued (nothing cached yet)", i, err, got.Status)
			}
		}
	}
	first := f.claim()
	if _, err := f.s.FinishJob(first.ID, first.Attempt, success(5)); err != nil {
		t.Fatal(err)
	}
	var converted atomic.Int64
	converted.Add(1)
	done := make(chan struct{})
	var workers sync.WaitGroup
	for i := range nodes * workersPerNode {
		workers.Add(1)
		go func() {
			defer workers.Done()
			cacheWorker(t, ss[i%nodes], done, &converted)
		}()
	}
	var starts sync.WaitGroup
	for i := n / 2; i < n; i++ {
		starts.Add(1)
		go func() {
			defer starts.Done()
			if got, err := start(i); err != nil || got.Status != store.StatusSucceeded {
				t.Errorf("start %d of %d identical jobs: %v, %s; want succeeded from the cache", i, n, err, got.Status)
			}
		}()
	}
	starts.Wait()
	if t.Failed() {
		close(done)
		workers.Wait()
		t.FailNow()
	}
	deadline := time.Now().Add(waitBound)
	hits := 0
	for _, job := range jobs {
		for {
			got := f.get(job.ID)
			if got.Finished() {
				if got.Status != store.StatusSucceeded {
					t.Fatalf("job %s is %s (%s)", got.ID, got.Status, got.ErrorMessage)
				}
				if got.Output.Cached {
					hits++
				}
				break
			}
			if time.Now().After(deadline) {
				close(done)
				workers.Wait()
				t.Fatalf("job %s still %s after %v", got.ID, got.Status, waitBound)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	close(done)
	workers.Wait()
	if c := converted.Load(); c != 1 || hits != n-1 {
		t.Fatalf("%d conversions and %d hits; want 1 and %d", c, hits, n-1)
	}
	f.checkLedger(0, n)
}

// cacheWorker claims jobs from s until done, as service's job queue does: a job whose twin
// converts waits for the twin and is answered from the cache; any other is converted (counted
// in converted) and finished with a 5 byte output.
func cacheWorker(t *testing.T, s Backend, done <-chan struct{}, converted *atomic.Int64) {
	for {
		job, ok, err := s.ClaimJob()
		if err != nil {
			t.Errorf("claim: %v", err)
			return
		}
		if !ok {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				continue
			}
		}
		for job.WaitFor != "" {
			changed, stop := s.WaitChange(job.WaitFor)
			next, hit, err := s.FinishFromCache(job.ID, job.Attempt)
			if err != nil || hit {
				stop()
				if err != nil {
					t.Errorf("finish from cache: %v", err)
				}
				break
			}
			if job.WaitFor = next.WaitFor; job.WaitFor != "" {
				select {
				case <-changed:
				case <-time.After(time.Second): // another node's change, its notification lost
				case <-done:
				}
			}
			stop()
		}
		if job.WaitFor == "" && job.Status == store.StatusRunning {
			converted.Add(1)
			if _, err := s.FinishJob(job.ID, job.Attempt, success(5)); err != nil {
				t.Errorf("finish: %v", err)
			}
		}
	}
}
