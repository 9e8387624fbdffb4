package httpapi

import (
	"fmt"
	"time"
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
