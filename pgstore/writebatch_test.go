package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// batchTracer counts the write batches a Store sends (pgx batches of more than one gated
// create or start, writebatch.go) and the SQLSTATE of each that failed.
type batchTracer struct {
	mu       sync.Mutex
	batches  int      // batches of two writes or more
	writes   int      // the writes in them
	failures []string // a failed batch's SQLSTATE (or error)
}

func (c *batchTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *batchTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

type batchKey struct{}

func (c *batchTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	n := 0
	for _, q := range data.Batch.QueuedQueries {
		if strings.Contains(q.SQL, "_batched(") || strings.Contains(q.SQL, "_gated(") {
			n++
		}
	}
	if n > 1 {
		c.mu.Lock()
		c.batches++
		c.writes += n
		c.mu.Unlock()
	}
	return context.WithValue(ctx, batchKey{}, n)
}

func (c *batchTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *batchTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	if n, _ := ctx.Value(batchKey{}).(int); n < 2 || data.Err == nil {
		return
	}
	code := data.Err.Error()
	var pgErr *pgconn.PgError
	if errors.As(data.Err, &pgErr) {
		code = pgErr.Code
	}
	c.mu.Lock()
	c.failures = append(c.failures, code)
	c.mu.Unlock()
}

// TestWriteBatch_ConcurrentWritesAnswerAsAlone: creates and starts of many accounts, sent
// at once by 48 goroutines to a node that sends two write batches at a time, go in
// batches, and each answers what it would alone: a create is created; a start queues (its
// key finds no cache entry) or finishes from the cache (a hit, which
// convsvc_start_job_batched leaves to its own call after the batch); a start with the wrong
// size cancels its job with store.ErrSizeMismatch; a create past its account's cap (a
// statement that fails inside a batch, which rolls the batch back) is store.ErrLimitReached,
// and its batch's other writes then run alone and succeed. Every write counts once in its
// key's window, whatever path it took; the ledger holds; and no batch fails but those the
// capped account's creates rolled back (no deadlock between batches: one write an account,
// in the accounts' order). Fails with the batches' order or their one-write-an-account rule
// dropped (deadlocks), a rolled-back batch's writes answered as committed, or a start left
// to its own call counted again.
func TestWriteBatch_ConcurrentWritesAnswerAsAlone(t *testing.T) {
	url := testpg.NewDatabase(t)
	var tr batchTracer
	s := open(t, url, pgstore.Options{WriteBatches: 2, Tracer: &tr})
	const (
		accounts = 8
		keysEach = 3
		workers  = 48
		rounds   = 12
		base     = "png>gif;writebatch"
		limit    = 100000
		window   = time.Hour
	)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt,
			output_verified, last_used)
		VALUES (convsvc_cache_key($1, 'hit'), 'job_writebatch_cached', 5, 'out', 1, true, now())`, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE cache_totals SET entries = entries + 1, bytes = bytes + 5`); err != nil {
		t.Fatal(err)
	}
	type key struct {
		account, secret, id string
	}
	var keys []key
	var accts []string
	for a := 0; a < accounts; a++ {
		acct := account(t, s, 1000000)
		accts = append(accts, acct.ID)
		for k := 0; k < keysEach; k++ {
			apiKey, secret, err := s.CreateKey(acct.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The key's first write on the node authenticates it and counts one write, so
			// that every write below takes its gate with it.
			if _, _, _, _, err := s.AuthenticateWrite(secret, limit, window); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, key{acct.ID, secret, apiKey.ID})
		}
	}
	capped := account(t, s, 0)
	cappedKey, cappedSecret, err := s.CreateKey(capped.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := s.AuthenticateWrite(cappedSecret, limit, window); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, key{capped.ID, cappedSecret, cappedKey.ID})

	gate := func(secret string) *store.WriteGate {
		_, g, ok := s.CachedWriteGate(secret, limit, window)
		if !ok {
			t.Error("key not kept by the node")
			return nil
		}
		return g
	}
	var mu sync.Mutex
	writes := map[string]int{}       // key id -> writes sent with it
	hits := map[string]int64{}       // account -> starts answered from the cache
	unfinished := map[string]int64{} // account -> jobs created and not finished
	var errs []string
	fail := func(format string, args ...any) {
		mu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// run sends rounds of writes from every worker at once. Without mixed, each round is a
	// create and a start that queues: no write of the phase fails, and no transaction of
	// another request holds a row no account owns, so any batch that fails (a deadlock, or a
	// lock wait past convsvc's lock_timeout) is the batches' own lock order's fault. With
	// mixed, a quarter of the starts hit the cache, a quarter have the wrong size, and the
	// capped account's creates fail inside their batches.
	run := func(mixed bool) {
		var ready, wg sync.WaitGroup
		begin := make(chan struct{})
		for w := 0; w < workers; w++ {
			ready.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ready.Done()
				<-begin
				for r := 0; r < rounds; r++ {
					k := keys[(w+r*workers)%len(keys)]
					if k.account == capped.ID {
						if !mixed {
							continue
						}
						_, _, err := s.CreateJob(store.CreateJobParams{AccountID: k.account, InputFormat: "png", TargetFormat: "gif",
							InputBytes: 10, CacheBase: base, Gate: gate(k.secret)}, func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
						if !errors.Is(err, store.ErrLimitReached) {
							fail("create past the cap: %v, want store.ErrLimitReached", err)
						}
						mu.Lock()
						writes[k.id]++
						mu.Unlock()
						continue
					}
					job, _, err := s.CreateJob(store.CreateJobParams{AccountID: k.account, InputFormat: "png", TargetFormat: "gif",
						InputBytes: 10, CacheBase: base, Gate: gate(k.secret)}, func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
					if err != nil || job.Status != store.StatusCreated {
						fail("create: %+v %v", job, err)
						continue
					}
					kind := 0
					if mixed {
						kind = r % 4
					}
					up := store.Upload{Size: 10, ETag: `"e"`, SHA256: fmt.Sprintf("miss-%t-%d-%d", mixed, w, r), Gate: gate(k.secret)}
					switch kind {
					case 1:
						up.SHA256 = "hit"
					case 3:
						up.Size = 11
					}
					started, err := s.StartSealedJob(k.account, job.ID, up)
					mu.Lock()
					writes[k.id] += 2
					switch kind {
					case 1:
						if err != nil || started.Status != store.StatusSucceeded || started.Output == nil || !started.Output.Cached {
							errs = append(errs, fmt.Sprintf("start that hits: %+v %v, want succeeded from the cache", started, err))
						}
						hits[k.account]++
					case 3:
						if !errors.Is(err, store.ErrSizeMismatch) || started.Status != store.StatusCancelled {
							errs = append(errs, fmt.Sprintf("start with the wrong size: %s %v, want cancelled with store.ErrSizeMismatch", started.Status, err))
						}
					default:
						if err != nil || started.Status != store.StatusQueued || started.InputSHA256 != up.SHA256 {
							errs = append(errs, fmt.Sprintf("start: %+v %v, want queued", started, err))
						}
						unfinished[k.account]++
					}
					mu.Unlock()
				}
			}()
		}
		ready.Wait()
		close(begin)
		wg.Wait()
		for _, e := range errs[:min(len(errs), 10)] {
			t.Error(e)
		}
		if len(errs) > 0 {
			t.Fatalf("mixed %t: %d writes answered wrong", mixed, len(errs))
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.batches == 0 {
			t.Fatalf("mixed %t: no write batch of two writes or more was sent", mixed)
		}
		t.Logf("mixed %t: %d batches of %d writes, failed: %v", mixed, tr.batches, tr.writes, tr.failures)
		for _, code := range tr.failures {
			if !mixed || code != "CV403" && code != "55P03" {
				t.Errorf("mixed %t: a batch failed with %s; want none (mixed: only CV403 from the capped account's creates, or 55P03, the batches' lock_timeout)", mixed, code)
			}
		}
		tr.batches, tr.writes, tr.failures = 0, 0, nil
	}
	run(false)
	run(true)
	if s.Retried() != 0 {
		t.Errorf("%d transactions ran again after a deadlock", s.Retried())
	}
	for _, k := range keys {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT cardinality(times) FROM rate_windows WHERE key_id = $1`, k.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := 1 + writes[k.id]; n != want {
			t.Errorf("key %s: %d writes counted, want %d (each once, and AuthenticateWrite's)", k.id, n, want)
		}
	}
	for _, a := range accts {
		ledger(t, s, a, unfinished[a], hits[a])
	}
	ledger(t, s, capped.ID, 0, 0)
}
