package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/store"
)

// The hot transitions (create, start, claim, finish) are each one statement: a call of a
// server-side function, which does in one round trip what the Go transaction of the same
// method does in 6 to 14. Migration 0015 made them; 0019 added the conversion cache (a hit at
// create, start or claim, a claim's single flight, a finish's entry and eviction) as
// overloads with more arguments, which are the ones called here; 0021 made both claim
// functions call one walk (convsvc_claim_walk). A function raises SQLSTATE
// CVFB0, having changed nothing, for the cases it leaves to Go (a size or checksum mismatch at
// start, an expired job at the head of the queue or at its finish, a finish
// that completes a batch, ...), and the method then runs its Go transaction: the semantics are that
// transaction's either way.

// errFallback says a transition function left the case to the Go transaction.
var errFallback = errors.New("transition left to the Go transaction")

// errDeliveries says a transition function would record webhook deliveries of the job it
// finishes, which it leaves to Go (recordWebhookEvents encodes the job).
var errDeliveries = errors.New("finish records webhook deliveries")

// transitionErr maps a transition function's SQLSTATE to store's sentinels; other errors are
// returned as they are.
func transitionErr(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "CVFB0":
		return errFallback
	case "CVWH0":
		return errDeliveries
	case "CV404":
		return store.ErrNotFound
	case "CV403":
		return fmt.Errorf("%w: %s", store.ErrLimitReached, pgErr.Message)
	case "CV429":
		return fmt.Errorf("%w: %s", store.ErrQueueFull, pgErr.Message)
	case "CV409":
		return fmt.Errorf("%w: %s", store.ErrInvalidState, pgErr.Message)
	case "CV400":
		return fmt.Errorf("%w: %s", store.ErrInvalidArgument, pgErr.Message)
	}
	return err
}

// retryable reports whether PostgreSQL aborted a statement for a serialization failure or a
// deadlock, which running it again resolves (as Store.tx does for transactions).
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// callJob runs a transition function that returns at most one job (SELECT jobCols FROM
// fn(...)) in one round trip: the call and convsvc_take_notifies() (the notifications it
// queued, which the node's notifier sends after the commit, with other calls', in a
// transaction of their own: migration 0028, notifier.go) as one batch, one implicit
// transaction that the batch's Sync commits. With then, BEGIN and the call
// go first, then runs in the same transaction with the job the call returned (the writes
// that Go encodes, such as webhook deliveries), and COMMIT and the notifications follow: two
// round trips and then's. It runs it all again (up to 5 times) when PostgreSQL aborted it for
// a deadlock. No row is store.ErrNotFound.
func (s *Store) callJob(ctx context.Context, then func(context.Context, pgx.Tx, store.Job) error, sql string, args ...any) (store.Job, error) {
	return s.callJobExtra(ctx, then, nil, sql, args...)
}

// callJobExtra is callJob for a statement whose row has columns after the job's, scanned
// into extra.
func (s *Store) callJobExtra(ctx context.Context, then func(context.Context, pgx.Tx, store.Job) error, extra []any, sql string, args ...any) (store.Job, error) {
	return s.callGated(ctx, nil, false, then, extra, nil, sql, args...)
}

// callGated is callJobExtra with a request's write gate (keycache.go): while g is pending, the
// batch runs it first, as the gate; the call; the payloads' take, still one round trip and
// one transaction. A refusal is g's error (store.ErrUnauthorized, store.ErrRateLimited) with
// nothing written. When the call (or then) fails, its transaction rolls back with the gate's
// count, and the gate then runs on its own (passGate, one more round trip, failures only):
// the write counts once, at that moment, and a refusal there is the answer (429 before
// 400). A failure that the caller takes on (errDeliveries' second call, errFallback's Go
// transaction) leaves the gate pending for it. one, when not nil, is the same call as one
// statement with the gate's arguments first (one.sql, a *_gated function of migration 0030,
// returning the job's columns, then extra's, then the gate's count, oldest entry and clock
// and the payloads taken): without then, a pending gate, the call and the take are that one
// statement, sent alone or, with one.batched, in a write batch (writebatch.go).
func (s *Store) callGated(ctx context.Context, g *store.WriteGate, quiet bool, then func(context.Context, pgx.Tx, store.Job) error, extra []any, one *batchable, sql string, args ...any) (store.Job, error) {
	if s.goTransitions {
		return store.Job{}, errFallback
	}
	for attempt := 1; ; attempt++ {
		job, err := s.callOnce(ctx, g, quiet, then, extra, one, sql, args)
		if attempt < 5 && retryable(err) {
			s.retried.Add(1)
			continue
		}
		if err != nil {
			err = transitionErr(err)
			if g.Pending() && !errors.Is(err, errFallback) && !errors.Is(err, errDeliveries) {
				if gerr := s.passGate(ctx, g); g.Ran && (g.Unauthorized || !g.Allowed) {
					return store.Job{}, gerr
				}
			}
			return store.Job{}, err
		}
		return job, nil
	}
}

