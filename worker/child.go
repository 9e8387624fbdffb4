package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
)

// ConfigEnv names the environment variable through which the server gives a worker its
// settings (a JSON childConfig). A process started with it set is a worker.
const ConfigEnv = "CONVSVC_WORKER_CONFIG"

// landlockEnv is set, to what was applied, in a worker that confined itself and ran again.
const landlockEnv = "CONVSVC_WORKER_LANDLOCKED"

// landlockNote describes the Landlock rules of cfg.
func landlockNote(cfg childConfig) string {
	// The last write directory is the worker's own scratch directory, named as such so the
	// note is the same for every worker.
	write := append(append([]string(nil), cfg.WriteDirs[:max(len(cfg.WriteDirs)-1, 0)]...), "its scratch directory")
	return fmt.Sprintf("filesystem: Landlock ABI %d (read: %s; read-write: %s)", landlockABI(), strings.Join(cfg.ReadDirs, ", "), strings.Join(write, ", "))
}

// socketFD is the worker's end of the socket pair (the first of exec.Cmd.ExtraFiles).
const socketFD = 3

// childConfig is what a worker needs to build the standard catalog and confine itself.
type childConfig struct {
	Limits     convert.Limits `json:"limits"`
	FontDir    string         `json:"font_dir"`
	ScratchDir string         `json:"scratch_dir"`
	// ReadDirs and WriteDirs are what Landlock leaves the worker (the font and compile cache
	// directories, its scratch directory); Landlock is off when Landlock is false.
	Landlock  bool     `json:"landlock"`
	ReadDirs  []string `json:"read_dirs,omitempty"`
	WriteDirs []string `json:"write_dirs,omitempty"`
	// NetNamespace is set when the server started the worker in a network namespace of its own.
	NetNamespace bool `json:"net_namespace"`
	// Seccomp asks the worker to install its seccomp filter (no socket but AF_UNIX).
	Seccomp bool `json:"seccomp"`
}

// childExtras, when a test sets it before ChildMain, adds converters to a worker's catalog.
var childExtras func(*convert.Catalog)

// IsChild reports whether this process was started as a worker (ConfigEnv is set). Test
// binaries that run process isolation call it in TestMain and then ChildMain.
func IsChild() bool { return os.Getenv(ConfigEnv) != "" }

// ChildMain runs a worker: it builds the standard catalog from the server's settings, confines
// itself, says it is ready, then converts the jobs the server sends, one at a time, until the
// server closes the socket. It returns the process's exit code.
func ChildMain() int {
	if err := serveChild(); err != nil {
		fmt.Fprintln(os.Stderr, "convsvc worker:", err)
		return 1
	}
	return 0
}

func serveChild() error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(ConfigEnv)), &cfg); err != nil {
		return fmt.Errorf("reading %s: %w", ConfigEnv, err)
	}
	landlocked, confined := os.LookupEnv(landlockEnv)
	if cfg.Landlock && !confined {
		// Confine and run again; back here only when Landlock could not be applied.
		note := landlockNote(cfg)
		if err := landlockExec(cfg.ReadDirs, cfg.WriteDirs, append(os.Environ(), landlockEnv+"="+note)); err != nil {
			landlocked = "filesystem: not confined (Landlock: " + err.Error() + ")"
		}
	}
	os.Unsetenv(ConfigEnv)
	os.Unsetenv(landlockEnv)
	filtered := ""
	if cfg.Seccomp {
		filtered = seccompNote
		if err := installSeccomp(); err != nil {
			filtered = "syscalls: no seccomp filter (" + err.Error() + ")"
		}
	}
	c, err := newConn(os.NewFile(socketFD, "worker-socket"))
	if err != nil {
		return err
	}
	defer c.close()
	standard.SetFontDir(cfg.FontDir)
	cat := standard.NewCatalog(cfg.Limits)
	if childExtras != nil {
		childExtras(cat)
	}
	rb := newRemoteBudget(c)
	cat.SetMemoryBroker(rb)
	applied := []string{}
	if cfg.NetNamespace {
		applied = append(applied, "network: own empty network namespace")
	}
	if cfg.Landlock {
		applied = append(applied, landlocked)
	}
	if cfg.Seccomp {
		applied = append(applied, filtered)
	}
	if err := c.send(reply{Ready: true, Confinement: applied}); err != nil {
		return err
	}
	// One reader: job requests go to the loop below, memory grants to the converter waiting
	// for them (the server's budget is the one every worker shares).
	type job struct {
		req   request
		files []*os.File
	}
	jobs := make(chan job)
	go func() {
		defer close(jobs)
		for {
			var req request
			files, err := c.recv(&req)
			if err != nil {
				// The server closed the socket or went away: nothing left to do.
				rb.failAll("the server went away")
				return
			}
			if req.Grant != nil {
				closeAll(files)
				rb.answer(*req.Grant)
				continue
			}
			jobs <- job{req, files}
		}
	}()
	for j := range jobs {
		if len(j.files) != 2 {
			closeAll(j.files)
			return fmt.Errorf("a request came with %d descriptors, want 2", len(j.files))
		}
		rep := convertOne(progressTo(c), cat, j.req, j.files[0], j.files[1], cfg.ScratchDir)
		closeAll(j.files)
		if err := c.send(rep); err != nil {
			return err
		}
	}
	return nil
}

// storageWriter records the first error of the output file's writes, so a full disk is told
// from a refused input.
type storageWriter struct {
	w   io.Writer
	err error
}

func (s *storageWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// progressTo returns a context whose progress sink (convert.WithProgress) sends the job's
// counts to the server over c, once per whole percent: at most about a hundred small packets
// a job, which the server samples about once a second.
func progressTo(c *conn) context.Context {
	var last atomic.Int64
	last.Store(-1)
	return convert.WithProgress(context.Background(), func(v float64) {
		pct := int64(v * 100)
		for {
			cur := last.Load()
			if pct <= cur {
				return
			}
			if last.CompareAndSwap(cur, pct) {
				break
			}
		}
		c.send(reply{Progress: &v}) // a failed send is the server gone, seen by the reader
	})
}

// convertOne runs one job and describes its result.
func convertOne(ctx context.Context, cat *convert.Catalog, req request, in, out *os.File, scratch string) reply {
	sw := &storageWriter{w: out}
	warnings, err := cat.Convert(ctx, req.From, req.To, req.Options, in, sw, scratch)
	if err == nil && sw.err == nil {
		// The output is re-read here, in the confined process, before the server stores it.
		var st os.FileInfo
		if st, err = out.Stat(); err != nil {
			err = &convert.StorageError{Err: err}
		} else {
			_, err = cat.Verify(context.Background(), req.From, req.To, req.Options, in, out, st.Size())
		}
	}
	if err == nil {
		return reply{Warnings: warnings}
	}
	var se *convert.StorageError
	if sw.err != nil || errors.As(err, &se) {
		re := &replyError{Kind: kindStorage, Message: "writing the output failed", Detail: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) || errors.As(sw.err, &errno) {
			re.Errno = uintptr(errno)
		}
		return reply{Error: re}
	}
	var ce *convert.Error
	if errors.As(err, &ce) {
		return reply{Error: &replyError{Kind: kindConversion, Message: ce.Message, Reason: convert.ErrorReason(err), Detail: err.Error()}}
	}
	return reply{Error: &replyError{Kind: kindConversion, Message: "internal error", Detail: err.Error()}}
}
