package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/bytesize"
)

// progress shows the state of every file being converted on one terminal line, rewritten in
// place with \r: the transfer of the file that moved last (bytes, total, percent) or its job's
// state, with how many files are done. Summary lines are printed above it. When disabled
// (stdout is not a terminal) it only prints the summary lines, so scripts see nothing else.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	width   int
	files   []*fileProgress
	done    int
	current *fileProgress // the file that changed last
	drawn   int           // visible length of the line on screen
	last    time.Time
	every   time.Duration // least time between redraws for byte counts
	now     func() time.Time
}

// fileProgress is one file's state.
type fileProgress struct {
	name        string
	phase       string // upload, queued, running, download, ...
	done, total int64
	finished    bool
}

// newProgress renders on w when w is a terminal.
func newProgress(w io.Writer) *progress {
	p := &progress{w: w, width: 80, every: 100 * time.Millisecond, now: time.Now}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.enabled = true
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			p.width = width
		}
	}
	return p
}

// add starts following a file.
func (p *progress) add(name string) *fileProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &fileProgress{name: name, phase: "waiting"}
	p.files = append(p.files, f)
	return f
}

// transfer records bytes moved in a phase (upload or download); redraws at most every p.every.
func (p *progress) transfer(f *fileProgress, phase string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := f.phase != phase
	f.phase, f.done, f.total = phase, done, total
	p.current = f
	if changed || done == total || p.now().Sub(p.last) >= p.every {
		p.draw()
	}
}

// state records a phase without bytes (queued, running) and redraws.
func (p *progress) state(f *fileProgress, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f.phase, f.done, f.total = phase, 0, 0
	p.current = f
	p.draw()
}

// finish prints a file's summary line (if any) above the progress line and stops following
// the file.
func (p *progress) finish(f *fileProgress, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f != nil && !f.finished {
		f.finished = true
		p.done++
		if p.current == f {
			p.current = nil
		}
	}
	if !p.enabled {
		if line != "" {
			fmt.Fprintln(p.w, line)
		}
		return
	}
	p.clear()
	if line != "" {
		fmt.Fprintln(p.w, line)
	}
	p.draw()
}

// note writes lines to w (standard error, say) without tearing the progress line, which is
// cleared first and drawn again after.
func (p *progress) note(w io.Writer, lines []string) {
	if len(lines) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enabled {
		p.clear()
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if p.enabled {
		p.draw()
	}
}

// close clears the progress line.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enabled {
		p.clear()
	}
}

// clear blanks the line: carriage return, spaces over what was drawn, carriage return.
func (p *progress) clear() {
	if p.drawn > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.drawn)+"\r")
		p.drawn = 0
	}
}

// draw rewrites the line; the caller holds p.mu.
func (p *progress) draw() {
	if !p.enabled {
		return
	}
	p.last = p.now()
	f := p.current
	if f == nil || f.finished {
		f = nil
		for _, g := range p.files {
			if !g.finished {
				f = g
				break
			}
		}
	}
	if f == nil {
		p.clear()
		return
	}
	line := p.render(f)
	pad := ""
	if n := p.drawn - len([]rune(line)); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(p.w, "\r"+line+pad)
	p.drawn = len([]rune(line))
}

// render is the line for file f: "[done/all] name  phase  1.2 MiB/3.4 MiB  35%".
func (p *progress) render(f *fileProgress) string {
	var b strings.Builder
	if len(p.files) > 1 {
		fmt.Fprintf(&b, "[%d/%d] ", p.done, len(p.files))
	}
	b.WriteString(f.name)
	b.WriteString("  ")
	b.WriteString(f.phase)
	if f.total > 0 {
		pct := f.done * 100 / f.total
		fmt.Fprintf(&b, "  %s/%s  %d%%", bytesize.Format(f.done), bytesize.Format(f.total), pct)
	}
	line := b.String()
	if r := []rune(line); len(r) > p.width-1 {
		line = string(r[:p.width-2]) + "…"
	}
	return line
}

// jobPhase is how the progress line shows a job's state: its status, and a running job's
// progress as a percentage when the server reports one (the job's event stream carries it).
func jobPhase(j client.Job) string {
	if j.Status == client.StatusRunning && j.Progress != nil {
		return fmt.Sprintf("running %d%%", int(*j.Progress*100+0.5))
	}
	return string(j.Status)
}
