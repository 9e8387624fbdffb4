package storetest

import (
	"fmt"
	"testing"

	"github.com/convsvc/convsvc/store"
)

// testOutputVerified: a succeeded job keeps whether its output passed its check
// (output.verified), true or false, through FinishJob, reads and the account's listing.
func testOutputVerified(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	for _, verified := range []bool{true, false} {
		job := f.create(10)
		f.start(job)
		f.claim()
		out := &store.Output{Bytes: 7, SHA256: fmt.Sprintf("%064x", 7), Verified: verified}
		done, err := f.s.FinishJob(job.ID, 1, store.Outcome{Output: out})
		if err != nil {
			t.Fatal(err)
		}
		if done.Output == nil || done.Output.Verified != verified {
			t.Fatalf("finished output %+v, want verified %v", done.Output, verified)
		}
		if got := f.get(job.ID); got.Output == nil || got.Output.Verified != verified || got.Output.SHA256 != out.SHA256 {
			t.Fatalf("read back output %+v, want verified %v", got.Output, verified)
		}
	}
	f.checkLedger(0, 2)
}
