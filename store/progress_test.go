package store

import (
	"testing"
	"time"
)

// TestProgressHub_LateEarlierAttempt: a report of an earlier attempt that arrives after the
// running attempt's (another node's, over another connection) does not replace it, and
// Progress answers only for the attempt asked.
func TestProgressHub_LateEarlierAttempt(t *testing.T) {
	h := NewProgressHub()
	h.Report("acct", "job", 2, 0.25)
	h.Apply(FormatProgress("acct", "job", 1, 0.9))
	if v, ok := h.Progress("job", 2); !ok || v != 0.25 {
		t.Fatalf("attempt 2's progress after attempt 1's late report: %v, %v; want 0.25", v, ok)
	}
	if _, ok := h.Progress("job", 1); ok {
		t.Fatal("attempt 1's progress is known after attempt 2 reported")
	}
	h.Apply(FormatProgress("acct", "job", 3, 0.1))
	if v, ok := h.Progress("job", 3); !ok || v != 0.1 {
		t.Fatalf("attempt 3's progress: %v, %v; want 0.1", v, ok)
	}
	var seen []int
	h.AccountProgress("acct", func(_ string, attempt int, _ float64) { seen = append(seen, attempt) })
	if len(seen) != 1 || seen[0] != 3 {
		t.Fatalf("account progress attempts %v, want [3]", seen)
	}
}

// TestProgressHub_OwnEchoDoesNotGoBack: the reporting node's own earlier report, coming back
// through its listener after a newer one (PostgreSQL NOTIFY reaches every node), does not
// take the progress back; another node's newer report still moves it on.
func TestProgressHub_OwnEchoDoesNotGoBack(t *testing.T) {
	h := NewProgressHub()
	h.Report("acct", "job", 1, 0.93)
	h.Report("acct", "job", 1, 0.99)
	h.Apply(FormatProgress("acct", "job", 1, 0.93)) // the echo of the first
	if v, ok := h.Progress("job", 1); !ok || v != 0.99 {
		t.Fatalf("progress after the late echo: %v, %v; want 0.99", v, ok)
	}
	h.Apply(FormatProgress("acct", "job", 1, 1))
	if v, ok := h.Progress("job", 1); !ok || v != 1 {
		t.Fatalf("progress after a newer remote report: %v, %v; want 1", v, ok)
	}
}

// TestProgressHub_ExpiresAndForgets: a job's progress is gone ProgressTTL after its last
// report, and at once after Forget; a report that changes nothing wakes no one.
func TestProgressHub_ExpiresAndForgets(t *testing.T) {
	h := NewProgressHub()
	now := time.Unix(1_700_000_000, 0)
	h.now = func() time.Time { return now }
	h.Report("acct", "a", 0, 0.5)
	h.Report("acct", "b", 0, 0.5)
	wait, release := h.WaitProgress("acct")
	defer release()
	h.Report("acct", "a", 0, 0.5) // unchanged
	select {
	case <-wait:
		t.Fatal("an unchanged report woke the account's waiters")
	default:
	}
	h.Forget("b")
	if _, ok := h.Progress("b", 0); ok {
		t.Fatal("a forgotten job's progress is known")
	}
	now = now.Add(ProgressTTL + time.Second)
	if _, ok := h.Progress("a", 0); ok {
		t.Fatal("progress is known after ProgressTTL")
	}
	h.Report("acct", "a", 0, 0.6)
	select {
	case <-wait:
	default:
		t.Fatal("a changed report did not wake the account's waiters")
	}
}

// TestParseProgress: what FormatProgress writes parses back; malformed payloads are refused.
func TestParseProgress(t *testing.T) {
	a, j, n, v, err := ParseProgress(FormatProgress("acct_1", "job_2", 3, 0.4567))
	if err != nil || a != "acct_1" || j != "job_2" || n != 3 || v != 0.4567 {
		t.Fatalf("round trip: %q %q %d %v %v", a, j, n, v, err)
	}
	for _, bad := range []string{"", "a b c", "a b c d e", "a b x 0.5", "a b 1 NaN", "a b 1 -0.1", "a b 1 1.5", "a b 1 x"} {
		if _, _, _, _, err := ParseProgress(bad); err == nil {
			t.Errorf("ParseProgress(%q) accepted", bad)
		}
	}
}
