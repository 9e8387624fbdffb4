package httpapi

import (
	"fmt"
	"time"

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
