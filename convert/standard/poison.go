//go:build poison

package standard

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// registerExtras adds the poison converters, which exist only in binaries built with -tags
// poison, for the fault-injection tests: a converter that panics, one that hangs ignoring its
// context, one that kills the process, one that succeeds slowly, and one that allocates past
// its memory budget without reserving it.
func registerExtras(c *convert.Catalog) {
	c.AddFormat(convert.Format{ID: "poison-out", Name: "Poison output", Category: convert.CategoryData, Extensions: []string{"poisonout"}, MIME: "application/octet-stream"})
	add := func(id string, run func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error) {
		c.AddFormat(convert.Format{ID: id, Name: id, Category: convert.CategoryData, Extensions: []string{id}, MIME: "application/octet-stream"})
		c.AddConverter(convert.Converter{From: id, To: "poison-out", Run: run})
	}
	add("poison-panic", func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		panic("poison: converter panics")
	})
	add("poison-hang", func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		time.Sleep(time.Hour) // ignores ctx on purpose
		return nil
	})
	add("poison-exit", func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
		os.Exit(3) // the process dies mid-conversion, every time
		return nil
	})
	add("poison-alloc", func(_ context.Context, _ *io.SectionReader, out io.Writer, p convert.Params) error {
		// Four times the whole budget, touched page by page, none of it reserved, then held
		// for a while as a long conversion would: only a cap the kernel or a watchdog
		// enforces stops it.
		var hold [][]byte
		for n := int64(0); n < 4*p.MaxConversionMemory; n += 16 << 20 {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			hold = append(hold, b)
		}
		time.Sleep(5 * time.Second)
		_, err := out.Write([]byte{byte(len(hold))})
		return err
	})
	add("poison-slow", func(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		_, err := io.Copy(out, in)
		return err
	})
}
