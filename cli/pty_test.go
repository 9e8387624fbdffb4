package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ptyProc is the convsvc binary running on a pseudo-terminal, as in a user's shell: stdin,
// stdout and stderr are the terminal, which is its controlling terminal, so that writing ^C
// to the terminal sends SIGINT to it as the keyboard would.
type ptyProc struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{} // the process exited
	read   chan struct{} // the terminal was read to its end
	err    error
}

// startOnPTY starts the binary with args in dir on a new pseudo-terminal.
func startOnPTY(t *testing.T, dir string, env []string, args ...string) *ptyProc {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Skipf("unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Skipf("pseudo-terminal number: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skipf("open pseudo-terminal: %v", err)
	}
	// A wide terminal, so that the progress line is not cut short.
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 200})
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	p := &ptyProc{cmd: cmd, master: master, done: make(chan struct{}), read: make(chan struct{})}
	go func() {
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return // EIO once the process and its terminal are gone
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		master.Close()
	})
	return p
}

// output is everything the terminal showed so far.
func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitOutput polls until the terminal showed want, failing the test after a generous bound.
func (p *ptyProc) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.output(), want) {
		select {
		case <-p.done:
			t.Fatalf("exited (%v) before showing %q; it showed %q", p.err, want, p.output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed %q; it showed %q", want, p.output())
		}
	}
}

// ctrlC types ^C on the terminal.
func (p *ptyProc) ctrlC(t *testing.T) {
	t.Helper()
	if _, err := p.master.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
}

// wait returns the exit status, failing the test unless the process ends within a minute.
func (p *ptyProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after ^C; terminal: %q", p.output())
	}
	// Read what the process wrote last: the terminal ends (EIO) once no process holds it.
	select {
	case <-p.read:
	case <-time.After(30 * time.Second):
	}
	return p.cmd.ProcessState.ExitCode()
}
