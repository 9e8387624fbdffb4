package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/store"
)

// A create or a start on PostgreSQL used to cost two round trips: AuthenticateWrite (the key
// by its hash and the write's count in its rate_windows row, a statement of its own), then the
// transition's batch. A node now remembers the keys it has authenticated (keyCache); for a
// cached key httpapi passes a store.WriteGate with the write, and the transition runs it
// first in its own transaction, so a warm create or start is one round trip: since migration
// 0030 one statement (convsvc_create_job_gated, convsvc_start_job_gated: callOneStatement);
// elsewhere convsvc_write_gate first in the call's batch (0024). The gate checks the key in the transaction that
// counts (since migration 0029 by the key its rate_windows row remembers, which every change
// of the key's api_keys row makes it forget, and otherwise by reading the key), so the cache
// is only a hint of which key a secret is: a revocation holds on every node as soon as
// RevokeKey returns (CV401: 403 unauthorized), and
// a full window refuses with nothing counted and nothing written (CVRL0: 429). When the call
// fails, its transaction rolls back with the gate's count (no savepoint keeps it), and the
// gate runs on its own (passGate: one more round trip, failures only), so
// the write counts once, as before. A write that never reaches a transition (a validation
// error in Go, an Idempotency-Key's Go transaction) runs the gate on its own first
// (PassGate), one round trip, as AuthenticateWrite did.

// DefaultKeyCache is how many API keys a node remembers by default (Options.KeyCache); an
// entry is the key's record, a few hundred bytes.
const DefaultKeyCache = 10000

// gateSQL is convsvc_write_gate's call; gateArgs are its arguments for a gate.
const gateSQL = `SELECT o_count, o_oldest, o_now FROM convsvc_write_gate($1, $2, $3, $4, $5, $6)`

func gateArgs(g *store.WriteGate) []any {
	return []any{g.Key.Hash, g.Key.ID, g.Key.AccountID, g.Key.PresetsOnly, g.Limit, micros(g.Window)}
}

// keyCache is a node's bounded memory of the keys it authenticated, by their secret's hash.
// Past max entries an arbitrary one is forgotten (the next write of that key takes
// AuthenticateWrite again).
type keyCache struct {
	mu  sync.Mutex
	max int // < 0: no cache
	m   map[[32]byte]keyEntry
}

type keyEntry struct {
	key store.APIKey
	// fullUntil is when the key's window, as this node last saw it, has room again (zero:
	// it had room). A key seen full takes AuthenticateWrite first, so that a refused write
	// costs no object storage work (a start's seal) and no transition.
	fullUntil time.Time
}

func (c *keyCache) get(hash [32]byte) (keyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	return e, ok
}

func (c *keyCache) put(key store.APIKey, fullUntil time.Time) {
	if c.max < 0 || len(key.Hash) != 32 {
		return
	}
	hash := [32]byte(key.Hash)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]keyEntry{}
	}
	if _, ok := c.m[hash]; !ok && len(c.m) >= max(c.max, 1) {
		for h := range c.m { // an arbitrary one: map order
			delete(c.m, h)
			break
		}
	}
	c.m[hash] = keyEntry{key: key, fullUntil: fullUntil}
}

func (c *keyCache) drop(hash []byte) {
	if len(hash) != 32 {
		return
	}
	c.mu.Lock()
	delete(c.m, [32]byte(hash))
	c.mu.Unlock()
}

// fullUntil is when a window with remaining writes left, whose oldest write leaves in reset,
// has room again: zero when it has room now.
func fullUntil(remaining int, reset time.Duration) time.Time {
	if remaining > 0 {
		return time.Time{}
	}
	return time.Now().Add(reset)
}

// CachedWriteGate returns, for a secret whose key this node has authenticated before, the key
// as it was then and a gate that checks it again and counts one write against limit in a
// rolling window, to pass with the write (store.CreateJobParams.Gate, store.Upload.Gate) or to
// run on its own (PassGate). ok is false for a key the node does not hold (or saw with a full
// window that has not had room since): the caller then calls AuthenticateWrite, which fills
// the cache.
func (s *Store) CachedWriteGate(secret string, limit int, window time.Duration) (key store.APIKey, g *store.WriteGate, ok bool) {
	if s.keys.max < 0 || store.ParseKey(secret) != nil {
		return store.APIKey{}, nil, false
	}
	e, ok := s.keys.get(store.HashKey(secret))
	if !ok || time.Now().Before(e.fullUntil) {
		return store.APIKey{}, nil, false
	}
	return e.key, &store.WriteGate{Key: e.key, Limit: limit, Window: window}, true
}

// PassGate runs a gate that has not run yet on its own, in one statement: the key checked
// again and the write counted, as AuthenticateWrite does. It returns store.ErrUnauthorized
// for a key no longer live and store.ErrRateLimited for a full window, with g holding the
// decision either way; nil for a gate that ran already.
func (s *Store) PassGate(g *store.WriteGate) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.passGate(ctx, g)
}

func (s *Store) passGate(ctx context.Context, g *store.WriteGate) error {
	if !g.Pending() {
		return nil
	}
	var count int
	var oldest, now time.Time
	err := s.pool.QueryRow(ctx, gateSQL, gateArgs(g)...).Scan(&count, &oldest, &now)
	if err != nil {
		if refused := s.gateRefused(g, err); refused != nil {
			return refused
		}
		return wrap("write gate", err)
	}
	s.gateCounted(g, count, oldest, now)
	return nil
}

// gateCounted records on g that its write was counted (and committed): count writes in the
// window now, the oldest at oldest.
func (s *Store) gateCounted(g *store.WriteGate, count int, oldest, now time.Time) {
	g.Ran, g.Allowed = true, true
	g.Remaining, g.Reset = g.Limit-count, oldest.Add(g.Window).Sub(now)
	s.keys.put(g.Key, fullUntil(g.Remaining, g.Reset))
}

// gateRefused maps convsvc_write_gate's refusals (CV401, CVRL0) onto g and returns the
// store's error for them; nil when err is no refusal of the gate's.
func (s *Store) gateRefused(g *store.WriteGate, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil
	}
	switch pgErr.Code {
	case "CV401":
		g.Ran, g.Unauthorized = true, true
		s.keys.drop(g.Key.Hash)
		return fmt.Errorf("%w: key revoked", store.ErrUnauthorized)
	case "CVRL0":
		us, perr := strconv.ParseInt(pgErr.Detail, 10, 64)
		if perr != nil {
			return fmt.Errorf("write gate: reset %q: %w", pgErr.Detail, perr)
		}
		g.Ran, g.Allowed, g.Remaining, g.Reset = true, false, 0, time.Duration(us)*time.Microsecond
		s.keys.put(g.Key, fullUntil(0, g.Reset))
		return store.ErrRateLimited
	}
	return nil
}
