package convert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestCatalog_OutputLimits holds issue 18 item 4 in the kernel: a step that writes past
// max(OutputRatioFloor, MaxOutputRatio x input) or MaxOutputBytes fails with an *Error
// wrapping ErrOutputTooLarge that names the cause, while it writes (the converter sees the
// write fail and the output never passes the limit); steps to raster images have only the
// absolute limit; an output within the limits passes whole.
func TestCatalog_OutputLimits(t *testing.T) {
	var written int64
	endless := func(_ context.Context, _ *io.SectionReader, out io.Writer, _ Params) error {
		written = 0
		chunk := bytes.Repeat([]byte(","), 4096)
		for written < 1<<40 {
			n, err := out.Write(chunk)
			written += int64(n)
			if err != nil {
				return err
			}
		}
		return nil
	}
	sized := func(n int) func(context.Context, *io.SectionReader, io.Writer, Params) error {
		return func(_ context.Context, _ *io.SectionReader, out io.Writer, _ Params) error {
			_, err := out.Write(make([]byte, n))
			return err
		}
	}
	build := func(lim Limits) *Catalog {
		c := NewEmptyCatalog(lim)
		c.AddFormat(Format{ID: "xlsx", Category: CategoryData})
		c.AddFormat(Format{ID: "csv", Category: CategoryData})
		c.AddFormat(Format{ID: "big", Category: CategoryData})
		c.AddFormat(Format{ID: "bmp", Category: CategoryImage})
		c.AddConverter(Converter{From: "xlsx", To: "csv", Run: endless})
		c.AddConverter(Converter{From: "xlsx", To: "bmp", Run: sized(OutputRatioFloor + 1<<20)})
		c.AddConverter(Converter{From: "xlsx", To: "big", Run: sized(OutputRatioFloor + 1<<20)})
		return c
	}
	run := func(c *Catalog, to string, input int) (int, error) {
		var out countOnly
		_, err := c.Convert(context.Background(), "xlsx", to, Options{}, writeTemp(t, make([]byte, input)), &out, t.TempDir())
		return int(out), err
	}

	// The ratio: 1 KiB in, the floor of 64 MiB out at most.
	c := build(Limits{})
	n, err := run(c, "csv", 1024)
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("endless output: err = %v, want an *Error wrapping ErrOutputTooLarge", err)
	}
	for _, want := range []string{"converting xlsx to csv wrote more than 64 MiB", "200 times the 1 KiB input", "output ratio limit"} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("message %q lacks %q", ce.Message, want)
		}
	}
	// The converter learns at the first write past the limit and its 64 KiB output buffer.
	if n > OutputRatioFloor || written > OutputRatioFloor+64<<10+4096 {
		t.Errorf("wrote %d bytes (converter wrote %d), over the %d limit", n, written, OutputRatioFloor)
	}
	// Above the floor the ratio sets the limit: 1 MiB in, 100x, is 100 MiB.
	c = build(Limits{MaxOutputRatio: 100})
	if n, err = run(c, "csv", 1<<20); !errors.Is(err, ErrOutputTooLarge) || n > 100<<20 || n < 100<<20-(64<<10) {
		t.Errorf("ratio 100 of 1 MiB: wrote %d, err %v; want about 100 MiB and ErrOutputTooLarge", n, err)
	}
	// The absolute limit wins over a high ratio and names itself.
	c = build(Limits{MaxOutputRatio: 1e6, MaxOutputBytes: 8 << 20})
	_, err = run(c, "csv", 1<<20)
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "wrote more than 8 MiB, the output size limit") {
		t.Errorf("absolute limit: err = %v", err)
	}
	// Within the limits the output passes whole; images only have the absolute limit.
	c = build(Limits{})
	if n, err = run(c, "bmp", 10); err != nil || n != OutputRatioFloor+1<<20 {
		t.Errorf("image step: wrote %d, err %v", n, err)
	}
	if _, err = run(c, "big", 10); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("data step past the floor: err = %v, want ErrOutputTooLarge", err)
	}
	if n, err = run(c, "big", 1<<20); err != nil || n != OutputRatioFloor+1<<20 {
		t.Errorf("data step within 200x: wrote %d, err %v", n, err)
	}
}

// countOnly counts what is written to it.
type countOnly int64

func (c *countOnly) Write(p []byte) (int, error) { *c += countOnly(len(p)); return len(p), nil }
