// Package rowcount carries a count of the rows an encoder has written through a context, so
// the image family can turn the shared encoders' row loops (pngenc's bands, tiffenc's and
// jpegstrip's strips) into a job's progress without those packages knowing of jobs.
package rowcount

import (
	"context"
	"sync/atomic"
)

// counter adds up the rows reported under one context.
type counter struct {
	n      atomic.Int64
	report func(rows int64)
}

type key struct{}

// With returns ctx carrying a row count that starts at 0: each Add under it adds its rows and
// calls report with the running total, from the goroutine that called Add (so report must be
// safe for concurrent use).
func With(ctx context.Context, report func(rows int64)) context.Context {
	return context.WithValue(ctx, key{}, &counter{report: report})
}

// Add counts n more rows written; without a count in ctx (With) it does nothing.
func Add(ctx context.Context, n int) {
	if c, ok := ctx.Value(key{}).(*counter); ok && n > 0 {
		c.report(c.n.Add(int64(n)))
	}
}
