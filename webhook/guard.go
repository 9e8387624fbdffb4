package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrForbiddenDestination: a webhook URL is not http(s), carries credentials, or its host
// resolves to (or connects to) an address inside a private network or of this host.
var ErrForbiddenDestination = errors.New("webhook: forbidden destination")

// The classes of a refused URL. Every error of CheckURL wraps exactly one of them, so a caller
// can answer with a fixed message per class (Refusal) and keep the details, which name what
// the host resolved to and the resolver, for its own log.
var (
	// ErrURLForm: not an absolute http or https URL with a host and without credentials.
	ErrURLForm = errors.New("webhook: not an http or https URL with a host and no credentials")
	// ErrNotPublic: the host is, resolves to or connects to an address that is not a public
	// one (private, loopback, reserved, this host's own), or it does not resolve at all.
	ErrNotPublic = errors.New("webhook: destination is not a public address")
)

// Refusal is the fixed message that says why CheckURL refused a URL, without what the host
// resolved to or which resolver answered: "" for nil.
func Refusal(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrURLForm):
		return "the destination is refused: it must be an absolute http or https URL with a host and without user:password@"
	default:
		return "the destination is refused: its host must resolve only to public addresses that are not this server's"
	}
}

// Guard refuses webhook destinations that would let an account reach inside the server's
// network (request forgery): loopback, private, link-local (cloud metadata), CGNAT,
// unspecified, multicast, documentation and reserved addresses, also when written as
// IPv4-mapped or NAT64/6to4-embedded IPv6, and this host's own interface addresses. CheckURL checks a URL at registration; Control checks the
// address a connection is actually made to, so DNS rebinding cannot get around the first check.
type Guard struct {
	// AllowPrivate turns the address checks off (--webhook-allow-private: tests and trusted
	// networks). The scheme and credentials checks stay.
	AllowPrivate bool
	// Resolver resolves host names in CheckURL and in a Sender's dialer; nil is
	// net.DefaultResolver.
	Resolver *net.Resolver
	// HostAddrs lists this host's own interface addresses, which are refused as destinations
	// like loopback; nil reads net.InterfaceAddrs, at most once per hostAddrsTTL.
	HostAddrs func() ([]netip.Addr, error)
}

// forbiddenPrefixes are the ranges netip's predicates (IsPrivate, IsLoopback, ...) do not
// cover, and IPv4 link-local once more, so the metadata address is refused by name here.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255 broadcast
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation; never a real receiver
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("2001::/32"),       // Teredo: the IPv4 inside is obfuscated
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated) and ::, ::1
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
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
		return nil, fmt.Errorf("%w: %w: %w", ErrForbiddenDestination, ErrURLForm, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %w: scheme %q: only http and https", ErrForbiddenDestination, ErrURLForm, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: %w: credentials in the URL are not allowed", ErrForbiddenDestination, ErrURLForm)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: %w: URL has no host", ErrForbiddenDestination, ErrURLForm)
	}
	return u, nil
}

// CheckURL returns nil if raw is an http or https URL without credentials whose host (an IP
// literal, or every address it resolves to) is allowed; otherwise an error wrapping
// ErrForbiddenDestination and one of ErrURLForm and ErrNotPublic (a host that does not resolve
// is ErrNotPublic too, wrapping the resolver's error but not ErrForbiddenDestination). Its
// text names the addresses and the resolver: it is for the server's log, and Refusal is for
// the caller. With AllowPrivate the host is not resolved.
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
		if why := g.forbidden(a); why != "" {
			return fmt.Errorf("%w: %w: %s is a %s", ErrForbiddenDestination, ErrNotPublic, host, why)
		}
		return nil
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") || strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".localhost") {
		return fmt.Errorf("%w: %w: %s is a loopback name", ErrForbiddenDestination, ErrNotPublic, host)
	}
	if numericHost(host) {
		return fmt.Errorf("%w: %w: %s is a number, not a name or an IP address", ErrForbiddenDestination, ErrNotPublic, host)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("%w: resolve %s: %w", ErrNotPublic, host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%w: resolve %s: no addresses", ErrNotPublic, host)
	}
	for _, a := range addrs {
		if why := g.forbidden(a); why != "" {
			return fmt.Errorf("%w: %w: %s resolves to %s, a %s", ErrForbiddenDestination, ErrNotPublic, host, a, why)
		}
	}
	return nil
}

// forbidden is Forbidden, and also refuses this host's own interface addresses.
func (g Guard) forbidden(a netip.Addr) string {
	if why := Forbidden(a); why != "" {
		return why
	}
	if g.isHostAddr(a) {
		return "address of this server"
	}
	return ""
}

// hostAddrsTTL is how long the interface addresses read for a Guard without HostAddrs are
// reused: an address added to an interface is refused from the next read on.
const hostAddrsTTL = 10 * time.Second

// hostAddrCache holds this host's interface addresses, read at most once per hostAddrsTTL.
var hostAddrCache struct {
	sync.Mutex
	read  time.Time
	addrs []netip.Addr
}

// InterfaceAddrs returns this host's interface addresses (net.InterfaceAddrs), unmapped and
// without zones.
func InterfaceAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ifas))
	for _, ifa := range ifas {
		var ip net.IP
		switch v := ifa.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap().WithZone(""))
		}
	}
	return out, nil
}

// isHostAddr reports whether a is one of this host's own addresses. When they cannot be read,
// no address is taken for the host's (the ranges still apply).
func (g Guard) isHostAddr(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	var addrs []netip.Addr
	if g.HostAddrs != nil {
		addrs, _ = g.HostAddrs()
	} else {
		hostAddrCache.Lock()
		if now := time.Now(); hostAddrCache.addrs == nil || now.Sub(hostAddrCache.read) > hostAddrsTTL {
			if got, err := InterfaceAddrs(); err == nil {
				hostAddrCache.addrs, hostAddrCache.read = got, now
			}
		}
		addrs = hostAddrCache.addrs
		hostAddrCache.Unlock()
	}
	for _, h := range addrs {
		if h.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
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
	if why := g.forbidden(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %w: connect to %s refused, a %s", ErrForbiddenDestination, ErrNotPublic, ap.Addr(), why)
	}
	return nil
}

// numericHost reports whether host's last label is a decimal, octal or hex number and host is
// not an IP literal (http://2130706433/, http://0x7f.0.0.1/): no real name ends in a numeric
// label, and resolvers that read such names as addresses would reach what the guard refuses.
func numericHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		return false
	}
	last := strings.ToLower(strings.TrimSuffix(host, "."))
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	last = strings.TrimPrefix(last, "0x")
	if last == "" {
		return true
	}
	for _, c := range last {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	// Hex digits alone ("cafe", "add") are names unless written 0x or all decimal.
	return strings.Contains(strings.ToLower(host), "0x") || strings.Trim(last, "0123456789") == ""
}
