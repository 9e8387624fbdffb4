package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/store"
)

// Write batches (migration 0035). A create or a start with a pending write gate is one
// statement (callOneStatement), one round trip and one commit: at 32 clients, PostgreSQL
// spent as much on the commits, the WAL flushes their backends wait for and the round trips
// as on the statements. A node therefore sends at most Options.WriteBatches such statements'
// batches at once; the writes that arrive while all are out wait in a queue, and the next
// batch takes them together: one pgx batch, one implicit transaction that its Sync commits,
// one WAL flush, one round trip. An idle node sends each write at once, alone, as before.
//
// A batch holds at most one write of an account, in the accounts' order, and each write
// locks only rows its account owns (its key's rate_windows row, its job's row, its account's
// row and event_seqs row): two batches take their locks in the same order and cannot
// deadlock. A start goes through convsvc_start_job_batched, which stops where its fast path
// ends (a cache hit or any other case would lock cache rows that no account owns) and leaves
// the start to its own call after the batch's commit, its gate passed. A create goes in a
// batch only when convsvc_create_job_gated takes its in-line case (created for its upload,
// no webhook, no cache lookup); others go alone.
//
// When PostgreSQL fails any statement of a batch, or its commit, the whole batch has rolled
// back, and each of its writes then runs on its own, as it would have without batches: a
// refusal, a missing job or a cap reached is that write's answer, and costs the others one
// round trip. Any other error (a lost connection) is every unanswered write's, as it would
// have been its own.

// DefaultWriteBatches is how many write batches a node sends at once unless
// Options.WriteBatches says otherwise.
const DefaultWriteBatches = 4

// maxBatchWrites bounds the writes of one batch.
const maxBatchWrites = 16

// batchable is a transition's one-statement form with its write gate (a *_gated function of
// migration 0030, the gate's arguments first) and the statement that a write batch sends
// instead of it.
type batchable struct {
	// sql is the call sent alone (callOneStatement).
	sql string
	// batched, if not empty, is the statement a write batch sends, returning sql's columns; a
	// row whose job columns are NULL says that the batch only passed the gate and that the
	// transition is left to its own call (convsvc_start_job_batched).
	batched string
	// batchedArgs are batched's arguments after the gate's.
	batchedArgs []any
	// account owns every row the batched call locks: a batch's order.
	account string
}

// batchedWrite is one request's write in a batch, and what the batch answered it.
type batchedWrite struct {
	account string
	sql     string
	args    []any
	extra   []any

	job         store.Job
	count       int
	oldest, now time.Time
	payloads    string
	leftAlone   bool // convsvc_start_job_batched passed the gate only
	err         error
	rolledBack  bool // the batch rolled back: nothing of this write was committed
	// alone sends the write on its own (callOneStatement), setting job and err: what a
	// batch of this write alone does.
	alone    func()
	ranAlone bool
	lead     []*batchedWrite
	wake     chan struct{}
}

// writeBatcher queues a node's gated writes and sends them in batches, at most max at once.
type writeBatcher struct {
	mu      sync.Mutex
	max     int
	running int
	queue   []*batchedWrite
}

// do sends w, alone or with the writes queued beside it, and returns when the batch that held
// it has been answered. The caller whose write heads the queue when a batch can go sends that
// batch itself; the others wait for it.
func (b *writeBatcher) do(ctx context.Context, s *Store, w *batchedWrite) {
	w.wake = make(chan struct{}, 1)
	b.mu.Lock()
	b.queue = append(b.queue, w)
	leaders := b.dispatchLocked()
	leads := w.lead != nil
	b.mu.Unlock()
	wakeAll(leaders, w)
	if !leads {
		<-w.wake // answered, or w.lead set before the wake: w now heads a batch
		if w.lead == nil {
			return
		}
	}
	batch := w.lead
	w.lead = nil
	if len(batch) == 1 {
		w.alone() // batch is w: sent as it would be without batches
	} else {
		s.sendWrites(ctx, batch)
	}
	b.mu.Lock()
	b.running--
	leaders = b.dispatchLocked()
	b.mu.Unlock()
	wakeAll(leaders, nil)
	wakeAll(batch, w)
}

