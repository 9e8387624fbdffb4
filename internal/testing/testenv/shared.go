package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/httpapi/openapitest"
	"github.com/convsvc/convsvc/service"
)

var shared struct {
	once sync.Once
	v    *openapitest.Validator
	err  error
}

// SharedValidator is the one OpenAPI validator of the test binary: every Env's e.Validator
// is a view of it, so its Seen covers every exchange of every test (for a TestMain that checks
// which documented statuses the suite produced).
func SharedValidator() (*openapitest.Validator, error) {
	shared.once.Do(func() { shared.v, shared.err = openapitest.Load(httpapi.OpenAPIDocument) })
	return shared.v, shared.err
}

var sink struct {
	mu sync.Mutex
	w  io.Writer
}

// SetLogSink sends the JSON log (debug level) of every service Start runs from now on to w, so a
// TestMain can check every line the whole suite logged. Writes to w are serialised; nil stops it.
func SetLogSink(w io.Writer) {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	sink.w = w
}

// sinkWriter forwards to the current sink, one record per Write, one Write at a time.
type sinkWriter struct{}

// Write hands p to the sink.
func (sinkWriter) Write(p []byte) (int, error) {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.w == nil {
		return len(p), nil
	}
	return sink.w.Write(p)
}

// defaultLogWriter is where a service logs unless a test says otherwise: the sink, stderr
// with CONVSVC_TEST_LOG set, both, or nowhere (nil).
func defaultLogWriter() io.Writer {
	sink.mu.Lock()
	hasSink := sink.w != nil
	sink.mu.Unlock()
	stderr := os.Getenv("CONVSVC_TEST_LOG") != ""
	switch {
	case hasSink && stderr:
		return io.MultiWriter(sinkWriter{}, os.Stderr)
	case hasSink:
		return sinkWriter{}
	case stderr:
		return os.Stderr
	}
	return nil
}

func jsonLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// LogCapture collects the JSON log records (debug level) of the services started with its
// Option; the sink set with SetLogSink still gets them too. It is safe for concurrent use.
type LogCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends one or more log lines.
func (c *LogCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// Option makes Start log to c.
func (c *LogCapture) Option() func(*service.Config) {
	return func(cfg *service.Config) {
		var w io.Writer = c
		if d := defaultLogWriter(); d != nil {
			w = io.MultiWriter(c, d)
		}
		cfg.Logger = jsonLogger(w)
	}
}

// String is everything logged so far.
func (c *LogCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Records decodes every line logged so far; a line that is not a JSON object becomes
// {"unparsed": line}.
func (c *LogCapture) Records() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(c.String())))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			rec = map[string]any{"unparsed": sc.Text()}
		}
		out = append(out, rec)
	}
	return out
}
