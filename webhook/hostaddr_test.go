package webhook

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestForbidden_DocumentationRanges: the documentation, benchmarking, CGNAT, "this network",
// multicast and broadcast ranges are never destinations.
func TestForbidden_DocumentationRanges(t *testing.T) {
	for _, addr := range []string{
		"192.0.2.1", "192.0.2.255", "198.51.100.7", "203.0.113.200", "2001:db8::1", "3fff::1",
		"198.18.0.1", "198.19.255.255", "100.64.0.1", "0.0.0.0", "0.255.255.255",
		"224.0.0.251", "ff05::2", "255.255.255.255", "192.88.99.1", "::ffff:203.0.113.9",
	} {
		a := netip.MustParseAddr(addr)
		if why := Forbidden(a); why == "" {
			t.Errorf("Forbidden(%s) = \"\", want refused", addr)
		}
		if err := (Guard{}).CheckURL(context.Background(), "https://"+netip.AddrPortFrom(a, 443).String()+"/hook"); !errors.Is(err, ErrForbiddenDestination) || !errors.Is(err, ErrNotPublic) {
			t.Errorf("CheckURL(%s) = %v, want ErrForbiddenDestination and ErrNotPublic", addr, err)
		}
	}
	for _, addr := range []string{"192.0.1.255", "192.0.3.0", "198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0"} {
		if why := Forbidden(netip.MustParseAddr(addr)); why != "" {
			t.Errorf("Forbidden(%s) = %q, a public address next to a documentation range", addr, why)
		}
	}
}

// TestGuard_RefusesThisHostsAddresses: every address of this machine's interfaces (read with
// net.InterfaceAddrs, as the guard does) is refused at registration and at connect time,
// whatever range it is in; AllowPrivate lets them through.
func TestGuard_RefusesThisHostsAddresses(t *testing.T) {
	addrs, err := InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	nonLoopback := 0
	for _, a := range addrs {
		if a.IsLoopback() {
			continue
		}
		nonLoopback++
		ap := netip.AddrPortFrom(a, 443).String()
		if err := (Guard{}).CheckURL(context.Background(), "https://"+ap+"/hook"); !errors.Is(err, ErrForbiddenDestination) {
			t.Errorf("CheckURL of this host's %s = %v, want ErrForbiddenDestination", a, err)
		}
		if err := (Guard{}).Control("tcp", ap, nil); !errors.Is(err, ErrForbiddenDestination) {
			t.Errorf("Control of this host's %s = %v, want ErrForbiddenDestination", a, err)
		}
		if err := (Guard{AllowPrivate: true}).Control("tcp", ap, nil); err != nil {
			t.Errorf("Control of this host's %s with AllowPrivate = %v", a, err)
		}
	}
	if nonLoopback == 0 {
		t.Log("this host has no non-loopback interface address; TestGuard_HostAddrs covers the check")
	}
}

// TestGuard_HostAddrs: an address of this host is refused even when it is public, and the
// reason says so; another public address is not.
func TestGuard_HostAddrs(t *testing.T) {
	own := netip.MustParseAddr("93.184.215.14")
	g := Guard{HostAddrs: func() ([]netip.Addr, error) {
		return []netip.Addr{own, netip.MustParseAddr("2606:4700::6810:84e5")}, nil
	}}
	for _, url := range []string{"https://93.184.215.14/hook", "https://[::ffff:93.184.215.14]/hook", "https://[2606:4700::6810:84e5]:8443/"} {
		err := g.CheckURL(context.Background(), url)
		if !errors.Is(err, ErrForbiddenDestination) || !strings.Contains(err.Error(), "address of this server") {
			t.Errorf("CheckURL(%s) = %v, want refused as this server's address", url, err)
		}
	}
	if err := g.Control("tcp", "93.184.215.14:443", nil); !errors.Is(err, ErrForbiddenDestination) {
		t.Errorf("Control(own address) = %v", err)
	}
	if err := g.CheckURL(context.Background(), "https://8.8.8.8/hook"); err != nil {
		t.Errorf("CheckURL(another public address) = %v", err)
	}
}

// TestRefusal: the message for a refused URL is one fixed text per class, naming neither the
// addresses the host resolved to nor the resolver.
func TestRefusal(t *testing.T) {
	dns := startDNS(t, func(name string, _ int) []netip.Addr {
		if name == "internal.test" {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}
		}
		return nil
	})
	g := Guard{Resolver: dns.resolver()}
	notPublic := Refusal(g.CheckURL(context.Background(), "https://internal.test/hook"))
	for _, url := range []string{"https://internal.test/hook", "https://nothing.test/hook", "http://10.1.2.3/", "http://localhost/"} {
		err := g.CheckURL(context.Background(), url)
		if err == nil {
			t.Fatalf("CheckURL(%s) = nil", url)
		}
		msg := Refusal(err)
		if msg != notPublic {
			t.Errorf("Refusal(%s) = %q, want the one message %q", url, msg, notPublic)
		}
		for _, leak := range []string{"10.1.2.3", "127.0.0.1", ":53", dns.conn.LocalAddr().String(), "lookup", "internal.test", "no such host"} {
			if strings.Contains(msg, leak) {
				t.Errorf("Refusal(%s) = %q tells %q", url, msg, leak)
			}
		}
	}
	form := Refusal(g.CheckURL(context.Background(), "ftp://internal.test/"))
	if form == notPublic || form == "" {
		t.Errorf("Refusal of a bad scheme = %q", form)
	}
	if got := Refusal(g.CheckURL(context.Background(), "https://u:p@internal.test/")); got != form {
		t.Errorf("Refusal of credentials = %q, want %q", got, form)
	}
}
