package service

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limits (issue 25): idle keep-alive connections by the thousand once exhausted
// the process's file descriptors and hung both listeners.
const (
	// DefaultMaxConnectionsPerAddress caps one client address's open connections on a listener.
	DefaultMaxConnectionsPerAddress = 256
	// maxConnectionsCeiling is the most connections a listener takes by default, whatever
	// the file limit.
	maxConnectionsCeiling = 10_000
	// fdHeadroom is how many descriptors stay for the database, blob files, conversions'
	// scratch files and the listeners themselves, besides 4 per worker.
	fdHeadroom = 256
	// maxShedding bounds the goroutines answering refused connections (each holds its
	// descriptor for at most 1.5 s); beyond it a refused connection is closed without an
	// answer.
	maxShedding = 64
)

// connectionBudget is how many connections each listener takes by default: the file limit less
// the headroom, in thirds (an API connection costs one descriptor; a storage connection two,
// its socket and the file it streams), at most maxConnectionsCeiling. fileLimit 0 (unknown)
// gives the ceiling.
func connectionBudget(fileLimit uint64, workers int) int {
	if fileLimit == 0 {
		return maxConnectionsCeiling
	}
	reserve := uint64(fdHeadroom + 4*workers)
	if fileLimit <= reserve+3*16 {
		return 16
	}
	return int(min((fileLimit-reserve)/3, maxConnectionsCeiling))
}

// shedBody is what a refused connection reads, in the API's error shape.
const shedBody = `{"error":{"code":"too_many_connections","message":"too many open connections to this server, or from your address; close idle connections and retry after a second"}}`

var shedResponse = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: application/json\r\n" +
	"Retry-After: 1\r\n" +
	"Connection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(shedBody)) + "\r\n\r\n" + shedBody)

// connLimiter caps a listener's open connections, in all and per client address. A
// connection over either cap is answered 503 with Retry-After at once, before its request is
// read, and closed; it never reaches the HTTP server. Connections from a trusted reverse proxy
// (--trusted-proxies) count toward the total only: the proxy carries every client, so a cap
// on its address would let one client's connections refuse all others' (the API bounds each
// key's long polls instead, httpapi.DefaultMaxWaitsPerKey).
type connLimiter struct {
	net.Listener
	name    string // api or storage, for the log
	max     int    // open connections in all; 0: no cap
	perAddr int    // open connections per client address; 0: no cap
	trusted []netip.Prefix
	log     *slog.Logger

	mu     sync.Mutex
	open   int
	byAddr map[string]int

	shedding chan struct{} // one token per goroutine answering a refused connection
	refused  atomic.Uint64
	warned   atomic.Int64 // unix seconds of the last warning, so a flood logs once a minute
}

func newConnLimiter(ln net.Listener, name string, max, perAddr int, log *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, name: name, max: max, perAddr: perAddr, log: log,
		byAddr: map[string]int{}, shedding: make(chan struct{}, maxShedding)}
}

// Accept returns the next connection within the caps; those over them are answered and closed.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr())
		l.mu.Lock()
		overAll := l.max > 0 && l.open >= l.max
		overAddr := l.perAddr > 0 && l.byAddr[addr] >= l.perAddr && !l.fromProxy(addr)
		if !overAll && !overAddr {
			l.open++
			l.byAddr[addr]++
		}
		l.mu.Unlock()
		if !overAll && !overAddr {
			return &limitedConn{Conn: c, l: l, addr: addr}, nil
		}
		l.refuse(c, addr, overAll)
	}
}

// fromProxy reports whether addr (hostOf a peer) is a trusted reverse proxy.
func (l *connLimiter) fromProxy(addr string) bool {
	if len(l.trusted) == 0 {
		return false
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Open is how many connections are open now.
func (l *connLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is how many connections were refused since start.
func (l *connLimiter) Refused() uint64 { return l.refused.Load() }

// refuse answers a connection over a cap with 503 and closes it, in the background.
func (l *connLimiter) refuse(c net.Conn, addr string, overAll bool) {
	l.refused.Add(1)
	if now := time.Now().Unix(); now-l.warned.Load() >= 60 {
		l.warned.Store(now)
		limit := fmt.Sprintf("--max-connections-per-address %d", l.perAddr)
		if overAll {
			limit = fmt.Sprintf("--max-connections %d", l.max)
		}
		l.log.Warn("refusing connections over the limit", "listener", l.name, "client_addr", addr, "limit", limit)
	}
	select {
	case l.shedding <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.shedding }()
		defer c.Close()
		// Wait a moment for the request to begin: an answer that arrives before the client
		// has sent its request is, to Go's net/http among others, an unsolicited response on
		// an idle connection, an error instead of the 503.
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		var first [1]byte
		c.Read(first[:])
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(shedResponse); err != nil {
			return
		}
		// Close gently: half-close, then read what the client sent for a moment, so the
		// close does not reset the connection and lose the answer.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

func (l *connLimiter) release(addr string) {
	l.mu.Lock()
	l.open--
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
	l.mu.Unlock()
}

// limitedConn gives its place back when closed.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	addr string
	once sync.Once
}

// Close closes the connection and releases its place, once.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}

// ReadFrom keeps the TCP connection's sendfile and splice for downloads.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite half-closes, as net/http does before closing a connection gently.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