func (s *Store) callOnce(ctx context.Context, g *store.WriteGate, quiet bool, then func(context.Context, pgx.Tx, store.Job) error, extra []any, one *batchable, sql string, args []any) (job store.Job, err error) {
	gated := g.Pending()
	if gated && then == nil && one != nil {
		if one.batched != "" && s.writes != nil {
			var done bool
			if job, err, done = s.batchWrite(ctx, g, extra, one, args); done {
				return job, err
			}
			// Its batch rolled back (the gate still pending), or the batch passed the gate
			// and left the start to run here, as a start without a pending gate.
			gated = g.Pending()
		}
		if gated {
			return s.callOneStatement(ctx, g, extra, one.sql, args)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.Job{}, err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	if then != nil {
		// then goes on in the transaction after the batch: it needs one that outlives the
		// batch's Sync. Without then, the batch's statements are one implicit transaction,
		// which its Sync commits (no BEGIN or COMMIT to send, parse and answer).
		b.Queue(`BEGIN`)
	}
	if gated {
		// The gate first: the key's rate_windows row is the first lock (cache.go's order),
		// and a refused write runs no transition. No savepoint keeps its count when the call
		// fails: callGated then counts the write on its own.
		b.Queue(gateSQL, gateArgs(g)...)
	}
	if then != nil {
		// then's statements defer their notifications too (the function's SET clause does
		// for its own call): they leave with the function's, after the COMMIT.
		b.Queue(`SELECT set_config('convsvc.defer_notify', 'on', true)`)
	}
	b.Queue(sql, args...)
	if then == nil && !quiet {
		// The payloads the call queued, taken in its transaction (a rollback leaves them in
		// the session): the notifier sends them after the commit, with other calls'.
		b.Queue(`SELECT convsvc_take_notifies()`)
	}
	br := conn.SendBatch(ctx, b)
	if then != nil {
		_, err = br.Exec() // BEGIN
	}
	// counted: the gate counted the write in this transaction (committed once committed is).
	var counted, committed bool
	var gateCount int
	var gateOldest, gateNow time.Time
	if err == nil && gated {
		if err = br.QueryRow().Scan(&gateCount, &gateOldest, &gateNow); err == nil {
			counted = true
		} else if refused := s.gateRefused(g, err); refused != nil {
			err = refused
		}
	}
	if err == nil && then != nil {
		_, err = br.Exec()
	}
	var noRow bool
	if err == nil {
		job, err = scanJob(extraRow{br.QueryRow(), extra})
		if err == store.ErrNotFound {
			noRow, err = true, nil // a claim that found nothing: the batch goes on
		}
	}
	var payloads string
	if then == nil && !quiet && err == nil {
		err = br.QueryRow().Scan(&payloads)
	}
	// Close reads to the batch's Sync: without then, the commit's outcome (an error there is
	// a failed commit).
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if then == nil && err == nil {
		committed = true
		s.notes.send(payloads)
	}
	if err == nil && then != nil {
		if !noRow {
			err = then(ctx, connTx{conn.Conn()}, job)
		}
		if err == nil {
			_, err = conn.Exec(ctx, commitDeferred)
			committed = err == nil
		}
	}
	if counted && committed {
		s.gateCounted(g, gateCount, gateOldest, gateNow)
	}
	if err != nil {
		rollbackOpen(conn.Conn())
		return store.Job{}, err
	}
	if noRow {
		return store.Job{}, store.ErrNotFound
	}
	return job, nil
}

// gatedCols are the columns a *_gated function of migration 0030 returns after the job's:
// the write gate's count, oldest entry and clock, and the payloads its transaction queued.
const gatedCols = `o_count, o_oldest, o_now, o_notify`

// callOneStatement is callOnce for a pending gate without then: the gate, the call and the
// take are one statement, sql (a *_gated function, the gate's arguments first), one implicit
// transaction that its Sync commits. A commit that fails is the row's error (pgx reads to
// the Sync before Scan returns).
func (s *Store) callOneStatement(ctx context.Context, g *store.WriteGate, extra []any, sql string, args []any) (store.Job, error) {
	var count int
	var oldest, now time.Time
	var payloads string
	row := s.pool.QueryRow(ctx, sql, append(gateArgs(g), args...)...)
	job, err := scanJob(extraRow{row, append(slices.Clip(extra), &count, &oldest, &now, &payloads)})
	if err != nil {
		if refused := s.gateRefused(g, err); refused != nil {
			return store.Job{}, refused
		}
		return store.Job{}, err
	}
	s.notes.send(payloads)
	s.gateCounted(g, count, oldest, now)
	return job, nil
}

// connTx is the transaction callOnce or txOnce began on a connection with its own BEGIN, as
// the pgx.Tx that the Go transactions take. They commit or roll it back; Commit and Rollback
// here refuse.
type connTx struct{ c *pgx.Conn }

func (t connTx) Begin(ctx context.Context) (pgx.Tx, error) {
	return nil, errors.New("pgstore: no nested transaction here")
}

func (t connTx) Commit(context.Context) error {
	return errors.New("pgstore: the transaction is committed by its runner (callOnce, txOnce)")
}

func (t connTx) Rollback(context.Context) error {
	return errors.New("pgstore: the transaction is rolled back by its runner (callOnce, txOnce)")
}

func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, table, cols, src)
}

