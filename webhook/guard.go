package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrForbiddenDestination: a webhook URL is not http(s), carries credentials, or its host
// resolves to (or connects to) an address inside a private network.
var ErrForbiddenDestination = errors.New("webhook: forbidden destination")

// Guard refuses webhook destinations that would let an account reach inside the server's
// network (request forgery): loopback, private, link-local (cloud metadata), CGNAT,
// unspecified, multicast and reserved addresses, also when written as IPv4-mapped or
// NAT64/6to4-embedded IPv6. CheckURL checks a URL at registration; Control checks the
// address a connection is actually made to, so DNS rebinding cannot get around the first check.
type Guard struct {
	// AllowPrivate turns the address checks off (--webhook-allow-private: tests and trusted
	// networks). The scheme and credentials checks stay.
	AllowPrivate bool
	// Resolver resolves host names in CheckURL and in a Sender's dialer; nil is
	// net.DefaultResolver.
	Resolver *net.Resolver
}

// forbiddenPrefixes are the ranges netip's predicates (IsPrivate, IsLoopback, ...) do not
// cover, and IPv4 link-local once more, so the metadata address is refused by name here.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and 255.255.255.255 broadcast
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation; never a real receiver
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("2001::/32"),      // Teredo: the IPv4 inside is obfuscated
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated) and ::, ::1
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
}

// nat64 and sixToFour carry an IPv4 address, which is checked instead.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embedded returns the IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address
// carries.
func embedded(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// Forbidden reports why a is not a webhook destination, or "" if it may be one.
func Forbidden(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if v4, ok := embedded(a); ok {
		if why := Forbidden(v4); why != "" {
			return why + " (embedded in " + a.String() + ")"
		}
		return ""
	}
	switch {
	case !a.IsValid():
		return "invalid address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsLoopback():
		return "loopback address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "link-local address"
	case a.IsMulticast():
		return "multicast address"
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(a) {
			return "reserved address (" + p.String() + ")"
		}
	}
	return ""
}

// parseURL checks what CheckURL and Send check without resolving: an absolute http or https
// URL with a host and no userinfo.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrForbiddenDestination, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: scheme %q: only http and https", ErrForbiddenDestination, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: credentials in the URL are not allowed", ErrForbiddenDestination)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: URL has no host", ErrForbiddenDestination)
	}
	return u, nil
}

// CheckURL returns nil if raw is an http or https URL without credentials whose host (an IP
// literal, or every address it resolves to) is allowed; otherwise an error wrapping
// ErrForbiddenDestination, or the resolver's error if the host does not resolve. With
// AllowPrivate the host is not resolved.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if why := Forbidden(a); why != "" {
			return fmt.Errorf("%w: %s is a %s", ErrForbiddenDestination, host, why)
		}
		return nil
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") || strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".localhost") {
		return fmt.Errorf("%w: %s is a loopback name", ErrForbiddenDestination, host)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("webhook: resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("webhook: resolve %s: no addresses", host)
	}
	for _, a := range addrs {
		if why := Forbidden(a); why != "" {
			return fmt.Errorf("%w: %s resolves to %s, a %s", ErrForbiddenDestination, host, a, why)
		}
	}
	return nil
}

// Control is a net.Dialer Control function: it refuses to connect to a forbidden address
// (the address the name resolved to at connect time), unless AllowPrivate is set.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse connect address %q: %w", ErrForbiddenDestination, address, err)
	}
	if why := Forbidden(ap.Addr()); why != "" {
		return fmt.Errorf("%w: connect to %s refused, a %s", ErrForbiddenDestination, ap.Addr(), why)
	}
	return nil
}
