package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventJobQueued: a job was queued (started or requeued); an idle worker should claim.
	EventJobQueued EventKind = iota + 1
	// EventJobCancelled: a job was cancelled; the worker running it should stop.
	EventJobCancelled
	// EventResync: the listener reconnected, and events may have been lost meanwhile:
	// re-read whatever depends on them (claim, check running jobs).
	EventResync
	// EventWebhook: webhook deliveries were recorded; a dispatcher should claim.
	EventWebhook
)

// Event is a change that any node made, as Subscribe callbacks receive it.
type Event struct {
	Kind  EventKind
	JobID string // empty for EventResync
}

// Subscribe calls fn for every queued and cancelled job on any node, and with EventResync
// after the listener reconnected. fn runs on the listener's goroutine and must not block.
// The returned function unsubscribes.
func (s *Store) Subscribe(fn func(Event)) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	s.subscribers[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subscribers, id)
	}
}

// WaitChange returns a channel closed at the next committed change of the job made by any
// node (or when the listener reconnects), and a function that releases it.
func (s *Store) WaitChange(jobID string) (<-chan struct{}, func()) {
	return s.changes.WaitChange(jobID)
}

// Waiters is how many WaitChange channels are open now.
func (s *Store) Waiters() int { return s.changes.Waiters() }

// signal wakes the waiters of the given jobs; this node calls it after its own commits too,
// so its waiters do not wait for the notification's round trip.
func (s *Store) signal(jobIDs ...string) { s.changes.Signal(jobIDs...) }

// resync wakes every waiter and tells every subscriber to re-read.
func (s *Store) resync() {
	s.changes.SignalAll()
	s.events.SignalAll()
	s.mu.Lock()
	subs := make([]func(Event), 0, len(s.subscribers))
	for _, fn := range s.subscribers {
		subs = append(subs, fn)
	}
	s.mu.Unlock()
	for _, fn := range subs {
		fn(Event{Kind: EventResync})
	}
}

func (s *Store) dispatch(payload string) {
	kind, id, ok := strings.Cut(payload, ":")
	if !ok {
		return
	}
	switch kind {
	case "e": // an account's event log grew (events.go)
		s.events.Signal(id)
		return
	case "p": // a running job's progress (progress.go)
		s.progressNotified(id)
		return
	}
	s.signal(id)
	var ev Event
	switch kind {
	case "q":
		ev = Event{Kind: EventJobQueued, JobID: id}
	case "c":
		ev = Event{Kind: EventJobCancelled, JobID: id}
	case "w":
		ev = Event{Kind: EventWebhook, JobID: id}
	default:
		return
	}
	s.mu.Lock()
	subs := make([]func(Event), 0, len(s.subscribers))
	for _, fn := range s.subscribers {
		subs = append(subs, fn)
	}
	s.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

// ListenerPID is the backend process id of the listening connection (0 while disconnected);
// tests terminate it to prove a reconnect wakes every waiter.
func (s *Store) ListenerPID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenerPID
}

// listen holds one connection in LISTEN until ctx ends, reconnecting with a growing pause
// (up to 5 s) when it drops; ready gets the first connection's outcome.
func (s *Store) listen(ctx context.Context, ready chan<- error) {
	defer close(s.listenDone)
	first := true
	pause := 100 * time.Millisecond
	for {
		conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			if first {
				ready <- err
				return
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("pgstore: listener cannot reconnect", "err", err, "retry_in", pause)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 5*time.Second)
			continue
		}
		pause = 100 * time.Millisecond
		s.mu.Lock()
		s.listenerPID = conn.PgConn().PID()
		s.mu.Unlock()
		if first {
			first = false
			ready <- nil
		} else {
			s.log.Info("pgstore: listener reconnected; waking every waiter")
			s.resync()
		}
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			s.dispatch(n.Payload)
		}
		s.mu.Lock()
		s.listenerPID = 0
		s.mu.Unlock()
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("pgstore: listener connection lost; reconnecting")
	}
}
