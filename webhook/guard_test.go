package webhook

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestForbidden(t *testing.T) {
	for _, tt := range []struct {
		addr      string
		forbidden bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"10.0.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"169.254.0.1", true},
		{"fd00:ec2::254", true}, // AWS metadata over IPv6
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"::", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"ff02::1", true},
		{"ff0e::1", true},
		{"100.64.0.1", true}, // CGNAT
		{"100.127.255.255", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"198.18.0.1", true},
		{"192.0.0.170", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped
		{"::ffff:10.1.2.3", true},
		{"::ffff:169.254.169.254", true},
		{"::127.0.0.1", true},        // IPv4-compatible
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", true},    // NAT64 of 127.0.0.1
		{"2002:7f00:1::1", true},     // 6to4 of 127.0.0.1
		{"2002:a00:1::1", true},      // 6to4 of 10.0.0.1
		{"fec0::1", true},
		{"2001:db8::1", true},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, // Teredo
		// Public addresses are allowed.
		{"93.184.215.14", false},
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"100.63.255.255", false}, // just below CGNAT
		{"100.128.0.0", false},    // just above
		{"172.15.255.255", false}, // just below 172.16/12
		{"172.32.0.0", false},
		{"11.0.0.1", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001:80b::200e", false},
	} {
		a := netip.MustParseAddr(tt.addr)
		why := Forbidden(a)
		if (why != "") != tt.forbidden {
			t.Errorf("Forbidden(%s) = %q, want forbidden=%v", tt.addr, why, tt.forbidden)
		}
		// Control sees the same address with a port, as the dialer passes it.
		err := Guard{}.Control("tcp", netip.AddrPortFrom(a.WithZone(""), 443).String(), nil)
		if tt.forbidden != errors.Is(err, ErrForbiddenDestination) || (!tt.forbidden && err != nil) {
			t.Errorf("Control(%s) = %v, want forbidden=%v", tt.addr, err, tt.forbidden)
		}
		if err := (Guard{AllowPrivate: true}).Control("tcp", netip.AddrPortFrom(a.WithZone(""), 443).String(), nil); err != nil {
			t.Errorf("Control(%s) with AllowPrivate = %v, want nil", tt.addr, err)
		}
	}
	if Forbidden(netip.Addr{}) == "" {
		t.Error("the zero Addr is allowed")
	}
}

