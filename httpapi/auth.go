package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// keyHandler is a route handler that runs for an authenticated API key.
type keyHandler func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey)

// bearer returns the token of an "Authorization: Bearer" header, or "" when there is none or
// more than one: with two, a proxy and the server could each authenticate a different one.
func bearer(r *http.Request) string {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return ""
	}
	h := values[0]
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// withKey authenticates the API key and applies the key's write or read rate limit.
// A request with a valid key is limited per key only, whatever its address did: behind a
// proxy or NAT one careless client must not lock out everyone else. Only failed
// authentication (no key, a bad or revoked key) spends the address's budget (clientKey), and
// once that is spent further failures are 429 rather than 401 or 403.
func (s *Server) withKey(write bool, h keyHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		now := s.now()
		token := bearer(r)
		if token == "" {
			if s.failedAuth(w, r, s.anon, budgetAddress, now) {
				s.writeError(w, r, &Error{Code: CodeUnauthorized, Status: http.StatusUnauthorized,
					Message: "send the API key as Authorization: Bearer cs_live_..."})
			}
			return
		}
		key, d, counted, err := s.authenticate(token, write)
		if err != nil {
			// A store failure is not the caller's: it spends no budget.
			if !errors.Is(err, store.ErrUnauthorized) || s.failedAuth(w, r, s.anon, budgetAddress, now) {
				s.writeError(w, r, err)
			}
			return
		}
		setAccount(r, key.AccountID)
		limiter := s.reads
		if write {
			limiter = s.writes
		}
		switch {
		case counted:
		case write && s.cfg.WriteLimiter != nil:
			if d, err = s.allowWrite(key.ID); err != nil {
				s.writeError(w, r, err)
				return
			}
		default:
			d = limiter.Allow(key.ID, now)
		}
		setRateHeaders(w, d)
		if !d.Allowed {
			s.refuseKey(w, r, d, write)
			return
		}
		h(w, r, ps, key)
	}
}

// refuseKey answers 429 for a key whose write (or read) budget d refused; the RateLimit
// headers are set.
func (s *Server) refuseKey(w http.ResponseWriter, r *http.Request, d rateDecision, write bool) {
	budget := budgetRead
	if write {
		budget = budgetWrite
	}
	s.cfg.Metrics.rateLimitedInc(budget)
	w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(d.Reset)))
	s.writeError(w, r, errorf(CodeRateLimited, "more than "+strconv.Itoa(d.Limit)+" requests in one minute for this key; retry after the Retry-After seconds"))
}

// failedAuth counts a failed authentication against the caller's address in limiter and
// reports whether the caller is still within that budget; if not, it has answered 429.
func (s *Server) failedAuth(w http.ResponseWriter, r *http.Request, limiter *slidingLimiter, budget string, now time.Time) bool {
	d := limiter.Allow(s.clientKey(r), now)
	setRateHeaders(w, d)
	if d.Allowed {
		return true
	}
	s.refuseAddress(w, r, d, budget)
	return false
}

// refuseAddress answers 429 for an address whose failed-authentication budget is spent.
func (s *Server) refuseAddress(w http.ResponseWriter, r *http.Request, d rateDecision, budget string) {
	s.cfg.Metrics.rateLimitedInc(budget)
	w.Header().Set("Retry-After", strconv.Itoa(max(1, ceilSeconds(d.Reset))))
	msg := "too many requests without a valid API key from this address; retry later"
	if budget == budgetAdmin {
		msg = "too many requests with a wrong admin token from this address; retry later"
	}
	s.writeError(w, r, errorf(CodeRateLimited, msg))
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

// withAdmin checks the admin token in constant time. The admin API has its own budget of
// failed authentications per address (adminFails), which bad API keys do not spend and which
// a wrong admin token does not take from API clients. Once an address has spent it, its
// tokens are not even compared until the window frees a slot, so a weak operator-chosen token
// cannot be guessed at speed; the price is that the operator behind the same address waits
// out that minute too.
func (s *Server) withAdmin(h httprouter.Handle) httprouter.Handle {
	want := sha256.Sum256([]byte(s.cfg.AdminToken))
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		now := s.now()
		if d := s.adminFails.Peek(s.clientKey(r), now); !d.Allowed {
			setRateHeaders(w, d)
			s.refuseAddress(w, r, d, budgetAdmin)
			return
		}
		token := bearer(r)
		if token == "" {
			if s.failedAuth(w, r, s.adminFails, budgetAdmin, now) {
				s.writeError(w, r, &Error{Code: CodeUnauthorized, Status: http.StatusUnauthorized,
					Message: "send the admin token as Authorization: Bearer <token> (see DATA/admin.token)"})
			}
			return
		}
		got := sha256.Sum256([]byte(token))
		if s.cfg.AdminToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			if s.failedAuth(w, r, s.adminFails, budgetAdmin, now) {
				s.writeError(w, r, errorf(CodeUnauthorized, "the admin token is wrong"))
			}
			return
		}
		h(w, r, ps)
	}
}
