package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// The cases of fair claims (issue 38): accounts in turn, caps per destination and per
// account that hold across concurrent claims, and paused destinations.
func init() {
	cases = append(cases,
		testCase{"WebhookClaimAccountsInTurn", testWebhookClaimAccountsInTurn},
		testCase{"WebhookClaimPerAccountCap", testWebhookClaimPerAccountCap},
		testCase{"WebhookClaimCapsExactConcurrently", testWebhookClaimCapsConcurrent},
		testCase{"WebhookPausedGiveUp", testWebhookPausedGiveUp},
	)
}

// cancelledOn cancels n new jobs of account acct, each recording one delivery per endpoint.
func (f *fixture) cancelledOn(acct string, n int) {
	f.t.Helper()
	for range n {
		job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: acct, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1}, plainRender)
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.s.CancelJob(acct, job.ID); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) claimWebhooks(c store.WebhookClaim) []store.WebhookDelivery {
	f.t.Helper()
	if c.Hold == 0 {
		c.Hold = time.Hour
	}
	got, err := f.wh().ClaimWebhookDeliveries(c)
	if err != nil {
		f.t.Fatalf("claim %+v: %v", c, err)
	}
	return got
}

func testWebhookClaimAccountsInTurn(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	wb := f.wh()
	other := newFixtureOn(t, f.s, "other")
	epA := f.endpoint("https://a.example/hook")
	epB, err := wb.CreateWebhookEndpoint(other.ID, "https://B.example:443/hook", "whsec_b")
	if err != nil {
		t.Fatal(err)
	}
	f.cancelledOn(f.acct.ID, 10) // ten older deliveries of one account to one destination
	f.cancelledOn(other.ID, 1)
	// Not the two oldest: one of each account.
	got := f.claimWebhooks(store.WebhookClaim{Limit: 2, PerDestination: 2})
	if len(got) != 2 || got[0].AccountID == got[1].AccountID {
		t.Fatalf("claim of 2 took %s and %s, want one of each account", got[0].ID, got[1].ID)
	}
	var a1 store.WebhookDelivery
	for _, d := range got {
		switch d.AccountID {
		case f.acct.ID:
			a1 = d
			if d.Destination != "a.example:443" || d.EndpointID != epA.ID {
				t.Fatalf("delivery %+v", d)
			}
		case other.ID:
			if d.Destination != "b.example:443" || d.EndpointID != epB.ID {
				t.Fatalf("delivery %+v", d)
			}
		}
	}
	// a.example:443 has one attempt in flight and takes one more; then none.
	got = f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2})
	if len(got) != 1 || got[0].AccountID != f.acct.ID {
		t.Fatalf("claim below the destination's cap took %+v, want one of %s", got, f.acct.ID)
	}
	a2 := got[0]
	if got := f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2}); len(got) != 0 {
		t.Fatalf("claim at the destination's cap took %d", len(got))
	}
	// The destination is down: paused for an hour. Its deliveries wait for the pause's end
	// and hold nothing meanwhile.
	now := time.Now()
	pause := now.Add(time.Hour)
	if _, err := wb.RecordWebhookAttempt(a1.ID, store.WebhookAttempt{Attempts: 1, At: now, Err: "no answer", RetryAt: now.Add(-time.Second),
		PauseDestinationUntil: pause}); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.RecordWebhookAttempt(a2.ID, store.WebhookAttempt{Attempts: 1, At: now, StatusCode: 410, Err: "HTTP 410", RetryAt: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	// a2 is due again, but the claim finds its destination paused and reschedules it.
	if got := f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2}); len(got) != 0 {
		t.Fatalf("claim while the destination is paused took %+v", got)
	}
	f.cancelledOn(f.acct.ID, 1) // a new event for the paused destination
	for _, d := range f.deliveries() {
		if d.AccountID != f.acct.ID || d.State != store.DeliveryPending || d.Claimed {
			continue
		}
		if d.NextAttemptAt.Before(pause.Add(-time.Millisecond)) {
			t.Errorf("delivery %s to the paused destination is due at %v, before the pause's end %v", d.ID, d.NextAttemptAt, pause)
		}
	}
	// The other account's destination is not paused: its next event goes at once.
	f.cancelledOn(other.ID, 1)
	got = f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2})
	if len(got) != 1 || got[0].AccountID != other.ID || got[0].DestinationFailures != 0 {
		t.Fatalf("claim beside a paused destination took %+v", got)
	}
	// A failure whose pause is already over counts; the next claim reports it; a delivery
	// forgets it.
	b2 := got[0]
	if _, err := wb.RecordWebhookAttempt(b2.ID, store.WebhookAttempt{Attempts: 1, At: time.Now(), Err: "no answer", RetryAt: time.Now().Add(-time.Second),
		PauseDestinationUntil: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	got = f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2})
	if len(got) != 1 || got[0].ID != b2.ID || got[0].DestinationFailures != 1 {
		t.Fatalf("claim after one failure took %+v", got)
	}
	if _, err := wb.RecordWebhookAttempt(b2.ID, store.WebhookAttempt{Attempts: 2, At: time.Now(), StatusCode: 204}); err != nil {
		t.Fatal(err)
	}
	f.cancelledOn(other.ID, 1)
	got = f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2})
	if len(got) != 1 || got[0].AccountID != other.ID || got[0].DestinationFailures != 0 {
		t.Fatalf("claim after a delivery took %+v", got)
	}
}

