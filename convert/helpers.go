package convert

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/convsvc/convsvc/internal/bytesize"
)

// Helpers every family needs: context-aware readers and writers, byte counting, size
// formatting, and the catalog's memory budget.

// ContextWriter fails writes once ctx is done, so a streaming encoder stops soon after.
type ContextWriter struct {
	Ctx context.Context // the conversion's context
	W   io.Writer       // where writes go while Ctx lasts
}

// Write fails with ctx's error once ctx is done, else writes p to W.
func (c *ContextWriter) Write(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.W.Write(p)
}

// ContextReader fails reads once ctx is done, so a decoding loop stops soon after.
type ContextReader struct {
	Ctx context.Context // the conversion's context
	R   io.Reader       // where reads come from while Ctx lasts
}

// Read fails with ctx's error once ctx is done, else reads from R.
func (c *ContextReader) Read(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.R.Read(p)
}

// ByteSize formats a byte count for messages: "64 MiB", "1.5 GiB", "312 bytes".
func ByteSize(n int64) string {
	v, unit := bytesize.Binary(n)
	if unit == "" {
		return fmt.Sprintf("%d bytes", n)
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + unit
}

// CountingWriter counts the bytes written through it.
type CountingWriter struct {
	W io.Writer // where writes go
	N int64     // bytes written so far
}

// Write writes p to W and counts what was written.
func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// AcquireMemory reserves n bytes of the catalog's conversion memory budget for a conversion
// described by what ("drawing this SVG at 800x600"), waiting while other conversions hold too
// much of it. It fails at once with an *Error when n alone exceeds the whole budget, and with
// ctx's error when ctx ends first. Every successful call must be paired with ReleaseMemory(n).
func (c *Catalog) AcquireMemory(ctx context.Context, n int64, what string) error {
	return c.budget.acquire(ctx, n, what)
}

// ReleaseMemory returns n bytes reserved by AcquireMemory to the budget.
func (c *Catalog) ReleaseMemory(n int64) { c.budget.release(n) }

// MemoryUse reports the catalog's memory budget: the bytes running conversions hold, and how
// many conversions wait for their share.
func (c *Catalog) MemoryUse() (held int64, waiting int) {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	return c.budget.cur, c.budget.waiters.Len()
}
