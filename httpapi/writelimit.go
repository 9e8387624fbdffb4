package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// WriteLimiter counts a key's job writes (create, start, cancel) in a rolling window shared by
// every node, e.g. pgstore.Store.AllowWrite. Without one, Server counts in process, which is
// exact for one node. Reads and the per-address budget of requests without a valid key are
// always counted per node.
type WriteLimiter interface {
	AllowWrite(keyID string, limit int, window time.Duration) (allowed bool, remaining int, reset time.Duration, err error)
}

// allowWrite asks the shared write limiter whether keyID may write now.
func (s *Server) allowWrite(keyID string) (rateDecision, error) {
	allowed, remaining, reset, err := s.cfg.WriteLimiter.AllowWrite(keyID, s.cfg.WriteLimit, s.cfg.RateWindow)
	if err != nil {
		return rateDecision{}, fmt.Errorf("write rate limit: %w", err)
	}
	return rateDecision{Allowed: allowed, Limit: s.cfg.WriteLimit, Remaining: remaining, Reset: reset}, nil
}

// KeyWriteLimiter is a WriteLimiter that also authenticates the key in the same step, one
// database round trip for both (pgstore.Store.AuthenticateWrite). A malformed, unknown or
// revoked key is store.ErrUnauthorized and counts no write, as with Authenticate.
type KeyWriteLimiter interface {
	AuthenticateWrite(secret string, limit int, window time.Duration) (key store.APIKey, allowed bool, remaining int, reset time.Duration, err error)
}

// authenticate resolves the request's key, and for a write with a shared limiter that can
// (KeyWriteLimiter) counts the write in the same step; counted says it did, with d its decision.
func (s *Server) authenticate(token string, write bool) (key store.APIKey, d rateDecision, counted bool, err error) {
	if kw, ok := s.cfg.WriteLimiter.(KeyWriteLimiter); write && ok {
		key, allowed, remaining, reset, err := kw.AuthenticateWrite(token, s.cfg.WriteLimit, s.cfg.RateWindow)
		if err != nil {
			return store.APIKey{}, rateDecision{}, false, err
		}
		return key, rateDecision{Allowed: allowed, Limit: s.cfg.WriteLimit, Remaining: remaining, Reset: reset}, true, nil
	}
	key, err = s.cfg.Store.Authenticate(token)
	return key, rateDecision{}, false, err
}

// GateWriteLimiter is a KeyWriteLimiter that remembers the keys it authenticated and can leave
// a remembered key's check and write count to the job store call that makes the write, in
// that call's own transaction and round trip (pgstore.Store: a warm create, start or cancel is one
// round trip). The check still reads the key where it counts the write, so a revocation
// holds at once on every node; the node's memory only says which key a secret was.
type GateWriteLimiter interface {
	KeyWriteLimiter
	// CachedWriteGate returns the key of secret as the limiter authenticated it before and a
	// pending gate for this write; ok is false when the limiter does not hold the key (the
	// server then calls AuthenticateWrite, which remembers it).
	CachedWriteGate(secret string, limit int, window time.Duration) (key store.APIKey, g *store.WriteGate, ok bool)
	// PassGate runs a gate that has not run yet on its own (one round trip): store's
	// ErrUnauthorized or ErrRateLimited when refused, g holding the decision either way.
	PassGate(g *store.WriteGate) error
}

// gateKey is the request context's key of the write gate withGatedKey made (writeGate).
type gateKey struct{}

// writeGate is the request's pending write gate, for the handler to pass to the job store
// with the write (store.CreateJobParams.Gate, store.Upload.Gate); nil when withKey counted
// the write before the handler.
func writeGate(r *http.Request) *store.WriteGate {
	g, _ := r.Context().Value(gateKey{}).(*store.WriteGate)
	return g
}

// withGatedKey is withKey(true, h) for create, start and cancel: with a GateWriteLimiter that holds
// the request's key, the key's check and write count are left to the job store's call that
// makes the write (h passes writeGate(r) to it), and the response goes through a
// gatedResponse, which runs the gate first if the store did not and answers its refusal
// (403 unauthorized, 429, as withKey would have) instead of the handler's response. The contract is
// withKey's: 403 unauthorized for a key no longer live and 429 over the window before any other answer,
// nothing written for either, and one write counted for any other answer.
func (s *Server) withGatedKey(h keyHandler) httprouter.Handle {
	plain := s.withKey(true, h)
	gw, ok := s.cfg.WriteLimiter.(GateWriteLimiter)
	if !ok {
		return plain
	}
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		token := bearer(r)
		if token == "" {
			plain(w, r, ps)
			return
		}
		key, g, ok := gw.CachedWriteGate(token, s.cfg.WriteLimit, s.cfg.RateWindow)
		if !ok {
			plain(w, r, ps)
			return
		}
		setAccount(r, key.AccountID)
		gr := &gatedResponse{ResponseWriter: w, s: s, r: r, gw: gw, g: g, header: w.Header().Clone()}
		h(gr, r.WithContext(context.WithValue(r.Context(), gateKey{}, g)), ps, key)
		gr.settle() // a handler that wrote nothing still counts its write
	}
}

// gatedResponse is the ResponseWriter of a request with a pending write gate: the handler's
// status and body go out only once the gate has run (in the store's transition, or here on
// its own when the handler answers without one: a validation error, a job already started)
// and allowed the write, with its RateLimit headers. A refusal replaces the handler's answer.
type gatedResponse struct {
	http.ResponseWriter
	s      *Server
	r      *http.Request
	gw     GateWriteLimiter
	g      *store.WriteGate
	header http.Header // the headers before the handler ran: a refusal starts from them

	settled, refused bool
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *gatedResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeader sends the handler's status once the gate allowed the write.
func (w *gatedResponse) WriteHeader(code int) {
	if w.settle() {
		w.ResponseWriter.WriteHeader(code)
	}
}

// Write sends the handler's body once the gate allowed the write; after a refusal it is
// dropped.
func (w *gatedResponse) Write(p []byte) (int, error) {
	if !w.settle() {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// settle runs the gate if it is still pending and, the first time, answers its refusal
// itself; it reports whether the handler's response may go out.
func (w *gatedResponse) settle() bool {
	if w.settled {
		return !w.refused
	}
	w.settled = true
	err := w.gw.PassGate(w.g)
	g := w.g
	if err == nil && g.Ran && g.Allowed {
		setRateHeaders(w.ResponseWriter, rateDecision{Allowed: true, Limit: g.Limit, Remaining: g.Remaining, Reset: g.Reset})
		return true
	}
	w.refused = true
	h := w.ResponseWriter.Header()
	for k := range h {
		delete(h, k)
	}
	for k, v := range w.header {
		h[k] = v
	}
	s, rw, r := w.s, w.ResponseWriter, w.r
	switch {
	case g.Unauthorized:
		if s.failedAuth(rw, r, s.anon, budgetAddress, s.now()) {
			s.writeError(rw, r, store.ErrUnauthorized)
		}
	case g.Ran && !g.Allowed:
		d := rateDecision{Limit: g.Limit, Reset: g.Reset}
		setRateHeaders(rw, d)
		s.refuseKey(rw, r, d, true)
	default: // the database failed: the write was neither counted nor made
		s.writeError(rw, r, fmt.Errorf("write rate limit: %w", err))
	}
	return false
}
