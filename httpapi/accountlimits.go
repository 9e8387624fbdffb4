package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/convsvc/convsvc/store"
)

// CodeQueueFull is a start refused because the account has max_queued jobs queued (429,
// with Retry-After).
const CodeQueueFull = "queue_full"

// LimitStore is what the admin API needs for the accounts' queue limits (max_running,
// max_queued); both stores have it.
type LimitStore interface {
	UpdateAccountLimits(id string, l store.AccountLimits) (store.Account, error)
}

// queueFullRetryAfter is the Retry-After, in seconds, of a 429 queue_full: long enough for a
// few of the account's queued jobs to be claimed, short enough that a client's queue refills
// without a gap.
const queueFullRetryAfter = 5

// parseLimit reads a max_running or max_queued field of an account request: absent leaves it
// as it is, null lifts the limit, a whole number of at least 1 sets it.
func parseLimit(name string, raw json.RawMessage) (store.LimitUpdate, error) {
	if raw == nil {
		return store.LimitUpdate{}, nil
	}
	if bytes.Equal(raw, []byte("null")) {
		return store.LimitUpdate{Set: true}, nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 1 {
		return store.LimitUpdate{}, errorf(CodeInvalidRequest, name+" must be a whole number of at least 1, or null for no limit")
	}
	return store.LimitUpdate{Set: true, Value: &v}, nil
}

// limits reads the request's queue limits; set says whether it changes any.
func (req *accountRequest) limits() (l store.AccountLimits, set bool, err error) {
	if l.MaxRunning, err = parseLimit("max_running", req.MaxRunning); err != nil {
		return l, false, err
	}
	if l.MaxQueued, err = parseLimit("max_queued", req.MaxQueued); err != nil {
		return l, false, err
	}
	return l, l.MaxRunning.Set || l.MaxQueued.Set, nil
}