func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}
func (t connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Prepare(ctx, name, sql)
}

func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}

func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}

func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}

func (t connTx) Conn() *pgx.Conn { return t.c }

// finishedDeliveries is the then of a transition call whose function finished the job
// (a cache hit) and left its webhook deliveries to Go (CVWH0): recordWebhookEvents for a
// finished job, nothing for one that was only queued or claimed.
func finishedDeliveries(ctx context.Context, tx pgx.Tx, job store.Job) error {
	if !job.Finished() {
		return nil
	}
	return recordWebhookEvents(ctx, tx, job)
}

// callHit is callJobExtra for a transition that may answer the job from the cache: its last
// argument is p_deliveries_in_go, false at first; when the function asks for the webhook
// deliveries of the job it finished (CVWH0), the call runs again with it true and
// finishedDeliveries after it in the same transaction.
func (s *Store) callHit(ctx context.Context, extra []any, sql string, args ...any) (store.Job, error) {
	return s.callHitGated(ctx, nil, false, extra, nil, sql, args...)
}

// callHitGated is callHit with a request's write gate (callGated), which the first call runs
// (and counts even when that call fails).
func (s *Store) callHitGated(ctx context.Context, g *store.WriteGate, quiet bool, extra []any, one *batchable, sql string, args ...any) (store.Job, error) {
	job, err := s.callGated(ctx, g, quiet, nil, extra, one, sql, append(args, false)...)
	if errors.Is(err, errDeliveries) {
		job, err = s.callGated(ctx, g, false, finishedDeliveries, extra, nil, sql, append(args, true)...)
	}
	return job, err
}

