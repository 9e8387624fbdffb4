package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientKey is the key per-address limits count under: the client's address (clientAddr),
// an IPv6 one cut to its /64, since one host commonly holds a whole /64 and could otherwise
// take a fresh budget for every address in it.
func (s *Server) clientKey(r *http.Request) string {
	a := clientAddr(r, s.cfg.TrustedProxies)
	if !a.IsValid() {
		return r.RemoteAddr // not an IP peer (a test's pipe): one budget per connection name
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// clientAddr is the address of the client behind r. It is the TCP peer, unless the peer is in
// trusted: then the Forwarded (RFC 7239) or X-Forwarded-For header names it, read from the
// right (the hop the trusted proxy appended) past every address that is itself a trusted
// proxy. A client can put anything at the left of those headers, so nothing left of the first
// untrusted address counts. When both headers are present and name different clients, one of
// them was not written by the proxy and there is no telling which: the proxy's own address is
// used, so a forged header buys nothing but a budget shared with every other forger. An entry
// that is not an address ("unknown", an obfuscated name) likewise stops at the proxy that
// wrote it.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if len(trusted) == 0 || !isTrusted(addr, trusted) {
		return addr
	}
	fwd, hasFwd := r.Header["Forwarded"]
	xff, hasXFF := r.Header["X-Forwarded-For"]
	switch {
	case hasFwd && hasXFF:
		a := rightmostUntrusted(forwardedFor(fwd), addr, trusted)
		if b := rightmostUntrusted(xForwardedFor(xff), addr, trusted); a != b {
			return addr
		}
		return a
	case hasFwd:
		return rightmostUntrusted(forwardedFor(fwd), addr, trusted)
	case hasXFF:
		return rightmostUntrusted(xForwardedFor(xff), addr, trusted)
	}
	return addr
}

// maxForwardedHops bounds how many entries of a forwarding header are read, from the right.
const maxForwardedHops = 64

// rightmostUntrusted walks chain (left to right as the header lists hops) from the right,
// starting at the trusted peer, and returns the first address not in trusted; an entry that
// is not an address ends the walk at the last trusted hop.
func rightmostUntrusted(chain []string, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	hop := peer
	for i, n := len(chain)-1, 0; i >= 0 && n < maxForwardedHops; i, n = i-1, n+1 {
		a, ok := parseHopAddr(chain[i])
		if !ok {
			return hop
		}
		if !isTrusted(a, trusted) {
			return a
		}
		hop = a
	}
	return hop
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHopAddr reads one hop as proxies write it: 192.0.2.1, 192.0.2.1:4711, 2001:db8::1,
// [2001:db8::1] or [2001:db8::1]:4711. A zone is refused: it names no host on the network.
func parseHopAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), a.Zone() == ""
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), ap.Addr().Zone() == ""
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() && a.Zone() == "" {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// xForwardedFor lists the hops of every X-Forwarded-For line, in order.
func xForwardedFor(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for hop := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// forwardedFor lists the for= value of every element of every Forwarded line, in order; an
// element without one contributes "" (not an address). Quoted strings may hold commas and
// semicolons and backslash escapes (RFC 7230 quoted-string).
func forwardedFor(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for _, elem := range splitQuoted(line, ',') {
			value := ""
			for _, pair := range splitQuoted(elem, ';') {
				name, v, ok := strings.Cut(pair, "=")
				if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
					value = unquote(strings.TrimSpace(v))
					break
				}
			}
			hops = append(hops, value)
		}
	}
	return hops
}

// splitQuoted splits s at sep outside quoted strings.
func splitQuoted(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote removes the quotes and escapes of a quoted string; a token is returned as it is.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
