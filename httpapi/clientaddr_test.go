package httpapi

import (
	"net/http"
	"net/netip"
	"testing"
)

// TestClientAddr is the proxy parsing table: which address the per-address limits count
// under, for a peer and its forwarding headers.
func TestClientAddr(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	tests := []struct {
		name    string
		peer    string
		trusted []netip.Prefix
		headers [][2]string
		want    string
	}{
		{"no proxies configured: headers ignored", "192.0.2.1:5000", nil, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "192.0.2.1"},
		{"untrusted peer: XFF ignored", "192.0.2.1:5000", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "192.0.2.1"},
		{"untrusted peer: Forwarded ignored", "192.0.2.1:5000", proxies, [][2]string{{"Forwarded", "for=198.51.100.1"}}, "192.0.2.1"},
		{"untrusted peer inside a trusted chain", "192.0.2.1:5000", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1, 10.0.0.5"}}, "192.0.2.1"},
		{"trusted peer without headers", "10.1.2.3:5000", proxies, nil, "10.1.2.3"},
		{"trusted peer, one hop", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
		{"right-most untrusted wins over a spoofed left", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "203.0.113.9, 198.51.100.1"}}, "198.51.100.1"},
		{"trusted hops are skipped", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "203.0.113.9, 198.51.100.1, 10.9.9.9,10.8.8.8"}}, "198.51.100.1"},
		{"several XFF lines are one list", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-For", "198.51.100.1, 10.9.9.9"}}, "198.51.100.1"},
		{"every hop trusted: the left-most", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "10.7.7.7, 10.9.9.9"}}, "10.7.7.7"},
		{"XFF with a port", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1:4711"}}, "198.51.100.1"},
		{"XFF IPv6 in brackets", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "[2001:db8::7]"}}, "2001:db8::7"},
		{"XFF IPv6 with a port", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "[2001:db8::7]:4711"}}, "2001:db8::7"},
		{"XFF IPv4-mapped", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "::ffff:198.51.100.1"}}, "198.51.100.1"},
		{"XFF garbage stops at the proxy", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1, not-an-ip"}}, "10.1.2.3"},
		{"XFF garbage behind a trusted hop stops there", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "garbage, 10.9.9.9"}}, "10.9.9.9"},
		{"XFF with a zone is garbage", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", "fe80::1%eth0"}}, "10.1.2.3"},
		{"XFF empty entry", "10.1.2.3:5000", proxies, [][2]string{{"X-Forwarded-For", ""}}, "10.1.2.3"},
		{"Forwarded token", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "for=198.51.100.1"}}, "198.51.100.1"},
		{"Forwarded case-insensitive name, other params", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "proto=https;For=198.51.100.1;by=10.1.2.3"}}, "198.51.100.1"},
		{"Forwarded quoted IPv6 with port", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded quoted IPv4 with port", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", `for="198.51.100.1:80"`}}, "198.51.100.1"},
		{"Forwarded list: right-most untrusted", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", `for=203.0.113.9, for=198.51.100.1;proto=http, for=10.4.4.4`}}, "198.51.100.1"},
		{"Forwarded quoted comma is not a separator", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", `for=198.51.100.1, for="x, for=10.0.0.1"`}}, "10.1.2.3"},
		{"Forwarded unknown stops at the proxy", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "for=198.51.100.1, for=unknown"}}, "10.1.2.3"},
		{"Forwarded obfuscated stops at the proxy", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "for=_hidden"}}, "10.1.2.3"},
		{"Forwarded element without for", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "proto=https"}}, "10.1.2.3"},
		{"both headers agree", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "for=198.51.100.1"}, {"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
		{"both headers disagree: the proxy", "10.1.2.3:5000", proxies, [][2]string{{"Forwarded", "for=203.0.113.9"}, {"X-Forwarded-For", "198.51.100.1"}}, "10.1.2.3"},
		{"IPv6 proxy", "[2001:db8:ffff::1]:443", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
		{"IPv4-mapped peer", "[::ffff:10.1.2.3]:443", proxies, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
		{"bare address as a /32 proxy", "192.0.2.50:1", []netip.Prefix{netip.MustParsePrefix("192.0.2.50/32")}, [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.peer, Header: http.Header{}}
			for _, h := range tt.headers {
				r.Header.Add(h[0], h[1])
			}
			if got := clientAddr(r, tt.trusted); got.String() != tt.want {
				t.Fatalf("clientAddr = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestClientKey: IPv6 clients are counted per /64, IPv4 per address, a peer that is not an
// IP address by its name.
func TestClientKey(t *testing.T) {
	s := &Server{}
	for peer, want := range map[string]string{
		"192.0.2.1:5000":          "192.0.2.1",
		"[2001:db8:1:2:3::4]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::]:1": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.1]:80":   "192.0.2.1",
		"pipe":                    "pipe",
	} {
		if got := s.clientKey(&http.Request{RemoteAddr: peer}); got != want {
			t.Errorf("clientKey(%s) = %s, want %s", peer, got, want)
		}
	}
}