// dispatchLocked gives each free batch slot the batch that the queue's head then leads.
func (b *writeBatcher) dispatchLocked() (leaders []*batchedWrite) {
	for b.running < b.max && len(b.queue) > 0 {
		head := b.queue[0]
		head.lead = b.takeLocked()
		b.running++
		leaders = append(leaders, head)
	}
	return leaders
}

// takeLocked removes the next batch from the queue: the head, then the writes after it in
// their order, one an account and at most maxBatchWrites, sorted by account.
func (b *writeBatcher) takeLocked() []*batchedWrite {
	batch := make([]*batchedWrite, 0, min(len(b.queue), maxBatchWrites))
	rest := b.queue[:0]
	for _, w := range b.queue {
		if len(batch) < maxBatchWrites && !slices.ContainsFunc(batch, func(o *batchedWrite) bool { return o.account == w.account }) {
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	slices.SortFunc(batch, func(x, y *batchedWrite) int { return cmp.Compare(x.account, y.account) })
	return batch
}

// wakeAll wakes every write of ws but self.
func wakeAll(ws []*batchedWrite, self *batchedWrite) {
	for _, w := range ws {
		if w != self {
			w.wake <- struct{}{}
		}
	}
}

// sendWrites sends a batch's statements in one pgx batch and reads each answer.
func (s *Store) sendWrites(ctx context.Context, batch []*batchedWrite) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for _, w := range batch {
			w.err = err
		}
		return
	}
	defer conn.Release()
	pb := &pgx.Batch{}
	for _, w := range batch {
		pb.Queue(w.sql, w.args...)
	}
	br := conn.SendBatch(ctx, pb)
	failed := false // PostgreSQL failed a statement: the batch rolls back at its Sync
	for _, w := range batch {
		if w.err = w.read(br); isPgError(w.err) {
			failed = true
			break
		}
	}
	// Close reads to the Sync: the commit's outcome.
	cerr := br.Close()
	if failed || isPgError(cerr) {
		for _, w := range batch {
			w.err, w.rolledBack = nil, true
		}
		return
	}
	if cerr != nil {
		for _, w := range batch {
			if w.err == nil {
				w.err = cerr
			}
		}
	}
}

// read scans w's answer from br: the job's columns, extra's, then gatedCols.
func (w *batchedWrite) read(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errors.New("write batch: no row")
	}
	if rows.RawValues()[0] == nil { // the job's id: convsvc_start_job_batched passed the gate only
		dest := make([]any, len(rows.FieldDescriptions()))
		n := len(dest)
		dest[n-4], dest[n-3], dest[n-2] = &w.count, &w.oldest, &w.now
		w.leftAlone = true
		err = rows.Scan(dest...)
	} else {
		w.job, err = scanJob(extraRow{rows, append(slices.Clip(w.extra), &w.count, &w.oldest, &w.now, &w.payloads)})
	}
	rows.Close()
	return cmp.Or(err, rows.Err())
}

func isPgError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// batchWrite runs a gated write in a write batch. done is false when the write is to run on
// its own after all: its batch rolled back (g still pending), or convsvc_start_job_batched
// passed its gate and left the start to the caller (g counted).
func (s *Store) batchWrite(ctx context.Context, g *store.WriteGate, extra []any, one *batchable, args []any) (job store.Job, err error, done bool) {
	w := &batchedWrite{account: one.account, extra: extra, sql: one.batched, args: append(gateArgs(g), one.batchedArgs...)}
	w.alone = func() {
		w.ranAlone = true
		w.job, w.err = s.callOneStatement(ctx, g, extra, one.sql, args)
	}
	s.writes.do(ctx, s, w)
	switch {
	case w.ranAlone:
		return w.job, w.err, true
	case w.rolledBack:
		return store.Job{}, nil, false
	case w.err != nil:
		return store.Job{}, w.err, true
	}
	s.gateCounted(g, w.count, w.oldest, w.now)
	if w.leftAlone {
		return store.Job{}, nil, false
	}
	s.notes.send(w.payloads)
	return w.job, nil, true
}