func TestGuard_CheckURL(t *testing.T) {
	public := netip.MustParseAddr("93.184.215.14")
	dns := startDNS(t, func(name string, _ int) []netip.Addr {
		switch name {
		case "public.test":
			return []netip.Addr{public}
		case "private.test":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}
		case "mixed.test": // one public and one private address: refused
			return []netip.Addr{public, netip.MustParseAddr("127.0.0.1")}
		case "metadata.test":
			return []netip.Addr{netip.MustParseAddr("fd00:ec2::254")}
		case "public6.test":
			return []netip.Addr{netip.MustParseAddr("2606:4700:4700::1111")}
		}
		return nil // NOERROR, no addresses
	})
	ctx := context.Background()
	for _, tt := range []struct {
		url          string
		forbidden    bool // wraps ErrForbiddenDestination without AllowPrivate
		privateOK    bool // nil with AllowPrivate
		resolveError bool // a resolver error (neither nil nor forbidden)
	}{
		{url: "https://public.test/hook", privateOK: true},
		{url: "http://public.test:8080/hook?x=1", privateOK: true},
		{url: "HTTPS://public.test/hook", privateOK: true},
		{url: "https://public6.test/hook", privateOK: true},
		{url: "https://93.184.215.14/hook", privateOK: true},
		{url: "https://[2606:4700:4700::1111]:8443/hook", privateOK: true},
		{url: "https://private.test/hook", forbidden: true, privateOK: true},
		{url: "https://mixed.test/hook", forbidden: true, privateOK: true},
		{url: "https://metadata.test/", forbidden: true, privateOK: true},
		{url: "http://localhost:8080/hook", forbidden: true, privateOK: true},
		{url: "http://LOCALHOST./hook", forbidden: true, privateOK: true},
		{url: "http://app.localhost/hook", forbidden: true, privateOK: true},
		{url: "http://127.0.0.1:9/hook", forbidden: true, privateOK: true},
		{url: "http://[::1]:9/hook", forbidden: true, privateOK: true},
		{url: "http://[::ffff:127.0.0.1]/hook", forbidden: true, privateOK: true},
		{url: "http://169.254.169.254/latest/meta-data/", forbidden: true, privateOK: true},
		{url: "http://[fd00:ec2::254]/latest/meta-data/", forbidden: true, privateOK: true},
		{url: "http://100.64.1.1/", forbidden: true, privateOK: true},
		{url: "http://0.0.0.0:8080/", forbidden: true, privateOK: true},
		{url: "http://[fe80::1%25eth0]/", forbidden: true, privateOK: true},
		// Scheme, credentials and shape are refused even with AllowPrivate.
		{url: "ftp://public.test/hook", forbidden: true},
		{url: "file:///etc/passwd", forbidden: true},
		{url: "gopher://public.test/", forbidden: true},
		{url: "https://user:pass@public.test/hook", forbidden: true},
		{url: "https://user@public.test/hook", forbidden: true},
		{url: "/relative/hook", forbidden: true},
		{url: "https:///nohost", forbidden: true},
		{url: "https://public.test:bad/", forbidden: true},
		{url: "", forbidden: true},
		// A name without addresses is a resolver error, not a forbidden destination.
		{url: "https://nothing.test/hook", resolveError: true, privateOK: true},
		// Numeric hosts that are not IP literals to Go: no real name ends in a number, and a
		// resolver that reads them as addresses would reach what the guard refuses.
		{url: "http://2130706433/", forbidden: true, privateOK: true},
		{url: "http://0x7f.0.0.1/", forbidden: true, privateOK: true},
		{url: "http://0177.0.0.1/", forbidden: true, privateOK: true},
	} {
		g := Guard{Resolver: dns.resolver()}
		err := g.CheckURL(ctx, tt.url)
		switch {
		case tt.resolveError:
			if err == nil || errors.Is(err, ErrForbiddenDestination) {
				t.Errorf("CheckURL(%q) = %v, want a resolver error", tt.url, err)
			}
		case tt.forbidden:
			if !errors.Is(err, ErrForbiddenDestination) {
				t.Errorf("CheckURL(%q) = %v, want ErrForbiddenDestination", tt.url, err)
			}
		default:
			if err != nil {
				t.Errorf("CheckURL(%q) = %v, want nil", tt.url, err)
			}
		}
		g.AllowPrivate = true
		err = g.CheckURL(ctx, tt.url)
		if tt.privateOK != (err == nil) {
			t.Errorf("CheckURL(%q) with AllowPrivate = %v, want ok=%v", tt.url, err, tt.privateOK)
		}
	}
	if n := dns.queries("public.test"); n == 0 {
		t.Error("the test resolver was never asked: the checks did not resolve through it")
	}
}

// TestGuard_CheckURL_Localhost uses the system resolver: localhost resolves to 127.0.0.1 (or
// ::1) and passes only with AllowPrivate.
func TestGuard_CheckURL_Localhost(t *testing.T) {
	err := Guard{}.CheckURL(context.Background(), "http://localhost:8080/hook")
	if !errors.Is(err, ErrForbiddenDestination) || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("CheckURL(localhost) = %v, want ErrForbiddenDestination naming localhost", err)
	}
	if err := (Guard{AllowPrivate: true}).CheckURL(context.Background(), "http://localhost:8080/hook"); err != nil {
		t.Fatalf("CheckURL(localhost) with AllowPrivate = %v", err)
	}
}

// TestGuard_NumericHost holds the names that are numbers apart from real names.
func TestGuard_NumericHost(t *testing.T) {
	for host, want := range map[string]bool{
		"2130706433": true, "0x7f.0.0.1": true, "0177.0.0.1": true, "0x7f000001": true, "1.2.3": true,
		"example.com": false, "foo.cafe": false, "127.0.0.1": false, "::1": false, "a1.b2": false,
	} {
		if got := numericHost(host); got != want {
			t.Errorf("numericHost(%q) = %v, want %v", host, got, want)
		}
	}
}
