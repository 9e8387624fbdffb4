package convert_test

import (
	"context"
	"io"
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
