package httpapi

import "sync"

// DefaultMaxWaitsPerKey is how many long polls (GET /v1/jobs/{id}?wait=N with N > 0) one API
// key holds open at once. A poll over it answers at once with the job as it is, as if it had
// been asked with wait=0: ?wait is a hint, so no client breaks, and one key's polls can never
// take the connections another key's requests need (behind a reverse proxy every client shares
// the proxy's address, so the per-address connection cap cannot tell them apart). A client
// that then polls in a loop spends its per-key read budget (ReadLimit) like any poller.
const DefaultMaxWaitsPerKey = 100

// waitSlots counts the long polls each key holds.
type waitSlots struct {
	max   int
	mu    sync.Mutex
	n     map[string]int
	total int
}

func newWaitSlots(max int) *waitSlots { return &waitSlots{max: max, n: make(map[string]int)} }

// acquire takes one of key's slots; false means key already holds max.
func (w *waitSlots) acquire(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[key] >= w.max {
		return false
	}
	w.n[key]++
	w.total++
	return true
}

// release gives back a slot acquire took.
func (w *waitSlots) release(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total--
	if w.n[key]--; w.n[key] <= 0 {
		delete(w.n, key)
	}
}

// held is how many slots are held, by all keys.
func (w *waitSlots) held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// LongPolls is how many GET /v1/jobs/{id}?wait= requests are held now.
func (s *Server) LongPolls() int { return s.waits.held() }
