package store

import (
	"errors"
	"time"
)

// ErrRateLimited is a write that a WriteGate refused because its key's rolling window is
// full; the gate holds the decision (WriteGate.Reset) for the 429's headers.
var ErrRateLimited = errors.New("write rate limit reached")

// WriteGate is a write request's key check and rate count that the API server left to the job
// store call making the write, so that a store where both are statements (pgstore) can run
// them in that call's own transaction and round trip. The server makes one only for a key a
// node has authenticated before (pgstore's key cache), and passes it in
// CreateJobParams.Gate, Upload.Gate or CancelJobWith's; a store that takes none ignores it
// (bbolt counts writes in process, before the handler).
//
// The store that runs the gate (once per request: Ran) checks, in the transaction that counts,
// that the key is still live and still Key, and counts one write in the key's window exactly
// as an authenticated write is counted before the handler: a refused gate
// (store.ErrUnauthorized or ErrRateLimited) counts nothing and writes nothing, and an allowed
// one counts once even when the write then fails. A request goroutine owns its gate.
type WriteGate struct {
	Key    APIKey        // the key as the node's cache holds it
	Limit  int           // writes allowed in any Window
	Window time.Duration // the rolling window's length

	// Set by the store that ran the gate.
	Ran          bool          // the gate ran and its outcome is committed
	Unauthorized bool          // the key is no longer live (or no longer Key): nothing counted
	Allowed      bool          // the write was counted
	Remaining    int           // writes the window takes after this one
	Reset        time.Duration // until the oldest counted write leaves the window
}

// Pending reports whether g is a gate that has not run yet.
func (g *WriteGate) Pending() bool { return g != nil && !g.Ran }
