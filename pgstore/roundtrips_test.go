package pgstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// statementCounter is a pgx.QueryTracer and BatchTracer that counts the round trips the pool
// makes: a statement is one (pgx sends a cached statement as one Bind/Execute/Sync exchange,
// and BEGIN and COMMIT are statements of their own), and so is a batch.
type statementCounter struct {
	mu  sync.Mutex
	sql []string
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "convsvc_notify_all") {
		// The node's notifier, on its own goroutine, sending many requests' notifications
		// in one transaction (notifier.go): no request waits for it.
		return ctx
	}
	c.mu.Lock()
	c.sql = append(c.sql, strings.Join(strings.Fields(data.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch as the one round trip it is (its statements are written
// together and their results read together).
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	var sql []string
	for _, q := range data.Batch.QueuedQueries {
		sql = append(sql, strings.Join(strings.Fields(q.SQL), " "))
	}
	c.mu.Lock()
	c.sql = append(c.sql, "batch: "+strings.Join(sql, "; "))
	c.mu.Unlock()
	return ctx
}

func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// count runs fn and returns the statements it sent.
func (c *statementCounter) count(fn func()) []string {
	c.mu.Lock()
	c.sql = nil
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sql
}

// TestRoundTrips_PerRequest holds the round trips each hot request costs on
// PostgreSQL: a create and a start of a key the node keeps (its write gate in the
// transition's batch: keycache.go, migration 0024) are one, the same with the key's first
// write on the node (AuthenticateWrite, then the transition) two, a worker's claim and
// finish one each, a cancel one too (migration 0031's function, the gate first in its
// batch), and a GET of a job one (the key and the job in one statement: an unknown
// job takes the key again, two). The same requests through the Go transactions (what the transition
// functions replaced) are counted too, so the table in docs/benchmarks.md has both from one
// place.
func TestRoundTrips_PerRequest(t *testing.T) {
	url := testpg.NewDatabase(t)
	for _, tc := range []struct {
		name          string
		goTransitions bool
		// gated: the node keeps the key, so each write passes its gate with the write
		// (CachedWriteGate) instead of AuthenticateWrite first.
		gated                              bool
		create, start, claim, finish, read int
		// finishWebhook is a finish whose account has a webhook endpoint: the function
		// refuses (1; its batch's Sync ends the transaction: before the call batches were
		// implicit transactions, 1 more to roll it back), then runs with
		// recordWebhookEvents after it (BEGIN and the call 1, the deliveries 1, their
		// notification 1, COMMIT and the notifications 1).
		finishWebhook int
		// cancel is a cancel with its write gate (a kept key: the gate, the call and the
		// take in one batch) or after authWrite; cancelWebhook the same for an account with
		// a webhook endpoint (the call refused, then BEGIN, the gate and the call again, the
		// deliveries, their notification, COMMIT and the notifications).
		cancel, cancelWebhook int
		// cache is the same for cache-keyed jobs (cacheTrips).
		cache cacheTrips
	}{
		{"functions, key kept", false, true, 1, 1, 1, 1, 1, 5, 1, 5, cacheTrips{
			create: 1, start: 1, claim: 1, claimWait: 1, finish: 1, startHit: 1, createHit: 1, claimHit: 2, finishFromCache: 1}},
		{"functions, key's first write", false, false, 2, 2, 1, 1, 1, 5, 2, 6, cacheTrips{
			create: 2, start: 2, claim: 1, claimWait: 1, finish: 1, startHit: 2, createHit: 2, claimHit: 2, finishFromCache: 1}},
		// The Go claim's walk is 6 statements when the first account it visits has a job,
		// and 8 here: one account, which its walk reaches after wrapping around.
		{"go transactions", true, false, 8, 9, 8, 10, 1, 11, 10, 11, cacheTrips{
			create: 8, start: 10, claim: 12, claimWait: 11, finish: 13, startHit: 17, createHit: 17, claimHit: 26, finishFromCache: 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c statementCounter
			s := open(t, url, pgstore.Options{Tracer: &c})
			if tc.goTransitions {
				s.UseGoTransitions()
			}
			acct := account(t, s, 100)
			_, secret, err := s.CreateKey(acct.ID)
			if err != nil {
				t.Fatal(err)
			}
			// authWrite is what httpapi does before a write's handler: AuthenticateWrite in
			// one statement, or (before it) Authenticate and then AllowWrite; or, for a key the
			// node keeps, nothing but the gate it returns, which the write takes with it.
			authWrite := func() *store.WriteGate {
				var allowed bool
				if tc.gated {
					if _, g, ok := s.CachedWriteGate(secret, 120, time.Minute); ok {
						return g
					}
					// The key's first write on this node (the uncounted first pass) fills
					// the cache below.
				}
				if tc.goTransitions {
					key, err := s.Authenticate(secret)
					if err != nil {
						t.Fatal(err)
					}
					allowed, _, _, err = s.AllowWrite(key.ID, 120, time.Minute)
					if err != nil {
						t.Fatal(err)
					}
				} else if _, allowed, _, _, err = s.AuthenticateWrite(secret, 120, time.Minute); err != nil {
					t.Fatal(err)
				}
				if !allowed {
					t.Fatal("write refused")
				}
				return nil
			}
			// passed fails the test unless the gate a write took (if any) ran and allowed it.
			passed := func(g *store.WriteGate) {
				t.Helper()
				if g != nil && (!g.Ran || !g.Allowed) {
					t.Fatalf("write gate %+v", g)
				}
			}
			// Once first, so that every statement is prepared and every connection is warm,
			// as on a server under load.
			for i := 0; i < 3; i++ {
				var job store.Job
				finishWant := tc.finish
				if i == 2 {
					finishWant = tc.finishWebhook
					if _, err := s.CreateWebhookEndpoint(acct.ID, "https://hooks.example/"+tc.name, "whsec_roundtrips"); err != nil {
						t.Fatal(err)
					}
				}
				check := func(name string, want int, fn func()) []string {
					t.Helper()
					got := c.count(fn)
					if i >= 1 && len(got) != want {
						t.Errorf("%s: %d statements, want %d:\n%s", name, len(got), want, strings.Join(got, "\n"))
					}
					return got
				}
				// batch checks the statement of a kept key's write: one (migration 0030's
				// gated function: the gate, the call and the take of the notifications it
				// queued), one implicit transaction that its Sync commits (no BEGIN or COMMIT),
				// no savepoint, no send (notifier.go).
				batch := func(name string, got []string, call string) {
					t.Helper()
					if i < 1 || !tc.gated || tc.goTransitions || len(got) != 1 {
						return
					}
					if strings.HasPrefix(got[0], "batch: ") || !strings.Contains(got[0], call+"_gated(") {
						t.Errorf("%s's round trip:\n%s\nwant one statement calling %s_gated", name, got[0], call)
					}
				}
				created := check("create", tc.create, func() {
					g := authWrite()
					if job, _, err = s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, Gate: g},
						func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil }); err != nil {
						t.Fatal(err)
					}
					passed(g)
				})
				batch("create", created, "convsvc_create_job")
				started := check("start", tc.start, func() {
					g := authWrite()
					if job, err = s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, ETag: `"etag"`, Gate: g}); err != nil {
						t.Fatal(err)
					}
					passed(g)
				})
				batch("start", started, "convsvc_start_job")
				if job.Status != store.StatusQueued || job.Upload == nil || job.Upload.ETag != `"etag"` {
					t.Fatalf("started job %+v", job)
				}
				check("claim", tc.claim, func() {
					claimed, ok, err := s.ClaimJob()
					if err != nil || !ok || claimed.ID != job.ID || claimed.Status != store.StatusRunning {
						t.Fatalf("claim: %+v %v %v", claimed, ok, err)
					}
					job = claimed
				})
				check("finish", finishWant, func() {
					done, err := s.FinishJob(job.ID, job.Attempt, store.Outcome{Output: &store.Output{Bytes: 5, SHA256: strings.Repeat("a", 64)}})
					if err != nil || done.Status != store.StatusSucceeded {
						t.Fatalf("finish: %+v %v", done, err)
					}
				})
				// A GET of a job: the key and the job in one statement (AuthenticateJob);
				// of a job the key's account does not have, the key again on its own.
				check("get", tc.read, func() {
					key, got, jobErr, err := s.AuthenticateJob(secret, job.ID)
					if err != nil || jobErr != nil || key.AccountID != acct.ID || got.Status != store.StatusSucceeded {
						t.Fatalf("get: %+v %v %v", got, jobErr, err)
					}
				})
				// A cancel of a created job, as httpapi sends it: the key and the write's count,
				// then the cancel.
				victim, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10},
					func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
				if err != nil {
					t.Fatal(err)
				}
				cancelWant := tc.cancel
				if i == 2 {
					cancelWant = tc.cancelWebhook
				}
				check("cancel", cancelWant, func() {
					g := authWrite()
					if cancelled, err := s.CancelJobWith(acct.ID, victim.ID, g); err != nil || cancelled.Status != store.StatusCancelled {
						t.Fatalf("cancel: %+v %v", cancelled, err)
					}
					passed(g)
				})
				check("get of an unknown job", 2, func() {
					if _, _, jobErr, err := s.AuthenticateJob(secret, "job_nosuchjob"); err != nil || jobErr != store.ErrNotFound {
						t.Fatalf("get of an unknown job: %v %v", jobErr, err)
					}
				})
			}
			ledger(t, s, acct.ID, 0, 3)
			var deliveries int
			if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1`, acct.ID).Scan(&deliveries); err != nil {
				t.Fatal(err)
			}
			if deliveries != 2 {
				t.Fatalf("%d webhook deliveries recorded, want 2 (the finish and the cancel after the endpoint was made)", deliveries)
			}
			tc.cache.run(t, s, &c, authWrite, passed, tc.name)
		})
	}
}

// cacheTrips are the round trips of cache-keyed jobs' requests (a key's job with the
// conversion cache on, the default), each with the key's write window (authWrite) where the
// request is an API write: a miss's create and start, its claim and the twin's (which waits
// for it: single flight), the finish that stores the entry, a hit at start, a hit at create
// (input_sha256), a hit at claim (with the claim of the next job, none, that follows it in a
// transaction of its own) and the waiting twin's FinishFromCache.
type cacheTrips struct {
	create, start, claim, claimWait, finish, startHit, createHit, claimHit, finishFromCache int
}

func (want cacheTrips) run(t *testing.T, s *pgstore.Store, c *statementCounter, authWrite func() *store.WriteGate, passed func(*store.WriteGate), name string) {
	t.Helper()
	acct := account(t, s, 100)
	const base = "png>gif;roundtrips"
	created := func(p store.CreateJobParams) store.Job {
		t.Helper()
		p.AccountID, p.InputFormat, p.TargetFormat, p.InputBytes, p.CacheBase = acct.ID, "png", "gif", 10, base
		job, _, err := s.CreateJob(p, func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
		if err != nil {
			t.Fatal(err)
		}
		passed(p.Gate)
		return job
	}
	spent := int64(0)
	for i := 0; i < 2; i++ { // once first, so that every statement is prepared
		sha := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(name, i)))) // the subtests share the database
		check := func(name string, want int, fn func()) {
			t.Helper()
			got := c.count(fn)
			if i >= 1 && len(got) != want {
				t.Errorf("cache %s: %d statements, want %d:\n%s", name, len(got), want, strings.Join(got, "\n"))
			}
		}
		var job, twin, hit store.Job
		var err error
		start := func(j store.Job, g *store.WriteGate) store.Job {
			t.Helper()
			j, err := s.StartSealedJob(acct.ID, j.ID, store.Upload{Size: 10, ETag: `"etag"`, SHA256: sha, Gate: g})
			if err != nil {
				t.Fatal(err)
			}
			passed(g)
			return j
		}
		claim := func(wantID string) store.Job {
			t.Helper()
			claimed, ok, err := s.ClaimJob()
			if err != nil || !ok || claimed.ID != wantID || claimed.Status != store.StatusRunning {
				t.Fatalf("claim: %+v %v %v, want %s running", claimed, ok, err, wantID)
			}
			return claimed
		}
		check("miss create", want.create, func() { job = created(store.CreateJobParams{Gate: authWrite()}) })
		check("miss start", want.start, func() { job = start(job, authWrite()) })
		if job.Status != store.StatusQueued || store.CacheKeyOf(job) == "" {
			t.Fatalf("started cache-keyed job %+v", job)
		}
		twin = start(created(store.CreateJobParams{}), nil)
		check("claim", want.claim, func() { job = claim(job.ID) })
		check("claim of a twin", want.claimWait, func() { twin = claim(twin.ID) })
		if job.WaitFor != "" || twin.WaitFor != job.ID {
			t.Fatalf("claimed %s waits for %q, its twin %s for %q; want the twin to wait for the first", job.ID, job.WaitFor, twin.ID, twin.WaitFor)
		}
		check("finish storing the entry", want.finish, func() {
			if job, err = s.FinishJob(job.ID, job.Attempt, store.Outcome{Output: &store.Output{Bytes: 5, SHA256: strings.Repeat("b", 64)}}); err != nil {
				t.Fatal(err)
			}
		})
		if e, ok, err := s.CachedOutput(store.CacheKeyOf(job)); err != nil || !ok || e.Object != job.ID {
			t.Fatalf("cache entry after the finish: %+v %v %v", e, ok, err)
		}
		hit = created(store.CreateJobParams{})
		check("hit at start", want.startHit, func() { hit = start(hit, authWrite()) })
		check("hit at create", want.createHit, func() {
			hit = created(store.CreateJobParams{InputSHA256: sha, Gate: authWrite()})
		})
		if hit.Status != store.StatusSucceeded || hit.Output == nil || !hit.Output.Cached || hit.Output.Object != job.ID {
			t.Fatalf("hit at create: %+v", hit)
		}
		queued := created(store.CreateJobParams{InputSHA256: sha, SourceURL: "https://example.com/in.png"})
		check("hit at claim", want.claimHit, func() {
			if claimed, ok, err := s.ClaimJob(); err != nil || ok {
				t.Fatalf("claim after the hit: %+v %v %v, want nothing left to claim", claimed, ok, err)
			}
		})
		if queued, err = s.Job(acct.ID, queued.ID); err != nil || queued.Status != store.StatusSucceeded || !queued.Output.Cached {
			t.Fatalf("job answered at claim: %+v %v", queued, err)
		}
		check("finish from cache", want.finishFromCache, func() {
			if twin, _, err = s.FinishFromCache(twin.ID, twin.Attempt); err != nil || twin.Status != store.StatusSucceeded {
				t.Fatalf("finish from cache: %+v %v", twin, err)
			}
		})
		spent += 5
	}
	ledger(t, s, acct.ID, 0, spent)
}