// createJobCall is CreateJob without an Idempotency-Key in one round trip, a cache hit
// included (the job is then returned succeeded).
func (s *Store) createJobCall(ctx context.Context, p store.CreateJobParams, status string) (store.Job, error) {
	var opts []byte
	if p.Options != nil {
		opts = p.Options
	}
	// A job created for its upload with no cache key queues no notification (no status
	// event, no hit): its batch ends with the call (callOnce's quiet). Were one ever queued,
	// it would leave with the connection's next take (or send).
	quiet := status == store.StatusCreated && (p.InputSHA256 == "" || p.CacheBase == "")
	id, deliverTo := store.NewJobID(time.Now()), deliveryJSON(p.DeliverTo)
	one := &batchable{
		sql:     `SELECT ` + jobCols + `, ` + gatedCols + ` FROM convsvc_create_job_gated($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		account: p.AccountID,
	}
	if quiet && p.WebhookURL == "" {
		// convsvc_create_job_gated's in-line case, which locks the account's rows only.
		one.batched = `SELECT ` + jobCols + `, ` + gatedCols + ` FROM convsvc_create_job_batched($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`
		one.batchedArgs = []any{id, p.AccountID, p.InputFormat, p.TargetFormat, p.InputBytes, opts, micros(s.opts.Retention),
			p.SourceURL, deliverTo, p.InputSHA256, p.CacheBase}
	}
	return s.callHitGated(ctx, p.Gate, quiet, nil, one,
		`SELECT `+jobCols+` FROM convsvc_create_job($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		id, p.AccountID, status, p.InputFormat, p.TargetFormat, p.InputBytes, opts,
		micros(s.opts.Retention), p.SourceURL, deliverTo, p.WebhookURL, p.InputSHA256, p.CacheBase, s.opts.hitCents())
}

// startJobCall is startJob in one round trip, a cache hit included (the job is then returned
// succeeded); sha is the upload's SHA-256 as object storage reported it, or "".
func (s *Store) startJobCall(ctx context.Context, g *store.WriteGate, accountID, jobID string, uploadedSize int64, up *store.Upload, sha string) (store.Job, error) {
	var upSize *int64
	var upETag, upVersion *string
	if up != nil {
		upSize, upETag, upVersion = &up.Size, &up.ETag, &up.VersionID
	}
	one := &batchable{
		sql:         `SELECT ` + jobCols + `, ` + gatedCols + ` FROM convsvc_start_job_gated($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		batched:     `SELECT ` + jobCols + `, ` + gatedCols + ` FROM convsvc_start_job_batched($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		batchedArgs: []any{accountID, jobID, uploadedSize, upSize, upETag, upVersion, sha},
		account:     accountID,
	}
	return s.callHitGated(ctx, g, false, nil, one,
		`SELECT `+jobCols+` FROM convsvc_start_job($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		accountID, jobID, uploadedSize, upSize, upETag, upVersion, sha, s.opts.hitCents())
}

// claimJobCall is ClaimJob in one round trip, a job with a cache key's flight included: the
// job is returned running (with WaitFor when a twin converts its key), or succeeded when the
// cache answered it. ok is false when nothing queued may run.
func (s *Store) claimJobCall(ctx context.Context) (job store.Job, ok bool, err error) {
	if s.goTransitions {
		return store.Job{}, false, errFallback
	}
	s.claimTurn.Lock()
	last := s.claimTurn.last
	s.claimTurn.Unlock()
	job, err = s.callFlight(ctx, `convsvc_claim_job($1, $2, $3, $4, $5)`, last, s.opts.NodeID, micros(s.opts.Lease), s.opts.hitCents())
	switch {
	case err == store.ErrNotFound:
		return store.Job{}, false, nil
	case err != nil:
		return store.Job{}, false, err
	}
	s.claimTurn.Lock()
	s.claimTurn.last = job.AccountID
	s.claimTurn.Unlock()
	return job, true, nil
}

// callFlight is callHit for a function returning (o_job jobs, o_wait_for text): the job, with
// WaitFor set from o_wait_for.
func (s *Store) callFlight(ctx context.Context, call string, args ...any) (store.Job, error) {
	var waitFor *string
	job, err := s.callHit(ctx, []any{&waitFor}, `SELECT `+jobCols+`, c.o_wait_for FROM `+call+` c
		CROSS JOIN LATERAL (SELECT (c.o_job).*) j`, args...)
	if err == nil && waitFor != nil {
		job.WaitFor = *waitFor
	}
	return job, err
}

// cancelJobCall is CancelJob in one round trip (migration 0031), with the request's write
// gate first when it has one (callGated's batch): the job as the cancel left it, and whether
// the cancel changed it (false for a job cancelled before).
func (s *Store) cancelJobCall(ctx context.Context, g *store.WriteGate, accountID, jobID string) (job store.Job, changed bool, err error) {
	job, err = s.callHitGated(ctx, g, false, []any{&changed}, nil, `SELECT `+jobCols+`, c.o_changed FROM convsvc_cancel_job($1, $2, $3) c
		CROSS JOIN LATERAL (SELECT (c.o_job).*) j`, accountID, jobID)
	return job, changed, err
}

// finishFromCacheCall is FinishFromCache in one round trip.
func (s *Store) finishFromCacheCall(ctx context.Context, jobID string, attempt int) (store.Job, error) {
	return s.callFlight(ctx, `convsvc_finish_from_cache($1, $2, $3, $4)`, jobID, attempt, s.opts.hitCents())
}

// finishJobCall is FinishJob in one round trip, for the outcomes it takes (a success with its
// output, or a failure), storing a cache-keyed success's output in the cache.
func (s *Store) finishJobCall(ctx context.Context, jobID string, attempt int, o store.Outcome) (store.Job, error) {
	status, reason := store.StatusFailed, o.ErrorReason
	var outBytes *int64
	var outSHA *string
	var outWarnings []byte
	verified := false
	if o.ErrorCode == "" {
		if o.Output == nil || o.Output.Cached || o.Output.Object != "" {
			return store.Job{}, errFallback // the Go transaction says why it is refused, or takes it as it is
		}
		status, reason = store.StatusSucceeded, ""
		outBytes, outSHA, verified = &o.Output.Bytes, &o.Output.SHA256, o.Output.Verified
		var err error
		if outWarnings, err = warningsJSON(o.Output); err != nil {
			return store.Job{}, err
		}
	}
	// $12 is p_deliveries_in_go (callHit's last argument), $11 p_cache_max_bytes.
	return s.callHit(ctx, nil, `SELECT `+jobCols+` FROM convsvc_finish_job($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $11)`,
		jobID, attempt, status, o.ErrorCode, o.ErrorMessage, reason, outBytes, outSHA, nullString(outWarnings), verified, s.opts.CacheMaxBytes)
}

// AuthenticateWrite resolves a live key by the SHA-256 of its secret and counts one write
// against its rolling window, in one statement (one round trip): Authenticate and AllowWrite
// in one. A malformed, unknown or revoked key is store.ErrUnauthorized and counts nothing. The
// key is read in the same statement that counts the write, so a revocation holds on every
// node as soon as RevokeKey returns. The key is remembered (CachedWriteGate), so that this
// node's next writes of it check and count in their transition's round trip.
func (s *Store) AuthenticateWrite(secret string, limit int, window time.Duration) (key store.APIKey, allowed bool, remaining int, reset time.Duration, err error) {
	if err := store.ParseKey(secret); err != nil {
		return store.APIKey{}, false, 0, 0, fmt.Errorf("%w: %w", store.ErrUnauthorized, err)
	}
	hash := store.HashKey(secret)
	ctx, cancel := s.ctx()
	defer cancel()
	// convsvc_count_write is STRICT: a revoked key's id is NULL, so its write counts nothing.
	var w rateCount
	err = s.pool.QueryRow(ctx, `WITH k AS (SELECT `+keyCols+` FROM api_keys WHERE hash = $1)
		SELECT k.id, k.account_id, k.prefix, k.hash, k.created_at, k.revoked_at, k.presets_only, `+rateCountCols+`
		FROM k LEFT JOIN LATERAL convsvc_count_write(CASE WHEN k.revoked_at IS NULL THEN k.id END, $2, $3) c ON true`,
		hash[:], limit, micros(window)).
		Scan(append(keyTargets(&key), &w.count, &w.oldest, &w.now, &w.resetUS)...)
	if isNoRows(err) {
		return store.APIKey{}, false, 0, 0, store.ErrUnauthorized
	} else if err != nil {
		return store.APIKey{}, false, 0, 0, wrap("authenticate write", err)
	}
	key.CreatedAt = key.CreatedAt.UTC()
	key.RevokedAt = utcPtr(key.RevokedAt)
	if key.RevokedAt != nil {
		return store.APIKey{}, false, 0, 0, fmt.Errorf("%w: key revoked", store.ErrUnauthorized)
	}
	allowed, remaining, reset = w.result(limit, window)
	s.keys.put(key, fullUntil(remaining, reset)) // this node's next write of the key is gated (keycache.go)
	return key, allowed, remaining, reset, nil
}