func testWebhookClaimPerAccountCap(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	other := newFixtureOn(t, f.s, "other")
	for _, host := range []string{"a", "b", "c", "d", "e"} {
		f.endpoint("https://" + host + ".example/hook")
	}
	if _, err := f.wh().CreateWebhookEndpoint(other.ID, "http://z.example/hook", "whsec_z"); err != nil {
		t.Fatal(err)
	}
	f.cancelledOn(f.acct.ID, 2) // ten deliveries to five destinations
	f.cancelledOn(other.ID, 1)
	got := f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2, PerAccount: 3})
	n := map[string]int{}
	for _, d := range got {
		n[d.AccountID]++
	}
	if n[f.acct.ID] != 3 || n[other.ID] != 1 || len(got) != 4 {
		t.Fatalf("claim with 3 per account took %v", n)
	}
	if got := f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2, PerAccount: 3}); len(got) != 0 {
		t.Fatalf("claim at the account's cap took %d", len(got))
	}
}

func testWebhookClaimCapsConcurrent(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	f.endpoint("https://a.example/hook")
	f.endpoint("https://a.example:8443/other") // another port: another destination
	f.cancelledOn(f.acct.ID, 12)
	var mu sync.Mutex
	perDest := map[string]int{}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				got, err := f.wh().ClaimWebhookDeliveries(store.WebhookClaim{Limit: 3, Hold: time.Hour, PerDestination: 2})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, d := range got {
					if seen[d.ID] {
						errs <- errDuplicate(d.ID)
					}
					seen[d.ID] = true
					perDest[d.Destination]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(perDest) != 2 || perDest["a.example:443"] != 2 || perDest["a.example:8443"] != 2 {
		t.Fatalf("concurrent claims with 2 per destination took %v", perDest)
	}
}

// testWebhookPausedGiveUp: the deliveries waiting for a paused destination whose retry
// period is over fail instead of waiting again.
func testWebhookPausedGiveUp(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 1000)
	f.endpoint("https://a.example/hook")
	f.cancelledOn(f.acct.ID, 3)
	got := f.claimWebhooks(store.WebhookClaim{Limit: 1, PerDestination: 2})
	if len(got) != 1 {
		t.Fatalf("claim took %d", len(got))
	}
	now := time.Now()
	if _, err := f.wh().RecordWebhookAttempt(got[0].ID, store.WebhookAttempt{Attempts: 1, At: now, Err: "no answer", RetryAt: now.Add(-time.Second),
		PauseDestinationUntil: now.Add(time.Hour), GiveUpAfter: time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	if got := f.claimWebhooks(store.WebhookClaim{Limit: 10, PerDestination: 2, GiveUpAfter: time.Microsecond}); len(got) != 0 {
		t.Fatalf("claim while paused took %+v", got)
	}
	failed := 0
	for _, d := range f.deliveries() {
		switch {
		case d.ID == got[0].ID:
			if d.State != store.DeliveryPending || d.NextAttemptAt.Before(now.Add(time.Hour-time.Millisecond)) {
				t.Errorf("the attempted delivery: %+v", d)
			}
		case d.State == store.DeliveryFailed && d.LastError == store.WebhookGaveUpPaused && d.Attempts == 0:
			failed++
		default:
			t.Errorf("delivery waiting for the paused destination past its retry period: %+v", d)
		}
	}
	if failed != 2 {
		t.Fatalf("%d deliveries given up, want 2", failed)
	}
}

type errDuplicate string

func (e errDuplicate) Error() string { return "delivery " + string(e) + " claimed twice" }
