package httpapi

import (
	"context"
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
		s.serveKeyed(w, r, ps, write, h, func(token string) (store.APIKey, rateDecision, bool, error) {
			return s.authenticate(token, write)
		})
	}
}

// serveKeyed is withKey's request: auth resolves the request's token (and for a write may
// count it: counted, with d its decision), then the key's rate limit applies and h runs.
func (s *Server) serveKeyed(w http.ResponseWriter, r *http.Request, ps httprouter.Params, write bool, h keyHandler,
	auth func(token string) (key store.APIKey, d rateDecision, counted bool, err error)) {
	now := s.now()
	token := bearer(r)
	if token == "" {
		if s.failedAuth(w, r, s.anon, budgetAddress, now) {
			s.writeError(w, r, &Error{Code: CodeUnauthorized, Status: http.StatusUnauthorized,
				Message: "send the API key as Authorization: Bearer cs_live_..."})
		}
		return
	}
	key, d, counted, err := auth(token)
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

// jobReadKey is the request context's key of the read withJobKey made (takeJobRead).
type jobReadKey struct{}

// jobRead is a job read with the request's key, before the handler ran, and the change
// subscription taken before that read (a long poll waits on it, so no change between the
// read and the wait is missed).
type jobRead struct {
	id      string
	job     store.Job
	err     error
	changed <-chan struct{}
	release func()
	taken   bool
}

// takeJobRead returns the read withJobKey made for the job id, once; nil when there is none
// (the handler then subscribes and reads itself). The taker releases the subscription.
func takeJobRead(r *http.Request, id string) *jobRead {
	jr, _ := r.Context().Value(jobReadKey{}).(*jobRead)
	if jr == nil || jr.taken || jr.id != id {
		return nil
	}
	jr.taken = true
	return jr
}

// withJobKey is withKey(false, h) for a read of the job named by the route's :id: the key's
// check and the job's read are one store call (Store.AuthenticateJob: one round trip on
// PostgreSQL, where Authenticate and Job take two), which h takes with takeJobRead. The
// answers are withKey's and h's, in their order: an unauthorized key, then the key's read
// budget, then h's own checks, then the job.
func (s *Server) withJobKey(h keyHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		id := ps.ByName("id")
		jr := &jobRead{id: id}
		jr.changed, jr.release = s.cfg.Store.WaitChange(id) // before the read, as h would
		defer func() {
			if !jr.taken {
				jr.release()
			}
		}()
		r = r.WithContext(context.WithValue(r.Context(), jobReadKey{}, jr))
		s.serveKeyed(w, r, ps, false, h, func(token string) (store.APIKey, rateDecision, bool, error) {
			key, job, jobErr, err := s.cfg.Store.AuthenticateJob(token, id)
			jr.job, jr.err = job, jobErr
			return key, rateDecision{}, false, err
		})
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
