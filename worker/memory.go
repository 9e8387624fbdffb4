package worker

import (
	"context"
	"errors"
	"sync"

	"github.com/convsvc/convsvc/convert"
)

// Budget is the server's conversion memory budget (--max-conversion-memory), which the
// conversions of every worker process share: a *convert.Catalog. A converter's
// Catalog.AcquireMemory in a worker asks the server over the worker's socket, and the server
// reserves the bytes here for that job, so the sum across workers never passes the budget and
// a conversion beyond it waits (or is refused) exactly as with --isolation none.
type Budget interface {
	AcquireMemory(ctx context.Context, n int64, what string) error
	ReserveMemory(n int64, what string) error
	ReleaseMemory(n int64)
}

// jobMemory is the server's record of what one job running in a worker holds of the budget.
// When the job ends, however it ends (a reply, a kill, a crash), end gives back whatever the
// worker did not.
type jobMemory struct {
	budget Budget
	send   func(memoryGrant) // answers the worker; errors are the worker's death, seen elsewhere
	ctx    context.Context   // ends with the job: pending acquires stop waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup // pending acquires

	mu      sync.Mutex
	held    int64 // bytes the job holds now
	peak    int64 // the most it held at once during the job
	ended   bool
	pending map[uint64]*pendingAcquire
	granted map[uint64]int64 // acquires answered, by id, until the worker releases by size
}

// maxPendingAcquires bounds the acquires one job may have waiting on the server at once.
const maxPendingAcquires = 64

type pendingAcquire struct {
	cancel    context.CancelFunc
	abandoned bool
}

func newJobMemory(ctx context.Context, b Budget, send func(memoryGrant)) *jobMemory {
	ctx, cancel := context.WithCancel(ctx)
	return &jobMemory{budget: b, send: send, ctx: ctx, cancel: cancel, pending: map[uint64]*pendingAcquire{}, granted: map[uint64]int64{}}
}

// peakHeld returns the most the job has held at once so far.
func (j *jobMemory) peakHeld() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.peak
}

// heldNow returns what the job holds now.
func (j *jobMemory) heldNow() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.held
}

// addLocked counts n more bytes held.
func (j *jobMemory) addLocked(n int64) {
	j.held += n
	j.peak = max(j.peak, j.held)
}

// handle serves one memory message of the worker. Acquires wait in their own goroutine, so
// the job's other messages (a release, its result) are read meanwhile.
func (j *jobMemory) handle(m memoryMsg) {
	if m.N < 0 {
		m.N = 0
	}
	switch m.Op {
	case memAcquire:
		actx, cancel := context.WithCancel(j.ctx)
		pa := &pendingAcquire{cancel: cancel}
		j.mu.Lock()
		if j.ended {
			j.mu.Unlock()
			cancel()
			return
		}
		if len(j.pending) >= maxPendingAcquires {
			// A converter waits on one reservation at a time; a worker asking for many is
			// broken or hostile, and each would hold a goroutine of the server.
			j.mu.Unlock()
			cancel()
			j.send(memoryGrant{ID: m.ID, Error: "too many memory reservations waiting at once"})
			return
		}
		j.pending[m.ID] = pa
		j.wg.Add(1)
		j.mu.Unlock()
		go func() {
			defer j.wg.Done()
			defer cancel()
			err := j.budget.AcquireMemory(actx, m.N, m.What)
			j.mu.Lock()
			delete(j.pending, m.ID)
			if err == nil && (j.ended || pa.abandoned) {
				j.mu.Unlock()
				j.budget.ReleaseMemory(m.N)
				return
			}
			if err == nil {
				j.addLocked(m.N)
				j.granted[m.ID] = m.N
			}
			ended := j.ended || pa.abandoned
			j.mu.Unlock()
			if ended {
				return
			}
			j.send(grantFor(m.ID, err))
		}()
	case memReserve:
		err := j.budget.ReserveMemory(m.N, m.What)
		if err == nil {
			j.mu.Lock()
			if j.ended {
				j.mu.Unlock()
				j.budget.ReleaseMemory(m.N)
				return
			}
			j.addLocked(m.N)
			j.mu.Unlock()
		}
		j.send(grantFor(m.ID, err))
	case memRelease:
		j.mu.Lock()
		// A worker cannot give back more than it holds, whatever it says.
		n := min(m.N, j.held)
		j.held -= n
		j.mu.Unlock()
		if n > 0 {
			j.budget.ReleaseMemory(n)
		}
	case memAbandon:
		j.mu.Lock()
		if pa, ok := j.pending[m.ID]; ok {
			pa.abandoned = true
			pa.cancel()
			j.mu.Unlock()
			return
		}
		// Granted before the abandon reached us: the worker drops the grant, so give it back.
		n, ok := j.granted[m.ID]
		delete(j.granted, m.ID)
		if ok {
			n = min(n, j.held)
			j.held -= n
		}
		j.mu.Unlock()
		if ok && n > 0 {
			j.budget.ReleaseMemory(n)
		}
	}
}

