package cli_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// Issue 21, "the batch client under the rate limit": a run needing more than the key's write
// budget finishes. convert waits each 429 out as its Retry-After says, says so on stderr,
// and fails no file with rate_limited. Many files go through one batch (a create and a start
// for all of them), so the budget is 1 write a second here: the start waits.
func TestConvert_BatchWaitsOutTheRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the rate limit for several seconds")
	}
	const files, limit = 12, 1
	e := testenv.Start(t, func(c *service.Config) {
		c.WriteLimit, c.RateWindow = limit, time.Second
	})
	dir := t.TempDir()
	png := testenv.NoisePNG(t, 24, 16)
	args := []string{"convert", "--to", "jpeg", "--parallel", "8", "--server", e.URL, "--key", e.Key}
	for i := range files {
		name := fmt.Sprintf("f%02d.png", i)
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	out, errOut, code := runBinary(t, dir, nil, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "convsvc: rate limited: waiting ") || strings.Contains(errOut, "rate_limited") {
		t.Fatalf("stderr does not say that convert waits (or names a rate_limited failure):\n%s", errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != files {
		t.Fatalf("%d summary lines, want %d:\n%s", len(lines), files, out)
	}
	for i := range files {
		name := fmt.Sprintf("f%02d", i)
		if !strings.Contains(out, name+".png -> "+name+".jpg (") {
			t.Errorf("no summary line for %s.png:\n%s", name, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s.jpg: %v", name, err)
		}
		if sz := img.Bounds().Size(); sz.X != 24 || sz.Y != 16 {
			t.Fatalf("%s.jpg is %v, want 24x16", name, sz)
		}
	}
	// The server did refuse writes, and every job it reserved succeeded: one per file.
	if n := e.Scrape().Value("convsvc_http_rate_limited_total", "budget", "write"); n < 1 {
		t.Fatalf("the server answered no write with 429 (%v): the test did not reach the limit", n)
	}
	jobs := jobsOf(t, e)
	if len(jobs) != files {
		t.Fatalf("%d jobs on the server, want %d", len(jobs), files)
	}
	for _, j := range jobs {
		if j.Status != client.StatusSucceeded {
			t.Fatalf("job %s is %s %s", j.ID, j.Status, j.Error())
		}
	}
}

// On a terminal the wait shows on the file's progress line instead of a stderr line that
// would break it.
func TestConvert_RateLimitWaitOnTheProgressLine(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the rate limit")
	}
	e := testenv.Start(t, func(c *service.Config) {
		c.WriteLimit, c.RateWindow = 1, 2*time.Second
	})
	dir := workdir(t)
	if err := os.WriteFile(filepath.Join(dir, "second.png"), testenv.NoisePNG(t, 8, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startOnPTY(t, dir, nil, "convert", "sample.png", "second.png", "--to", "jpeg", "--server", e.URL, "--key", e.Key)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; terminal: %q", code, p.output())
	}
	out := p.output()
	if !strings.Contains(out, "  rate limited: waiting ") || strings.Contains(out, "convsvc: rate limited") {
		t.Fatalf("the wait is not on the progress line alone: %q", out)
	}
	for _, want := range []string{"sample.png -> sample.jpg (", "second.png -> second.jpg ("} {
		if !strings.Contains(out, want) {
			t.Fatalf("terminal lacks %q: %q", want, out)
		}
	}
}
