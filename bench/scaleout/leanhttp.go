package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

// leanConn is one client's keep-alive HTTP/1.1 connection to a node, as a lean load generator
// (wrk, pgbench's own client) uses one: the client's goroutine writes each request in one
// write and reads its answer (http.ReadResponse: the status line, the headers, a body of its
// Content-Length or chunked) on the same goroutine. net/http's Transport, which the other
// benchmarks use, adds a read and a write goroutine per connection and hands every request
// and answer between them: about a third of this process's CPU per request, which the
// machine's 2 cores then lack for the node and PostgreSQL (docs/benchmarks.md, "Scale-out").
// The requests are the same bytes net/http's client sends but for its User-Agent and
// Accept-Encoding, which the API ignores.
type leanConn struct {
	host string // host:port
	conn net.Conn
	br   *bufio.Reader
	buf  []byte // the request being written
}

func newLeanConn(base string) (*leanConn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("lean client: %s is not http://", base)
	}
	return &leanConn{host: u.Host}, nil
}

// do sends one request with an optional JSON body and the bearer token, and returns the
// status and the body of the answer; a connection the server closed is dialled again once.
func (c *leanConn) do(method, path, token string, body []byte) (int, []byte, error) {
	status, out, err := c.try(method, path, token, body)
	if err == errStale {
		status, out, err = c.try(method, path, token, body) // on a new connection
	}
	return status, out, err
}

// errStale is a kept connection that the server had closed before the request reached it.
var errStale = errors.New("lean client: the kept connection was closed")

func (c *leanConn) try(method, path, token string, body []byte) (int, []byte, error) {
	fresh := false
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.host)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.br, fresh = conn, bufio.NewReaderSize(conn, 8192), true
	}
	b := append(c.buf[:0], method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nAuthorization: Bearer "...)
	b = append(b, token...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	if body != nil {
		b = append(b, "\r\nContent-Type: application/json"...)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.buf = b
	if _, err := c.conn.Write(b); err != nil {
		c.close()
		if !fresh {
			return 0, nil, errStale
		}
		return 0, nil, fmt.Errorf("lean client: %w", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		if !fresh && err == io.EOF { // closed before a byte of an answer
			return 0, nil, errStale
		}
		return 0, nil, fmt.Errorf("lean client: %w", err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.close()
		return 0, nil, fmt.Errorf("lean client: %w", err)
	}
	if resp.Close {
		c.close()
	}
	return resp.StatusCode, out, nil
}

func (c *leanConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.br = nil, nil
	}
}
