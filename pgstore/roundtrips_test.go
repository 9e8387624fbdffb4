package pgstore_test

import (
	"context"
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
// PostgreSQL: a create and a start are one for the key and its write window and one for the
// transition, a worker's claim and finish one each. The same requests through the Go
// transactions (what the transition functions replaced) are counted too, so the table in
// docs/benchmarks.md has both from one place.
func TestRoundTrips_PerRequest(t *testing.T) {
	url := testpg.NewDatabase(t)
	for _, tc := range []struct {
		name                               string
		goTransitions                      bool
		create, start, claim, finish, read int
		// finishWebhook is a finish whose account has a webhook endpoint: the function
		// refuses (1, and 1 to roll its transaction back), then runs with
		// recordWebhookEvents after it (BEGIN and the call 1, the deliveries 1, their
		// notification 1, COMMIT and the notifications 1).
		finishWebhook int
	}{
		{"functions", false, 2, 2, 1, 1, 1, 6},
		// The Go claim's walk is 6 statements when the first account it visits has a job,
		// and 8 here: one account, which its walk reaches after wrapping around.
		{"go transactions", true, 8, 9, 8, 10, 1, 11},
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
			// one statement, or (before it) Authenticate and then AllowWrite.
			authWrite := func() {
				var allowed bool
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
				check := func(name string, want int, fn func()) {
					t.Helper()
					got := c.count(fn)
					if i >= 1 && len(got) != want {
						t.Errorf("%s: %d statements, want %d:\n%s", name, len(got), want, strings.Join(got, "\n"))
					}
				}
				check("create", tc.create, func() {
					authWrite()
					if job, _, err = s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10},
						func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil }); err != nil {
						t.Fatal(err)
					}
				})
				check("start", tc.start, func() {
					authWrite()
					if job, err = s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, ETag: `"etag"`}); err != nil {
						t.Fatal(err)
					}
				})
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
				check("read", tc.read, func() {
					if _, err := s.Job(acct.ID, job.ID); err != nil {
						t.Fatal(err)
					}
				})
			}
			ledger(t, s, acct.ID, 0, 3)
			var deliveries int
			if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1`, acct.ID).Scan(&deliveries); err != nil {
				t.Fatal(err)
			}
			if deliveries != 1 {
				t.Fatalf("%d webhook deliveries recorded, want 1 (the finish after the endpoint was made)", deliveries)
			}
		})
	}
}
