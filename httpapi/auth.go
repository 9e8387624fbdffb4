package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// keyHandler is a route handler that runs for an authenticated API key.
type keyHandler func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey)

// bearer returns the token of an "Authorization: Bearer" header, or "" when there is none.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// withKey authenticates the API key and applies the key's write or read rate limit.
// Callers without a valid key spend their address's budget, never a key's.
func (s *Server) withKey(write bool, h keyHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		now := s.now()
		addr := clientAddr(r)
		token := bearer(r)
		if token == "" {
			d := s.anon.Allow(addr, now)
			setRateHeaders(w, d)
			if !d.Allowed {
				s.refuseAnon(w, r)
				return
			}
			s.writeError(w, r, &Error{Code: CodeUnauthorized, Status: http.StatusUnauthorized,
				Message: "send the API key as Authorization: Bearer cs_live_..."})
			return
		}
		if d := s.anon.Peek(addr, now); !d.Allowed {
			setRateHeaders(w, d)
			s.refuseAnon(w, r)
			return
		}
		key, err := s.cfg.Store.Authenticate(token)
		if err != nil {
			// Without a valid key the caller spends its address's budget and sees that budget.
			setRateHeaders(w, s.anon.Allow(addr, now))
			s.writeError(w, r, err)
			return
		}
		setAccount(r, key.AccountID)
		limiter := s.reads
		if write {
			limiter = s.writes
		}
		var d rateDecision
		if write && s.cfg.WriteLimiter != nil {
			if d, err = s.allowWrite(key.ID); err != nil {
				s.writeError(w, r, err)
				return
			}
		} else {
			d = limiter.Allow(key.ID, now)
		}
		setRateHeaders(w, d)
		if !d.Allowed {
			budget := budgetRead
			if write {
				budget = budgetWrite
			}
			s.cfg.Metrics.rateLimitedInc(budget)
			w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(d.Reset)))
			s.writeError(w, r, errorf(CodeRateLimited, "more than "+strconv.Itoa(d.Limit)+" requests in one minute for this key; retry after the Retry-After seconds"))
			return
		}
		h(w, r, ps, key)
	}
}

func (s *Server) refuseAnon(w http.ResponseWriter, r *http.Request) {
	s.cfg.Metrics.rateLimitedInc(budgetAddress)
	d := s.anon.Peek(clientAddr(r), s.now())
	w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(d.Reset)))
	s.writeError(w, r, errorf(CodeRateLimited, "too many requests without a valid API key from this address; retry later"))
}

// setRateHeaders writes the RateLimit-Limit, -Remaining and -Reset headers into the map
// directly, so under their canonical keys ("Ratelimit-Limit", as Header.Set would make
// them). The three values share one backing array; each header gets a full one-element
// slice of it, so an Add to one cannot write into the next.
func setRateHeaders(w http.ResponseWriter, d rateDecision) {
	v := make([]string, 3)
	v[0], v[1], v[2] = strconv.Itoa(d.Limit), strconv.Itoa(d.Remaining), strconv.Itoa(ceilSeconds(d.Reset))
	h := w.Header()
	h["Ratelimit-Limit"] = v[0:1:1]
	h["Ratelimit-Remaining"] = v[1:2:2]
	h["Ratelimit-Reset"] = v[2:3:3]
}

// ceilSeconds rounds up, so a client that waits that long is never early.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// withAdmin checks the admin token in constant time; bad tokens spend the address's budget.
func (s *Server) withAdmin(h httprouter.Handle) httprouter.Handle {
	want := sha256.Sum256([]byte(s.cfg.AdminToken))
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		now := s.now()
		addr := clientAddr(r)
		if !s.anon.Peek(addr, now).Allowed {
			s.refuseAnon(w, r)
			return
		}
		token := bearer(r)
		if token == "" {
			s.anon.Allow(addr, now)
			s.writeError(w, r, &Error{Code: CodeUnauthorized, Status: http.StatusUnauthorized,
				Message: "send the admin token as Authorization: Bearer <token> (see DATA/admin.token)"})
			return
		}
		got := sha256.Sum256([]byte(token))
		if s.cfg.AdminToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			s.anon.Allow(addr, now)
			s.writeError(w, r, errorf(CodeUnauthorized, "the admin token is wrong"))
			return
		}
		h(w, r, ps)
	}
}
