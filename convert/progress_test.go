package convert_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
)

// TestPool_ProgressFromInputOffset: a conversion that has read half of its input (with
// ReadAt, as every converter reads) reports progress 0.5 through PoolConfig.Progress while it
// runs, from the input's offset alone; reports only grow, and the end reports nothing above
// 0.99 (the job's success says it is done).
func TestPool_ProgressFromInputOffset(t *testing.T) {
	reports := make(chan float64, 100)
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1, ProgressInterval: 5 * time.Millisecond,
		Progress: func(task convert.Task, v float64) {
			if task.JobID == "job_p" && task.Attempt == 1 {
				reports <- v
			}
		}})
	halfRead := make(chan struct{})
	release := make(chan struct{})
	fx.cat.AddFormat(convert.Format{ID: "half", Name: "half", Category: "data", Extensions: []string{"half"}, MIME: "x/half"})
	fx.cat.AddConverter(convert.Converter{From: "a", To: "half", Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		if _, err := io.CopyN(out, in, in.Size()/2); err != nil {
			return err
		}
		close(halfRead)
		<-release
		_, err := io.Copy(out, in)
		return err
	}})
	fx.job(t, "job_p", "half", 0, strings.Repeat("x", 1<<20))
	fx.p.Start()
	<-halfRead
	deadline := time.After(testtime.Scale(30 * time.Second))
	for got := false; !got; {
		select {
		case v := <-reports:
			if v > 0.5 {
				t.Fatalf("progress %v with half the input read", v)
			}
			got = v == 0.5
		case <-deadline:
			t.Fatal("no progress 0.5 reported with half the input read")
		}
	}
	close(release)
	if o := fx.q.wait(t, 30*time.Second); o.Code != "" {
		t.Fatalf("outcome %+v", o)
	}
	close(reports)
	for v := range reports {
		if v < 0.5 || v > 0.99 {
			t.Fatalf("progress %v after 0.5", v)
		}
	}
}

// TestPool_ProgressFromConverterCounts: a converter marked Counts that reads its whole input
// first shows its own counts, not the input's offset (which would say 0.99 at once); a count
// that goes back is not reported, nor anything above 0.99 when the count reaches its total,
// and reports only grow.
func TestPool_ProgressFromConverterCounts(t *testing.T) {
	reports := make(chan float64, 100)
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1, ProgressInterval: 5 * time.Millisecond,
		Progress: func(task convert.Task, v float64) {
			if task.JobID == "job_c" {
				reports <- v
			}
		}})
	steps := make(chan struct{})
	counted := make(chan struct{})
	fx.cat.AddFormat(convert.Format{ID: "counted", Name: "counted", Category: "data", Extensions: []string{"counted"}, MIME: "x/counted"})
	fx.cat.AddConverter(convert.Converter{From: "a", To: "counted", Counts: true, Run: func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		if _, err := io.Copy(out, in); err != nil { // the whole input, read first
			return err
		}
		for _, done := range []int64{3, 2, 10} {
			<-steps
			p.Progress(done, 10)
			counted <- struct{}{}
		}
		<-steps
		return nil
	}})
	fx.job(t, "job_c", "counted", 0, strings.Repeat("x", 1<<20))
	fx.p.Start()
	// until waits for the report want, failing on any other but those allowed before it.
	until := func(want float64, allowed ...float64) {
		t.Helper()
		deadline := time.After(testtime.Scale(30 * time.Second))
		for {
			select {
			case v := <-reports:
				if v == want {
					return
				}
				if !slices.Contains(allowed, v) {
					t.Fatalf("progress %v while waiting for %v (allowed before it: %v)", v, want, allowed)
				}
			case <-deadline:
				t.Fatalf("no progress %v reported", want)
			}
		}
	}
	until(0) // the path counts: its progress starts at 0, the whole input read or not
	steps <- struct{}{}
	<-counted
	until(0.3)
	steps <- struct{}{} // 2 of 10: back, not reported
	<-counted
	steps <- struct{}{} // 10 of 10: 0.99 until the job has finished
	<-counted
	until(0.99)
	close(steps)
	if o := fx.q.wait(t, 30*time.Second); o.Code != "" {
		t.Fatalf("outcome %+v", o)
	}
	close(reports)
	for v := range reports {
		t.Fatalf("progress %v after 0.99", v)
	}
}

