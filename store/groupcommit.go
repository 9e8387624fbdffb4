package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// maxGroup caps how many writes share one transaction.
const maxGroup = 128

// groupCommit runs write functions in shared bbolt transactions without a timer: a writer
// that arrives while no transaction is being committed commits at once, alone; writers that
// arrive during a commit queue up and the next commit carries all of them. The group is as
// large as the load makes it (one write when idle, dozens at 64 clients), and nobody waits
// for company that is not coming. bbolt's own db.Batch waits MaxBatchDelay for every group
// that does not fill up, which at 32-64 clients was most of a create's latency.
type groupCommit struct {
	db *bolt.DB

	mu      sync.Mutex
	queue   []*writeCall
	leading bool // a goroutine is committing, or about to commit, the queue
}

type writeCall struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// errRunAlone tells a writer whose function failed inside a group to run it again in a
// transaction of its own, so that its error is its own and the others' work commits.
var errRunAlone = errors.New("store: run the write alone")

// update runs fn in a write transaction shared with whatever else is queued. fn may run more
// than once (when another function of its group fails, the group is rolled back and run
// again without it), so it must set its results afresh and change nothing outside tx.
func (g *groupCommit) update(fn func(*bolt.Tx) error) error {
	c := &writeCall{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		g.lead()
	}
	err := <-c.done
	if err == errRunAlone {
		err = g.db.Update(func(tx *bolt.Tx) error { return safeCall(fn, tx) })
	}
	return err
}

// lead commits the queue as it stands, then hands the lead to a new goroutine if more
// writers queued meanwhile, so no caller stays on duty for others' writes.
func (g *groupCommit) lead() {
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	group := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()

	g.commit(group)

	g.mu.Lock()
	more := len(g.queue) > 0
	g.leading = more
	g.mu.Unlock()
	if more {
		go g.lead()
	}
}

// commit runs the group in one transaction. A function that fails is taken out and told to
// run alone (unless it was alone already: then its error is final) and the rest run again.
func (g *groupCommit) commit(group []*writeCall) {
	for len(group) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, c := range group {
				if err := safeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 && len(group) > 1 {
			group[failed].done <- errRunAlone
			group = slices.Delete(group, failed, failed+1)
			continue
		}
		for _, c := range group {
			c.done <- err
		}
		return
	}
}

// safeCall runs fn, turning a panic into an error so that one bad write cannot leave the
// others of its group waiting forever.
func safeCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
