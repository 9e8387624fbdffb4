package blobstore

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// DefaultProgressTimeout is how long an object-storage transfer may go without moving
// progressBytes (or ending) before the handler cuts it.
const DefaultProgressTimeout = 60 * time.Second

// progressBytes is the progress a transfer must make within each progress timeout: 64 KiB a
// minute by default, about 1.1 KB/s, far below any live link and far above a stalled one.
const progressBytes = 64 << 10

// HandlerConfig tunes the object-storage handler.
type HandlerConfig struct {
	// ProgressTimeout is how long an upload or download may go without moving 64 KiB (or
	// ending) before its connection is cut; a cut upload leaves nothing behind and frees its
	// URL for a retry. 0 means DefaultProgressTimeout; negative turns the check off.
	ProgressTimeout time.Duration
}

func (c HandlerConfig) progressTimeout() time.Duration {
	switch {
	case c.ProgressTimeout == 0:
		return DefaultProgressTimeout
	case c.ProgressTimeout < 0:
		return 0
	}
	return c.ProgressTimeout
}

// progressReader reads an upload's body, pushing the connection's read deadline a progress
// timeout ahead each time progressBytes more have arrived. A body that stops (or trickles
// slower than progressBytes per timeout) hits the deadline, and its Read fails.
type progressReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	moved   int64 // bytes since the deadline was last pushed
	stalled bool  // a Read failed on the deadline
}

func newProgressReader(w http.ResponseWriter, r io.Reader, timeout time.Duration) *progressReader {
	p := &progressReader{r: r, rc: http.NewResponseController(w), timeout: timeout}
	if timeout > 0 {
		p.rc.SetReadDeadline(time.Now().Add(timeout))
	}
	return p
}

// Read reads from the body and notes the progress.
func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.timeout > 0 {
		if p.moved += int64(n); p.moved >= progressBytes {
			p.moved = 0
			p.rc.SetReadDeadline(time.Now().Add(p.timeout))
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			p.stalled = true
		}
	}
	return n, err
}

// progressWriter writes a download in pieces of at most progressBytes, each of which must
// leave within a progress timeout of the last: a reader that stops (or reads slower than
// progressBytes per timeout) fails the write and the connection closes.
type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (p *progressWriter) push() {
	if p.timeout > 0 {
		p.rc.SetWriteDeadline(time.Now().Add(p.timeout))
	}
}

// done clears the write deadline, so the next request on the connection starts afresh.
func (p *progressWriter) done() {
	if p.timeout > 0 {
		p.rc.SetWriteDeadline(time.Time{})
	}
}

// Write writes b piece by piece, each with its own deadline.
func (p *progressWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		p.push()
		n, err := p.ResponseWriter.Write(b[:min(len(b), progressBytes)])
		written += n
		b = b[n:]
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// ReadFrom sends src piece by piece, each with its own deadline. The pieces of a file that
// http.ServeContent hands over as an *io.LimitedReader are LimitedReaders over the file
// itself, so the connection's sendfile still applies.
func (p *progressWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := p.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{p}, src)
	}
	outer, limited := src.(*io.LimitedReader)
	var total int64
	for {
		piece := &io.LimitedReader{R: src, N: progressBytes}
		if limited {
			if outer.N <= 0 {
				return total, nil
			}
			piece = &io.LimitedReader{R: outer.R, N: min(outer.N, progressBytes)}
		}
		p.push()
		n, err := rf.ReadFrom(piece)
		total += n
		if limited {
			outer.N -= n
		}
		if err != nil || piece.N > 0 { // an error, or the source ended inside the piece
			return total, err
		}
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
