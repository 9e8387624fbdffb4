package service

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/convsvc/convsvc/blobstore"
)

// TestFileCursor_Next: each turn lists and takes filesPerTurn ids (or a tenth of the
// listing's last known length, whichever is more) after the last one checked, starts again
// from the first after the end, learns the listing's length at each cycle's end or from a
// whole pass, and checks a listing that fits in one turn whole every time.
func TestFileCursor_Next(t *testing.T) {
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("job_%06d", i))
		}
		return out
	}
	type turn struct{ from, to int }
	// check runs a turn over listing, as a store that lists from an id does
	// (blobstore.PageAfter), and holds what it took and the limit its first listing asked for
	// (limit; 0: not checked).
	check := func(t *testing.T, c *fileCursor, listing []string, want turn, limit int) {
		t.Helper()
		var calls []int
		got, err := c.next(func(after string, n int) ([]string, error) {
			calls = append(calls, n)
			return blobstore.PageAfter(listing, after, n), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, listing[want.from:want.to]) {
			t.Fatalf("turn: %d ids from %q, want listing[%d:%d]", len(got), first(got), want.from, want.to)
		}
		if limit > 0 && calls[0] != limit {
			t.Fatalf("listed %v ids a call, want %d", calls, limit)
		}
	}

	t.Run("small listing whole every time", func(t *testing.T) {
		var c fileCursor
		small := ids(3)
		for range 3 {
			check(t, &c, small, turn{0, 3}, filesPerTurn)
			if c.after != "" {
				t.Fatalf("cursor %q after a whole listing, want it at the start", c.after)
			}
		}
		check(t, &c, nil, turn{0, 0}, filesPerTurn)
	})
	t.Run("filesPerTurn at a time, then from the start", func(t *testing.T) {
		var c fileCursor
		big := ids(2*filesPerTurn + 2000)
		check(t, &c, big, turn{0, filesPerTurn}, filesPerTurn)
		check(t, &c, big, turn{filesPerTurn, 2 * filesPerTurn}, filesPerTurn)
		check(t, &c, big, turn{2 * filesPerTurn, len(big)}, filesPerTurn)
		check(t, &c, big, turn{0, filesPerTurn}, filesPerTurn)
	})
	t.Run("a listing that ends on a turn's last id", func(t *testing.T) {
		var c fileCursor
		even := ids(2 * filesPerTurn)
		check(t, &c, even, turn{0, filesPerTurn}, filesPerTurn)
		check(t, &c, even, turn{filesPerTurn, 2 * filesPerTurn}, filesPerTurn)
		check(t, &c, even, turn{0, filesPerTurn}, filesPerTurn) // nothing after: from the start
	})
	t.Run("a tenth of a large listing, its length from a whole pass", func(t *testing.T) {
		var c fileCursor
		huge := ids(12*filesPerTurn + 5)
		if all, err := c.ids(true, func() ([]string, error) { return huge, nil }, nil); err != nil || len(all) != len(huge) {
			t.Fatalf("whole pass: %d ids, %v", len(all), err)
		}
		tenth := (len(huge) + 9) / 10
		for i := range 10 {
			check(t, &c, huge, turn{i * tenth, min((i+1)*tenth, len(huge))}, tenth)
		}
		check(t, &c, huge, turn{0, tenth}, tenth)
	})
	t.Run("a large listing's length learnt at its cycle's end", func(t *testing.T) {
		var c fileCursor
		huge := ids(12*filesPerTurn + 5)
		for i := range 13 {
			check(t, &c, huge, turn{i * filesPerTurn, min((i+1)*filesPerTurn, len(huge))}, filesPerTurn)
		}
		tenth := (len(huge) + 9) / 10
		check(t, &c, huge, turn{0, tenth}, tenth)
	})
	t.Run("the listing changed between turns", func(t *testing.T) {
		var c fileCursor
		big := ids(2*filesPerTurn + 10)
		check(t, &c, big, turn{0, filesPerTurn}, 0)
		// The last id checked was deleted, and so were some before it: the next turn starts
		// at the first id after it.
		shrunk := slices.Delete(slices.Clone(big), filesPerTurn-100, filesPerTurn)
		check(t, &c, shrunk, turn{filesPerTurn - 100, 2*filesPerTurn - 100}, 0)
		// Everything after the cursor is gone: the turn starts from the first id.
		c.after = "job_999999"
		check(t, &c, big, turn{0, filesPerTurn}, 0)
	})
	t.Run("a failed listing leaves the cursor", func(t *testing.T) {
		var c fileCursor
		big := ids(2*filesPerTurn + 10)
		check(t, &c, big, turn{0, filesPerTurn}, 0)
		failed := errors.New("list failed")
		if _, err := c.next(func(string, int) ([]string, error) { return nil, failed }); !errors.Is(err, failed) {
			t.Fatalf("next = %v, want the listing's error", err)
		}
		check(t, &c, big, turn{filesPerTurn, 2 * filesPerTurn}, 0)
	})
}

func first(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}
