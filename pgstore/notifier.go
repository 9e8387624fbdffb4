package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyBatchMax bounds the payloads one of the notifier's transactions sends.
const notifyBatchMax = 1000

// notifier sends the notifications that transition calls queued (their payloads, which the
// call's batch takes before its COMMIT: convsvc_take_notifies, migration 0028) after their
// commits, many calls' in one transaction (convsvc_notify_all): one sender per node, which
// sends whatever was handed to it while its last transaction ran. Alone, a call's payloads
// leave at once; under load, a transaction carries many requests' and every listening backend
// wakes once for them. Notifications are wake-ups, not the state: a payload lost (a failed
// send, a node killed between a commit and its send) costs the waiters a poll, as a
// listener's reconnect does.
type notifier struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	timeout time.Duration

	mu      sync.Mutex
	idle    *sync.Cond // broadcast when the sender stops
	pending []string
	sending bool

	sends atomic.Int64 // transactions sent, for the tests
}

func newNotifier(pool *pgxpool.Pool, log *slog.Logger, timeout time.Duration) *notifier {
	n := &notifier{pool: pool, log: log, timeout: timeout}
	n.idle = sync.NewCond(&n.mu)
	return n
}

// send hands over a committed transaction's payloads (comma-separated, as the session's
// convsvc.notify holds them); they leave with the sender's next transaction.
func (n *notifier) send(payloads string) {
	if payloads == "" {
		return
	}
	n.mu.Lock()
	n.pending = append(n.pending, strings.Split(payloads, ",")...)
	if n.sending {
		n.mu.Unlock()
		return
	}
	n.sending = true
	n.mu.Unlock()
	go n.run()
}

// run sends until nothing is pending.
func (n *notifier) run() {
	for {
		n.mu.Lock()
		batch := n.pending[:min(len(n.pending), notifyBatchMax)]
		n.pending = n.pending[len(batch):]
		if len(batch) == 0 {
			n.pending = nil
			n.sending = false
			n.idle.Broadcast()
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
		_, err := n.pool.Exec(ctx, `SELECT convsvc_notify_all($1)`, batch)
		cancel()
		n.sends.Add(1)
		if err != nil {
			n.log.Warn("pgstore: notifications not sent; waiters will poll", "count", len(batch), "err", err)
		}
	}
}

// flush waits until everything handed to send has been sent (or failed).
func (n *notifier) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.sending {
		n.idle.Wait()
	}
}