// offsetFirstSample is TestPool_CountsBeforeTheirFirstReport's ProgressInterval.
const offsetFirstSample = 5 * time.Millisecond

// offsetFirstRunner runs a conversion as a worker process does: through the input file it
// shares with the server, whose offset it moves to the end before its first count reaches
// the server (ReportProgress stands for the worker socket's report).
type offsetFirstRunner struct {
	reports chan float64
	waited  chan []float64 // what was reported while the offset stood at the end
}

func (r offsetFirstRunner) Run(ctx context.Context, t convert.Task, in *os.File, out io.Writer, _ string) ([]convert.Warning, error) {
	if _, err := in.Seek(0, io.SeekEnd); err != nil { // a zip reader reads its directory first
		return nil, err
	}
	// Twenty sampling intervals with the offset at the end and no count yet: how long a
	// report that should not come is given, not a wait for one that should.
	var early []float64
	quiet := time.After(20 * offsetFirstSample)
wait:
	for {
		select {
		case v := <-r.reports:
			early = append(early, v)
		case <-quiet:
			break wait
		}
	}
	r.waited <- early
	convert.ReportProgress(ctx, 0.5)
	select {
	case v := <-r.reports:
		if v != 0.5 {
			return nil, fmt.Errorf("progress %v after the count 0.5", v)
		}
	case <-time.After(testtime.Scale(30 * time.Second)):
		return nil, errors.New("the count 0.5 was never reported")
	}
	_, err := io.WriteString(out, "done")
	return nil, err
}

// TestPool_CountsBeforeTheirFirstReport: on a path that counts, the sampler reports 0, never the
// input's offset, also before the conversion's first count has arrived (a worker process whose
// reader went to the input's end first): it would show 0.99 at once, and the counts that follow
// could never pass it. (TestProgress_ConvertersCount in service saw [0.99] for a zip under load.)
func TestPool_CountsBeforeTheirFirstReport(t *testing.T) {
	r := offsetFirstRunner{reports: make(chan float64, 100), waited: make(chan []float64, 1)}
	fx := newPoolFixture(t, convert.PoolConfig{Workers: 1, ProgressInterval: offsetFirstSample, Runner: r,
		Progress: func(task convert.Task, v float64) { r.reports <- v }})
	fx.cat.AddFormat(convert.Format{ID: "counted", Name: "counted", Category: "data", Extensions: []string{"counted"}, MIME: "x/counted"})
	fx.cat.AddConverter(convert.Converter{From: "a", To: "counted", Counts: true, Run: func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		return errors.New("not run: the runner converts")
	}})
	if !fx.cat.Counts("a", "counted") || fx.cat.Counts("counted", "a") || fx.cat.Counts("a", "nosuch") {
		t.Fatalf("Counts: a -> counted %v, counted -> a %v, a -> nosuch %v; want true, false, false",
			fx.cat.Counts("a", "counted"), fx.cat.Counts("counted", "a"), fx.cat.Counts("a", "nosuch"))
	}
	fx.job(t, "job_w", "counted", 0, strings.Repeat("x", 1<<20))
	fx.p.Start()
	// The path counts, so its progress is 0 until it counts, wherever its input's offset is.
	if early := <-r.waited; slices.ContainsFunc(early, func(v float64) bool { return v != 0 }) {
		t.Fatalf("progress %v before the conversion's first count, with its input's offset at the end; want only 0", early)
	}
	if o := fx.q.wait(t, 30*time.Second); o.Code != "" {
		t.Fatalf("outcome %+v", o)
	}
}
