// Package testproc builds the convsvc binary and runs `convsvc serve` as a real process for
// tests that signal, kill and restart it.
package testproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// Build compiles convsvc (from the module root) with the given build tags into dir and returns
// the binary's path.
func Build(dir, moduleRoot string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "convsvc")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	return bin, cmd.Run()
}

// Proc is a running `convsvc serve`.
type Proc struct {
	cmd     *exec.Cmd
	URL     string
	BlobURL string
	Key     string // printed on an empty data dir only
	done    chan struct{}
	mu      sync.Mutex
	exitErr error
	stderr  *lockedBuffer
}

// servingLine is serve's ready notice; with S3 object storage it names no blob URL.
var servingLine = regexp.MustCompile(`serving the API on (\S+) and object storage on ?(\S*)`)

// Serve starts `bin serve --data data` on kernel-chosen loopback ports and waits until it
// serves. Extra flags follow. The process is killed at test cleanup if still running.
func Serve(t testing.TB, bin, data string, args ...string) *Proc {
	t.Helper()
	p, err := Start(bin, data, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// Start is Serve without a test: it returns an error when the process does not come up.
func Start(bin, data string, args ...string) (*Proc, error) {
	full := append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0", "--blob-listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(bin, full...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if os.Getenv("CONVSVC_TEST_LOG") != "" {
		cmd.Stderr = io.MultiWriter(p.stderr, os.Stderr)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "cs_live_") {
				p.Key = line
			}
			if m := servingLine.FindStringSubmatch(line); m != nil {
				p.URL, p.BlobURL = m[1], m[2]
				close(ready)
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		return nil, &StartError{Err: p.ExitErr(), Stderr: p.stderr.String()}
	case <-time.After(testtime.Scale(30 * time.Second)):
		p.Kill()
		return nil, &StartError{Err: os.ErrDeadlineExceeded, Stderr: p.stderr.String()}
	}
}

// StartError says why serve did not come up, with its stderr.
type StartError struct {
	Err    error
	Stderr string
}

func (e *StartError) Error() string {
	return "convsvc serve did not start: " + e.Err.Error() + "\n" + e.Stderr
}

// Signal sends sig and waits up to timeout for the process to exit; false if it did not.
func (p *Proc) Signal(sig syscall.Signal, timeout time.Duration) bool {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitErr is the process's exit error (nil for exit status 0), once Done.
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Stderr is everything the process logged so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// BuildForTests builds the binary (with tags) from the module root above the calling test's
// package into a temporary directory, for a TestMain; cleanup removes it. It panics on failure,
// since no test can run without the binary.
func BuildForTests(tags ...string) (bin string, cleanup func()) {
	dir, err := os.MkdirTemp("", "convsvc-e2e-*")
	if err != nil {
		panic(err)
	}
	root, err := filepath.Abs("..")
	if err == nil {
		bin, err = Build(dir, root, tags...)
	}
	if err != nil {
		os.RemoveAll(dir)
		panic("build convsvc: " + err.Error())
	}
	return bin, func() { os.RemoveAll(dir) }
}
