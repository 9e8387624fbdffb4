package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestCache_NodeKilledMidTransition: a node killed in the middle of a cache-keyed transition
// function (its connection gone after the call, before COMMIT) leaves nothing of it: the
// finish that would store the key's entry and end its flight, and the claim that would answer
// a queued twin from that entry, each leave the job, the account's cents, the entry, its references,
// the totals and the in-flight row as they were (VerifyLedger), and another node then runs
// the same transition whole.
func TestCache_NodeKilledMidTransition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{NodeID: "survivor"})
	acct := account(t, s, 100)
	const base = "png>gif;kill"
	sha := strings.Repeat("d", 64)
	created := func() store.Job {
		t.Helper()
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, CacheBase: base}, noRender)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, err := s.StartSealedJob(acct.ID, created().ID, store.Upload{Size: 10, SHA256: sha})
	if err != nil {
		t.Fatal(err)
	}
	if a, _, err = s.ClaimJob(); err != nil {
		t.Fatal(err)
	}
	twin, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, CacheBase: base,
		InputSHA256: sha, SourceURL: "https://example.com/in.png"}, noRender)
	if err != nil {
		t.Fatal(err)
	}
	admin := connect(t, url)
	// killedIn runs the statement in a dying node's transaction, killed before COMMIT.
	killedIn := func(sql string, args ...any) {
		t.Helper()
		dying := startDying(ctx, t, url)
		if _, err := dying.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		dying.kill(ctx, t, admin)
	}
	unchanged := func(what string, wantEntries int64, wantInflight int) {
		t.Helper()
		var inflight int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM cache_inflight`).Scan(&inflight); err != nil {
			t.Fatal(err)
		}
		st, err := s.CacheStats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != wantEntries || inflight != wantInflight {
			t.Fatalf("after %s: %d entries, %d in flight; want %d, %d", what, st.Entries, inflight, wantEntries, wantInflight)
		}
		if err := s.VerifyLedger(); err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
	}

	killedIn(`SELECT 1 FROM convsvc_finish_job($1, $2, 'succeeded', '', '', '', 5, $3, NULL, false, false, 0)`, a.ID, a.Attempt, sha)
	unchanged("a finish killed", 0, 1)
	ledger(t, s, acct.ID, 2, 0)
	if a, err = s.FinishJob(a.ID, a.Attempt, store.Outcome{Output: &store.Output{Bytes: 5, SHA256: sha}}); err != nil || a.Status != store.StatusSucceeded {
		t.Fatalf("finish on the survivor: %+v %v", a, err)
	}
	unchanged("the finish", 1, 0)

	killedIn(`SELECT 1 FROM convsvc_claim_job('', 'dying', 60000000, 1, false)`)
	unchanged("a hit at claim killed", 1, 0)
	ledger(t, s, acct.ID, 1, 1)
	if held, err := s.OutputHeld(a.ID); err != nil || held {
		t.Fatalf("A's output held after the killed hit: %v %v, want no reference", held, err)
	}
	if j, ok, err := s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim on the survivor: %+v %v %v, want the twin answered from the cache", j, ok, err)
	}
	if twin, err = s.Job(acct.ID, twin.ID); err != nil || twin.Status != store.StatusSucceeded || !twin.Output.Cached {
		t.Fatalf("twin after the survivor's claim: %+v %v", twin, err)
	}
	unchanged("the hit", 1, 0)
	ledger(t, s, acct.ID, 0, 2)
}