// grantFor answers acquire or reserve id with err's message, if any.
func grantFor(id uint64, err error) memoryGrant {
	g := memoryGrant{ID: id}
	if err != nil {
		var ce *convert.Error
		if errors.As(err, &ce) {
			g.Error = ce.Message
		} else {
			g.Error = "the conversion memory budget did not answer: " + err.Error()
		}
	}
	return g
}

// end finishes the job's record: pending acquires stop and everything still held goes back.
// It returns once the budget shows none of the job's bytes.
func (j *jobMemory) end() {
	j.mu.Lock()
	j.ended = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
	j.mu.Lock()
	n := j.held
	j.held = 0
	j.mu.Unlock()
	if n > 0 {
		j.budget.ReleaseMemory(n)
	}
}

// remoteBudget is a worker's convert.MemoryBroker: it asks the server over the socket.
type remoteBudget struct {
	c *conn

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan memoryGrant
}

func newRemoteBudget(c *conn) *remoteBudget {
	return &remoteBudget{c: c, waiting: map[uint64]chan memoryGrant{}}
}

// ask sends a request that the server answers and returns its id and the answer's channel.
func (r *remoteBudget) ask(op string, n int64, what string) (uint64, chan memoryGrant, error) {
	r.mu.Lock()
	r.next++
	id := r.next
	ch := make(chan memoryGrant, 1)
	r.waiting[id] = ch
	r.mu.Unlock()
	if err := r.c.send(reply{Memory: &memoryMsg{ID: id, Op: op, N: n, What: what}}); err != nil {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
		return 0, nil, err
	}
	return id, ch, nil
}

// answer delivers the server's grant to the request waiting for it, if it still waits.
func (r *remoteBudget) answer(g memoryGrant) {
	r.mu.Lock()
	ch, ok := r.waiting[g.ID]
	delete(r.waiting, g.ID)
	r.mu.Unlock()
	if ok {
		ch <- g
	}
}

// failAll answers every waiting request with err (the socket closed).
func (r *remoteBudget) failAll(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ch := range r.waiting {
		delete(r.waiting, id)
		ch <- memoryGrant{ID: id, Error: msg}
	}
}

func grantErr(g memoryGrant) error {
	if g.Error != "" {
		return &convert.Error{Message: g.Error}
	}
	return nil
}

// Acquire asks the server for n bytes and waits for its grant (convert.MemoryBroker).
func (r *remoteBudget) Acquire(ctx context.Context, n int64, what string) error {
	id, ch, err := r.ask(memAcquire, n, what)
	if err != nil {
		return err
	}
	select {
	case g := <-ch:
		return grantErr(g)
	case <-ctx.Done():
		r.mu.Lock()
		_, still := r.waiting[id]
		delete(r.waiting, id)
		r.mu.Unlock()
		if still {
			// The server gives back whatever it granted or grants for id.
			r.c.send(reply{Memory: &memoryMsg{ID: id, Op: memAbandon}})
		} else if g := <-ch; g.Error == "" {
			r.Release(n)
		}
		return ctx.Err()
	}
}

// Reserve asks the server for n bytes without waiting for other conversions.
func (r *remoteBudget) Reserve(n int64, what string) error {
	_, ch, err := r.ask(memReserve, n, what)
	if err != nil {
		return err
	}
	return grantErr(<-ch)
}

// Release gives n bytes back to the server's budget.
func (r *remoteBudget) Release(n int64) {
	r.c.send(reply{Memory: &memoryMsg{Op: memRelease, N: n}})
}
