package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/convsvc/convsvc/convert"
)

// The protocol between the server and a worker is one SOCK_SEQPACKET socket pair: each message
// is one JSON object in one packet, so there is no framing to get wrong. A request carries
// the job's input and output as two file descriptors (SCM_RIGHTS); the worker answers each
// request with one reply. The worker's first message, before any request, says it is ready
// and what confinement it applied.

// maxMessage bounds one packet; requests and replies are a few hundred bytes.
const maxMessage = 1 << 20

// request asks a worker to convert one job: the input is the first descriptor passed with it,
// the output (an empty file the worker writes from offset 0) the second.
// A request with Grant set carries no descriptors and answers a worker's memory request.
type request struct {
	JobID   string          `json:"job_id,omitempty"`
	From    string          `json:"from,omitempty"`
	To      string          `json:"to,omitempty"`
	Options convert.Options `json:"options"`
	Grant   *memoryGrant    `json:"grant,omitempty"`
}

// Operations of a memoryMsg.
const (
	memAcquire = "acquire" // reserve N, waiting while the server's budget is short; answered
	memReserve = "reserve" // reserve N without waiting (embedded resources); answered
	memRelease = "release" // give N back; not answered
	memAbandon = "abandon" // the acquire ID is no longer wanted (its context ended); not answered
)

// memoryMsg is a worker's request on the server's conversion memory budget, sent mid-job.
type memoryMsg struct {
	ID   uint64 `json:"id"`
	Op   string `json:"op"`
	N    int64  `json:"n"`
	What string `json:"what,omitempty"`
}

// memoryGrant answers the acquire or reserve ID: granted, or refused with Error (a message
// for the user).
type memoryGrant struct {
	ID    uint64 `json:"id"`
	Error string `json:"error,omitempty"`
}

// reply is a worker's message: the ready message (Ready set), a memory request mid-job
// (Memory set), the job's progress mid-job (Progress set) or a job's result.
type reply struct {
	Memory *memoryMsg `json:"memory,omitempty"`
	// Progress is the converter's own count of its progress, 0 to 1 (convert.WithProgress),
	// sent at most once per whole percent; not answered.
	Progress    *float64          `json:"progress,omitempty"`
	Ready       bool              `json:"ready,omitempty"`
	Confinement []string          `json:"confinement,omitempty"`
	Warnings    []convert.Warning `json:"warnings,omitempty"`
	Error       *replyError       `json:"error,omitempty"`
}

// Kinds of a replyError.
const (
	kindConversion = "conversion" // a *convert.Error: Message is for the user
	kindStorage    = "storage"    // writing the output failed
)

// replyError is a failed conversion: Message for the user, Detail for the logs.
type replyError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Reason is the convert.Error's finer failure reason (convert.ErrorReason), or "".
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Errno is the system error behind a storage failure (ENOSPC for a full disk), or 0, so
	// the server can tell a full disk from another fault of the output it handed over.
	Errno uintptr `json:"errno,omitempty"`
}

// conn is one end of the socket pair. One goroutine receives (recv), any may send.
type conn struct {
	c *net.UnixConn
	// buf and oob take each received packet, allocated once: a packet is decoded before the
	// next is read. A buffer per packet (1 MiB, zeroed, then garbage) was 15% of the API
	// server's CPU on a 12 MP TIFF -> JPEG, whose worker reports progress up to 100 times a job.
	buf, oob []byte
}

// newConn wraps the socket f (which it takes over).
func newConn(f *os.File) (*conn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("worker socket is a %T, not a unix socket", c)
	}
	return &conn{c: uc}, nil
}

// send writes v as one packet with the descriptors fds.
func (c *conn) send(v any, fds ...int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		if oob, err = rights(fds); err != nil {
			return err
		}
	}
	_, _, err = c.c.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one packet into v and returns the descriptors that came with it. Only one
// goroutine calls it: v is decoded (copied out of the buffer) before recv returns.
func (c *conn) recv(v any) ([]*os.File, error) {
	if c.buf == nil {
		c.buf, c.oob = make([]byte, maxMessage), make([]byte, rightsSpace(4))
	}
	buf, oob := c.buf, c.oob
	n, oobn, flags, _, err := c.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	if oobn > 0 {
		if files, err = passedFiles(oob[:oobn]); err != nil {
			return nil, err
		}
	}
	if n == 0 && oobn == 0 {
		return nil, errors.New("the other end closed the socket")
	}
	if truncated(flags) {
		closeAll(files)
		return nil, errors.New("a message was truncated")
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		closeAll(files)
		return nil, err
	}
	return files, nil
}

func (c *conn) close() error { return c.c.Close() }

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
