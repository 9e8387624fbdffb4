package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestClaim_NodeKilledHoldingTheAccountLock: a node that dies in the middle of a capped
// account's claim (holding the account's claim lock) stops no one: another node's claim waits
// for the lock, gets it when the dead node's connection goes, and max_running still holds.
func TestClaim_NodeKilledHoldingTheAccountLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{NodeID: "survivor"})
	acct, err := s.CreateAccount("capped", 100)
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	if _, err := s.UpdateAccountLimits(acct.ID, store.AccountLimits{MaxRunning: store.LimitUpdate{Set: true, Value: &one}}); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for range 2 {
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1}, noRender)
		if err == nil {
			_, err = s.StartJob(acct.ID, j.ID, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j.ID)
	}

	// The node about to die: in a claim's transaction, holding the account's claim lock.
	dying := startDying(ctx, t, url)
	if _, err := dying.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, pgstore.LockAccountClaims, acct.ID); err != nil {
		t.Fatal(err)
	}

	type claim struct {
		job store.Job
		ok  bool
		err error
	}
	done := make(chan claim, 1)
	go func() {
		j, ok, err := s.ClaimJob()
		done <- claim{j, ok, err}
	}()
	// The survivor's claim waits for the lock (PostgreSQL shows the waiter).
	admin := connect(t, url)
	waitBlocked(t, admin, []uint32{dying.pid}, func() bool {
		select {
		case c := <-done:
			t.Fatalf("the claim returned (%+v) while another node held the account's claim lock", c)
		default:
		}
		return false
	})
	// Killed: its backend goes, and with it the transaction and the lock.
	dying.kill(ctx, t, admin)
	c := <-done
	if c.err != nil || !c.ok || c.job.ID != jobs[0] {
		t.Fatalf("claim after the lock holder died: %+v, want %s", c, jobs[0])
	}
	// max_running 1 holds: the second job waits until the first finishes.
	if j, ok, err := s.ClaimJob(); err != nil || ok {
		t.Fatalf("second claim at max_running 1: %s ok=%v err=%v", j.ID, ok, err)
	}
	if _, err := s.FinishJob(c.job.ID, c.job.Attempt, store.Outcome{Output: &store.Output{Bytes: 1}}); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := s.ClaimJob(); err != nil || !ok || j.ID != jobs[1] {
		t.Fatalf("claim after the first finished: %s ok=%v err=%v, want %s", j.ID, ok, err, jobs[1])
	}
}
