package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// bigInputs writes photo-like PNGs whose conversions to GIF take a second or more each.
func bigInputs(t *testing.T, dir string, names ...string) {
	t.Helper()
	png := testenv.NoisePNG(t, 3000, 3000)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Ctrl-C with the embedded server: the job is cancelled, the server's temporary data dir (the
// user's file, a database, an admin token) is removed, no output or partial file is left, and
// the exit status is 130.
//
// GOMAXPROCS=1 gives the embedded server one worker, so that of four files some wait queued
// for seconds: ^C typed once one is queued lands while jobs are unfinished.
func TestConvert_CtrlCWithEmbeddedServerCleansUp(t *testing.T) {
	childProcessOnly(t)
	dir := t.TempDir()
	names := []string{"a.png", "b.png", "c.png", "d.png"}
	bigInputs(t, dir, names...)
	tmp := t.TempDir()
	p := startOnPTY(t, dir, []string{"TMPDIR=" + tmp, "GOMAXPROCS=1"}, append([]string{"convert", "--to", "gif"}, names...)...)
	p.waitOutput(t, "  queued")
	p.ctrlC(t)
	if code := p.wait(t); code != 130 {
		t.Fatalf("exit %d, want 130; terminal: %q", code, p.output())
	}
	out := p.output()
	if !interruptedLine.MatchString(out) {
		t.Fatalf("terminal: %q", out)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("temporary dir still holds %s", entries[0].Name())
	}
	// Only inputs and complete outputs: no partial download.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); !strings.HasSuffix(n, ".png") && !strings.Contains(out, "-> "+n+" (") {
			t.Errorf("the working dir holds %s, which no finished conversion wrote", n)
		}
	}
}

var interruptedLine = regexp.MustCompile(`convsvc: interrupted: cancelled (1 unfinished job|[2-4] unfinished jobs), removed temporary files`)

// Ctrl-C with --server: the job in flight is cancelled on the server, so it is not charged.
func TestConvert_CtrlCWithServerCancelsTheJob(t *testing.T) {
	// One worker, busy with three slow jobs queued first: the command's job waits queued.
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	dir := t.TempDir()
	c := &client.Client{BaseURL: e.URL, Key: e.Key}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Under -race the server here converts several times slower, and making the noise image
	// is raced too (this test took 82-252 s of -race -short at a load of 20 with 3000x3000):
	// 1500x1500 keeps the worker busy for as long. The command's own file is never converted.
	side := 3000
	if raceEnabled {
		side = 1500
	}
	blocker := testenv.NoisePNG(t, side, side)
	if err := os.WriteFile(filepath.Join(dir, "big.png"), blocker, 0o644); err != nil {
		t.Fatal(err)
	}
	var blockers []string
	for range 3 {
		res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: int64(len(blocker))}, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Upload(ctx, res.UploadURL, bytes.NewReader(blocker), int64(len(blocker))); err != nil {
			t.Fatal(err)
		}
		if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
			t.Fatal(err)
		}
		blockers = append(blockers, res.Job.ID)
	}
	p := startOnPTY(t, dir, []string{"CONVSVC_URL=" + e.URL, "CONVSVC_KEY=" + e.Key}, "convert", "big.png", "--to", "gif")
	p.waitOutput(t, "  queued")
	p.ctrlC(t)
	if code := p.wait(t); code != 130 {
		t.Fatalf("exit %d, want 130; terminal: %q", code, p.output())
	}
	if out := p.output(); !strings.Contains(out, "convsvc: interrupted: cancelled 1 unfinished job, removed temporary files") {
		t.Fatalf("terminal: %q", out)
	}
	var mine []client.Job
	for _, j := range jobsOf(t, e) {
		if !slices.Contains(blockers, j.ID) {
			mine = append(mine, j)
		}
	}
	if len(mine) != 1 || mine[0].Status != client.StatusCancelled || mine[0].Output != nil {
		t.Fatalf("the command's jobs on the server: %+v, want one cancelled", mine)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the working dir holds %d entries, want only big.png", len(entries))
	}
}

// On a terminal, convert rewrites one progress line in place (\r) through the reservation, the
// upload with bytes and percent, the job's states and the download, then clears it and prints
// the summary line; nothing follows the summary.
func TestConvert_ProgressOnATerminal(t *testing.T) {
	dir := workdir(t)
	p := startOnPTY(t, dir, nil, "convert", "sample.png", "--to", "jpeg")
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; terminal: %q", code, p.output())
	}
	out := p.output()
	for _, want := range []string{"\rsample.png  reserving", "\rsample.png  upload  0 B/6.7 KiB  0%", "\rsample.png  upload  6.7 KiB/6.7 KiB  100%", "\rsample.png  download  "} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal lacks %q: %q", want, out)
		}
	}
	if !progressEnd.MatchString(out) {
		t.Fatalf("terminal does not end with the cleared line and the summary: %q", out)
	}
}

var progressEnd = regexp.MustCompile(`\r +\rsample\.png -> sample\.jpg \(\d+ bytes, job_\w+\)\r\n$`)

// SIGTERM (a service manager, kill) ends convert as Ctrl-C does: jobs cancelled, temporary
// files removed, exit 130.
func TestConvert_SIGTERMCleansUpLikeCtrlC(t *testing.T) {
	childProcessOnly(t)
	dir := t.TempDir()
	names := []string{"a.png", "b.png", "c.png", "d.png"}
	bigInputs(t, dir, names...)
	tmp := t.TempDir()
	p := startOnPTY(t, dir, []string{"TMPDIR=" + tmp, "GOMAXPROCS=1"}, append([]string{"convert", "--to", "gif"}, names...)...)
	p.waitOutput(t, "  queued")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 130 {
		t.Fatalf("exit %d, want 130; terminal: %q", code, p.output())
	}
	if !interruptedLine.MatchString(p.output()) {
		t.Fatalf("terminal: %q", p.output())
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("temporary dir still holds %s", entries[0].Name())
	}
}
