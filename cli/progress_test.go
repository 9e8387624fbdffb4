package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/bytesize"
)

func testProgress() (*progress, *bytes.Buffer, *time.Time) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progress{w: &buf, enabled: true, width: 60, every: 100 * time.Millisecond, now: func() time.Time { return now }}
	return p, &buf, &now
}

func TestProgress_RendersOneLineRewrittenInPlace(t *testing.T) {
	p, buf, now := testProgress()
	f := p.add("photo.png")
	p.transfer(f, "upload", 0, 2048)
	p.transfer(f, "upload", 1024, 2048) // within 100 ms of the last draw: not drawn
	if strings.Contains(buf.String(), "50%") {
		t.Fatalf("redrew too soon: %q", buf.String())
	}
	*now = now.Add(150 * time.Millisecond)
	p.transfer(f, "upload", 1024, 2048)
	if !strings.HasSuffix(buf.String(), "\rphoto.png  upload  1.0 KiB/2.0 KiB  50%") {
		t.Fatalf("line %q", buf.String())
	}
	p.transfer(f, "upload", 2048, 2048) // the end of a transfer is always drawn
	if !strings.HasSuffix(buf.String(), "2.0 KiB/2.0 KiB  100%") {
		t.Fatalf("line %q", buf.String())
	}
	p.state(f, "queued")
	// The shorter line is padded over the longer one it replaces.
	if got := buf.String()[strings.LastIndex(buf.String(), "\r"):]; got != "\rphoto.png  queued"+strings.Repeat(" ", len("photo.png  upload  2.0 KiB/2.0 KiB  100%")-len("photo.png  queued")) {
		t.Fatalf("line %q", got)
	}
	if strings.Contains(buf.String(), "\n") {
		t.Fatalf("progress wrote a newline: %q", buf.String())
	}
	buf.Reset()
	p.finish(f, "photo.png -> photo.jpg (10 bytes, job_1)")
	// Cleared (the visible text, the padding is blank already), then the summary on its own line.
	if got := buf.String(); got != "\r"+strings.Repeat(" ", len("photo.png  queued"))+"\rphoto.png -> photo.jpg (10 bytes, job_1)\n" {
		t.Fatalf("finish %q", got)
	}
}

func TestProgress_ManyFilesShowCountAndTruncate(t *testing.T) {
	p, buf, _ := testProgress()
	a := p.add("a.png")
	b := p.add(strings.Repeat("long-name-", 10) + ".png")
	p.state(a, "running")
	if !strings.HasSuffix(buf.String(), "\r[0/2] a.png  running") {
		t.Fatalf("%q", buf.String())
	}
	p.finish(a, "a done")
	if !strings.Contains(buf.String(), "a done\n\r[1/2] long-name-") {
		t.Fatalf("%q", buf.String())
	}
	last := buf.String()[strings.LastIndex(buf.String(), "\r")+1:]
	if n := len([]rune(last)); n > 59 || !strings.HasSuffix(last, "…") {
		t.Fatalf("line of %d runes for width 60: %q", n, last)
	}
	p.finish(b, "b done")
	p.close()
	if !strings.HasSuffix(buf.String(), "b done\n") {
		t.Fatalf("%q", buf.String())
	}
}

func TestProgress_DisabledPrintsOnlySummaries(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf) // not a terminal
	f := p.add("x.png")
	p.transfer(f, "upload", 5, 10)
	p.state(f, "running")
	p.finish(f, "x done")
	g := p.add("y.png")
	p.finish(g, "") // a failed file prints nothing here
	p.close()
	if buf.String() != "x done\n" {
		t.Fatalf("%q", buf.String())
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := bytesize.Format(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestProgress_JobPhaseShowsProgress: the line shows a running job's progress from its event
// stream as a percentage, and a plain status otherwise.
func TestProgress_JobPhaseShowsProgress(t *testing.T) {
	half := 0.42
	for _, c := range []struct {
		job  client.Job
		want string
	}{
		{client.Job{Status: client.StatusRunning, Progress: &half}, "running 42%"},
		{client.Job{Status: client.StatusRunning}, "running"},
		{client.Job{Status: client.StatusQueued}, "queued"},
	} {
		if got := jobPhase(c.job); got != c.want {
			t.Errorf("jobPhase(%s, %v) = %q, want %q", c.job.Status, c.job.Progress, got, c.want)
		}
	}
	p, buf, _ := testProgress()
	f := p.add("big.csv")
	p.state(f, jobPhase(client.Job{Status: client.StatusRunning, Progress: &half}))
	if !strings.HasSuffix(buf.String(), "\rbig.csv  running 42%") {
		t.Fatalf("line %q", buf.String())
	}
}
