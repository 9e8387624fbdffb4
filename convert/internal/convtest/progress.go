package convtest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// Progress converts data from -> to through c, failing the test on an error, and returns
// every progress report the conversion made (convert.WithProgress), in the order made: the
// counts of converters marked Counts, as a job's progress sampler receives them.
func Progress(t testing.TB, c *convert.Catalog, from, to string, opts convert.Options, data []byte) []float64 {
	t.Helper()
	var mu sync.Mutex
	var got []float64
	ctx := convert.WithProgress(context.Background(), func(v float64) {
		mu.Lock()
		got = append(got, v)
		mu.Unlock()
	})
	var out bytes.Buffer
	if _, err := c.Convert(ctx, from, to, opts, WriteTemp(t, data), &out, t.TempDir()); err != nil {
		t.Fatalf("%s -> %s: %v", from, to, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// CheckProgress fails unless got (Progress's reports) starts at 0, strictly grows, stays
// within [0, 1], and has at least n values in each of the ranges (lo, hi) given as pairs:
// a count that moves through a conversion's phases, not a jump from 0 to its end.
func CheckProgress(t testing.TB, what string, got []float64, n int, ranges ...[2]float64) {
	t.Helper()
	if len(got) == 0 || got[0] != 0 {
		t.Fatalf("%s progress %v: want a first report of 0", what, got)
	}
	for i, v := range got {
		if v < 0 || v > 1 || i > 0 && v <= got[i-1] {
			t.Fatalf("%s progress %v: want values growing within [0, 1] (report %d is %v)", what, got, i, v)
		}
	}
	for _, r := range ranges {
		in := 0
		for _, v := range got {
			if v > r[0] && v < r[1] {
				in++
			}
		}
		if in < n {
			t.Fatalf("%s progress %v: %d values in (%v, %v), want at least %d", what, got, in, r[0], r[1], n)
		}
	}
}
