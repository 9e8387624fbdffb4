package webhook

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a real DNS server on a loopback UDP port that answers A and AAAA queries from
// a function of the name and the query count, so a test can make a name change its address
// between two look-ups (DNS rebinding).
type dnsServer struct {
	conn net.PacketConn
	mu   sync.Mutex
	n    map[string]int // A queries answered per name
	// answer returns the addresses of name for its nth A (or AAAA) query, counting from 0.
	answer func(name string, n int) []netip.Addr
}

// startDNS starts a dnsServer and returns it; it stops when the test ends.
func startDNS(t *testing.T, answer func(name string, n int) []netip.Addr) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, n: map[string]int{}, answer: answer}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := s.reply(buf[:n]); out != nil {
				_, _ = conn.WriteTo(out, from)
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

// reply builds the answer to one query.
func (s *dnsServer) reply(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil
	}
	question := qs[0]
	name := strings.TrimSuffix(question.Name.String(), ".")
	s.mu.Lock()
	n := s.n[name]
	if question.Type == dnsmessage.TypeA {
		s.n[name]++
	}
	s.mu.Unlock()
	if question.Type == dnsmessage.TypeAAAA && n > 0 {
		n-- // the AAAA query of a look-up pairs with its A query, which may have come first
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(question)
	_ = b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range s.answer(name, n) {
		switch {
		case question.Type == dnsmessage.TypeA && a.Is4():
			_ = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case question.Type == dnsmessage.TypeAAAA && a.Is6():
			_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// queries returns how many A queries for name the server answered.
func (s *dnsServer) queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[name]
}

// resolver returns a pure-Go resolver that asks only this server.
func (s *dnsServer) resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}
