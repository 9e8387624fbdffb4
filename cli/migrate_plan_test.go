package cli

import (
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// TestPlanMigration_HitCents: a finished job answered from the conversion cache is left behind
// with its charge (the cache-hit price), not 1 cent, added to its month's purged successes, so
// the month's spend still equals its successes' charges plus purged successes on the target.
func TestPlanMigration_HitCents(t *testing.T) {
	finished := time.Date(2026, 11, 3, 4, 5, 6, 0, time.UTC)
	three := int64(3)
	d := store.Dump{
		Accounts: []store.Account{{ID: "acct_1", MonthlySpend: map[string]int64{"2026-11": 4}}},
		Jobs: []store.Job{
			{ID: "job_converted", AccountID: "acct_1", Status: store.StatusSucceeded, FinishedAt: &finished,
				Output: &store.Output{Bytes: 6}},
			{ID: "job_hit", AccountID: "acct_1", Status: store.StatusSucceeded, FinishedAt: &finished, HitCents: &three,
				Output: &store.Output{Bytes: 6, Cached: true, Object: "job_converted"}},
		},
	}
	data, rep := planMigration(d, finished)
	if len(data.Jobs) != 0 || rep.FinishedJobs != 2 || rep.PurgedAdded != 2 {
		t.Fatalf("jobs %d, report %+v; want none copied, 2 finished, 2 successes purged", len(data.Jobs), rep)
	}
	if got := data.Accounts[0].PurgedSuccesses["2026-11"]; got != 4 {
		t.Fatalf("purged successes of 2026-11 = %d, want 4 (1 cent + a 3-cent hit)", got)
	}
}
