package httpapi_test

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

var jobBody = map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10}

// fromAddress makes e's client connect from a loopback address of its own.
func fromAddress(e *testenv.Env, ip string) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	e.HTTP = e.ValidatingClient(&http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}})
}

// TestAPI_SharedAddressIsNotASharedFate is the lockout of issue 18: from one address (a NAT,
// a reverse proxy), 61 requests with a bad key or 65 with none used to make every valid key
// and the admin token from that address get 429. Now failed authentication is counted and
// refused per address, a valid key is limited per key only, and the admin API has a budget of
// its own that bad keys do not spend.
func TestAPI_SharedAddressIsNotASharedFate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		token  func() string
		status int
	}{
		{"61 bad keys", 61, store.NewKeySecret, 403},
		{"65 without a key", 65, func() string { return "" }, 401},
		{"61 malformed keys", 61, func() string { return "cs_live_guess" }, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testenv.Start(t)
			_, other := e.NewAccount(1000)
			for i := 0; i < tc.n; i++ {
				want, code := tc.status, "unauthorized"
				if i >= 60 {
					want, code = 429, "rate_limited"
				}
				r := e.Do("GET", "/v1/jobs", tc.token(), nil)
				must(t, r, want, code)
				if i >= 60 && r.Header.Get("Retry-After") == "" {
					t.Fatal("429 without Retry-After")
				}
			}
			// Every valid key from the same address works, with its whole budget.
			for _, key := range []string{e.Key, other} {
				r := e.Do("POST", "/v1/jobs", key, jobBody)
				must(t, r, 200, "")
				if got := r.Header.Get("RateLimit-Remaining"); got != "119" {
					t.Fatalf("RateLimit-Remaining %s, want 119: the key paid for the address", got)
				}
				must(t, e.Do("GET", "/v1/jobs?limit=1", key, nil), 200, "")
			}
			// So does the admin API.
			must(t, e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil), 200, "")
			// The address stays throttled for failures, and valid keys did not free it.
			must(t, e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil), 429, "rate_limited")
			must(t, e.Do("GET", "/v1/jobs", "", nil), 429, "rate_limited")
		})
	}

	t.Run("wrong admin tokens", func(t *testing.T) {
		e := testenv.Start(t)
		for i := 0; i < 60; i++ {
			must(t, e.Do("GET", "/v1/admin/accounts", "wrong-token", nil), 403, "unauthorized")
		}
		must(t, e.Do("GET", "/v1/admin/accounts", "wrong-token", nil), 429, "rate_limited")
		must(t, e.Do("GET", "/v1/admin/accounts", "", nil), 429, "rate_limited")
		// A wrong admin token counts against the admin budget only: API keys, good and bad,
		// are answered as before.
		must(t, e.Do("POST", "/v1/jobs", e.Key, jobBody), 200, "")
		must(t, e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil), 403, "unauthorized")
		// The admin budget is per address: from another one the token works at once. (From
		// the throttled address even the right token waits out the window, so a weak token
		// cannot be guessed at speed: docs/reliability.md.)
		must(t, e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil), 429, "rate_limited")
		fromAddress(e, "127.0.0.2")
		must(t, e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil), 200, "")
	})

	t.Run("bad keys do not spend the admin budget", func(t *testing.T) {
		e := testenv.Start(t)
		for i := 0; i < 70; i++ {
			e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil)
		}
		for i := 0; i < 60; i++ {
			must(t, e.Do("GET", "/v1/admin/accounts", "wrong-token", nil), 403, "unauthorized")
		}
		must(t, e.Do("GET", "/v1/admin/accounts", "wrong-token", nil), 429, "rate_limited")
	})

	t.Run("another address has its own budget", func(t *testing.T) {
		e := testenv.Start(t)
		for i := 0; i < 61; i++ {
			e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil)
		}
		must(t, e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil), 429, "rate_limited")
		fromAddress(e, "127.0.0.2")
		r := e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil)
		must(t, r, 403, "unauthorized")
		if got := r.Header.Get("RateLimit-Remaining"); got != "59" {
			t.Fatalf("RateLimit-Remaining %s, want 59", got)
		}
	})
}

// TestAPI_TrustedProxies: behind a listed proxy every client address named by X-Forwarded-For
// or Forwarded has a budget of its own; from a peer that is not listed those headers are
// ignored, so a client cannot spoof its way to fresh budgets.
func TestAPI_TrustedProxies(t *testing.T) {
	badKeys := func(e *testenv.Env, n int, headers ...string) (last testenv.Response) {
		for i := 0; i < n; i++ {
			last = e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil, headers...)
		}
		return last
	}
	t.Run("listed proxy", func(t *testing.T) {
		e := testenv.Start(t, func(c *service.Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		})
		must(t, badKeys(e, 61, "X-Forwarded-For", "198.51.100.7"), 429, "rate_limited")
		// A spoofed entry on the left is the client's own text: the proxy appended the
		// real address, which is still throttled.
		must(t, badKeys(e, 1, "X-Forwarded-For", "203.0.113.99, 198.51.100.7"), 429, "rate_limited")
		// Another client behind the same proxy is not.
		r := badKeys(e, 1, "X-Forwarded-For", "198.51.100.8")
		must(t, r, 403, "unauthorized")
		if got := r.Header.Get("RateLimit-Remaining"); got != "59" {
			t.Fatalf("RateLimit-Remaining %s, want 59", got)
		}
		// Forwarded names the client the same way.
		must(t, badKeys(e, 1, "Forwarded", `for=198.51.100.7;proto=https`), 429, "rate_limited")
		must(t, badKeys(e, 1, "Forwarded", `for="[2001:db8::1]:4711"`), 403, "unauthorized")
		// Two headers that disagree: the proxy's own address, whose budget is untouched.
		r = badKeys(e, 1, "X-Forwarded-For", "198.51.100.7", "Forwarded", "for=192.0.2.1")
		must(t, r, 403, "unauthorized")
		if got := r.Header.Get("RateLimit-Remaining"); got != "59" {
			t.Fatalf("RateLimit-Remaining %s, want 59 (the proxy's address)", got)
		}
	})
	t.Run("peer not listed", func(t *testing.T) {
		e := testenv.Start(t, func(c *service.Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		})
		for i := 0; i < 60; i++ {
			r := e.Do("GET", "/v1/jobs", store.NewKeySecret(), nil, "X-Forwarded-For", "198.51.100."+strconv.Itoa(i), "Forwarded", "for=192.0.2."+strconv.Itoa(i))
			must(t, r, 403, "unauthorized")
		}
		must(t, badKeys(e, 1, "X-Forwarded-For", "198.51.100.200"), 429, "rate_limited")
		must(t, badKeys(e, 1, "Forwarded", "for=192.0.2.200"), 429, "rate_limited")
	})
}
