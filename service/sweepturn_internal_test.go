package service

import (
	"fmt"
	"slices"
	"testing"
)

// TestFileCursor_Next: each turn takes filesPerTurn ids (or a tenth of the listing, whichever
// is more) after the last one checked, starts again from the first after the end, and checks
// a listing that fits in one turn whole every time.
func TestFileCursor_Next(t *testing.T) {
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("job_%06d", i))
		}
		return out
	}
	type turn struct{ from, to int }
	check := func(t *testing.T, c *fileCursor, listing []string, want turn) {
		t.Helper()
		got := c.next(listing)
		if !slices.Equal(got, listing[want.from:want.to]) {
			t.Fatalf("turn: %d ids from %q, want listing[%d:%d]", len(got), first(got), want.from, want.to)
		}
	}

	t.Run("small listing whole every time", func(t *testing.T) {
		var c fileCursor
		small := ids(3)
		for range 3 {
			check(t, &c, small, turn{0, 3})
			if c.after != "" {
				t.Fatalf("cursor %q after a whole listing, want it at the start", c.after)
			}
		}
		check(t, &c, nil, turn{0, 0})
	})
	t.Run("filesPerTurn at a time, then from the start", func(t *testing.T) {
		var c fileCursor
		big := ids(2*filesPerTurn + 2000)
		check(t, &c, big, turn{0, filesPerTurn})
		check(t, &c, big, turn{filesPerTurn, 2 * filesPerTurn})
		check(t, &c, big, turn{2 * filesPerTurn, len(big)})
		check(t, &c, big, turn{0, filesPerTurn})
	})
	t.Run("a tenth of a large listing", func(t *testing.T) {
		var c fileCursor
		huge := ids(12*filesPerTurn + 5)
		tenth := (len(huge) + 9) / 10
		for i := range 10 {
			check(t, &c, huge, turn{i * tenth, min((i+1)*tenth, len(huge))})
		}
		check(t, &c, huge, turn{0, tenth})
	})
	t.Run("the listing changed between turns", func(t *testing.T) {
		var c fileCursor
		big := ids(2*filesPerTurn + 10)
		check(t, &c, big, turn{0, filesPerTurn})
		// The last id checked was deleted, and so were some before it: the next turn starts
		// at the first id after it.
		shrunk := slices.Delete(slices.Clone(big), filesPerTurn-100, filesPerTurn)
		check(t, &c, shrunk, turn{filesPerTurn - 100, 2*filesPerTurn - 100})
		// Everything after the cursor is gone: the turn starts from the first id.
		c.after = "job_999999"
		check(t, &c, big, turn{0, filesPerTurn})
	})
}

func first(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}
