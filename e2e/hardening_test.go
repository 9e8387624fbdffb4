package e2e

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

// get sends GET base+path with a bearer token and extra headers, returning the status.
func get(t *testing.T, base, path, token string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestE2E_SharedAddressIsNotASharedFate runs issue 18's lockout against the binary: 61 bad
// keys from one address (each with a spoofed X-Forwarded-For and Forwarded, which a peer that
// is not a listed proxy does not get to use) throttle failures from that address, and every
// valid key and the admin token from it still work. Behind a listed proxy
// (--trusted-proxies), each forwarded client has its own budget.
func TestE2E_SharedAddressIsNotASharedFate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--trusted-proxies", "10.0.0.0/8")
	admin, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 61; i++ {
		want := 403
		if i == 60 {
			want = 429
		}
		got := get(t, p.URL, "/v1/jobs", store.NewKeySecret(),
			"X-Forwarded-For", "198.51.100."+strconv.Itoa(i), "Forwarded", "for=192.0.2."+strconv.Itoa(i))
		if got != want {
			t.Fatalf("bad key %d with spoofed headers: %d, want %d", i+1, got, want)
		}
	}
	if got := get(t, p.URL, "/v1/jobs", p.Key); got != 200 {
		t.Fatalf("valid key from the throttled address: %d, want 200", got)
	}
	if got := get(t, p.URL, "/v1/admin/accounts", strings.TrimSpace(string(admin))); got != 200 {
		t.Fatalf("admin token from the throttled address: %d, want 200", got)
	}

	data2 := filepath.Join(t.TempDir(), "data")
	proxied := testproc.Serve(t, binary, data2, "--trusted-proxies", "127.0.0.0/8,::1")
	for i := 0; i < 61; i++ {
		get(t, proxied.URL, "/v1/jobs", store.NewKeySecret(), "X-Forwarded-For", "198.51.100.7")
	}
	if got := get(t, proxied.URL, "/v1/jobs", store.NewKeySecret(), "X-Forwarded-For", "203.0.113.1, 198.51.100.7"); got != 429 {
		t.Fatalf("the throttled client behind the proxy: %d, want 429", got)
	}
	if got := get(t, proxied.URL, "/v1/jobs", store.NewKeySecret(), "X-Forwarded-For", "198.51.100.8"); got != 403 {
		t.Fatalf("another client behind the same proxy: %d, want 403", got)
	}
}

// TestE2E_NonsenseConfigurationIsRefused: the binary exits at once, naming the flag and the
// range, instead of starting with a negative worker count or a silently replaced retention.
func TestE2E_NonsenseConfigurationIsRefused(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--workers", "-3"}, []string{"--workers", "0 (one per CPU) or 1 to 1024"}},
		{[]string{"--retention", "0s"}, []string{"--retention", "above 0"}},
		{[]string{"--max-conversion-memory", "NaN"}, []string{"--max-conversion-memory", "not a size"}},
		{[]string{"--trusted-proxies", "10.0.0.0/40"}, []string{"--trusted-proxies", "CIDR"}},
	} {
		p, err := testproc.Start(binary, filepath.Join(t.TempDir(), "data"), tc.args...)
		if err == nil {
			p.Kill()
			t.Fatalf("serve %v started", tc.args)
		}
		var se *testproc.StartError
		if !errors.As(err, &se) {
			t.Fatalf("serve %v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(se.Stderr, w) {
				t.Errorf("serve %v: stderr %q does not say %q", tc.args, se.Stderr, w)
			}
		}
	}
}
