package storetest

import (
	"testing"

	"github.com/convsvc/convsvc/store"
)

// BenchClaimBacklog measures a worker's claim and finish beside a backlog: one account with
// 500 queued jobs and nine with 10 each. Each claimed job is replaced by a new one of the same
// account (outside the timer), so the backlog stays the same size for every claim. store and
// pgstore run it as BenchmarkClaimBacklog.
func BenchClaimBacklog(b *testing.B, s Backend) {
	sizes := []int{500, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	accts := make([]store.Account, len(sizes))
	queue := func(a store.Account) {
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}, plainRender)
		if err == nil {
			_, err = s.StartJob(a.ID, j.ID, 100)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	byID := map[string]store.Account{}
	for i, n := range sizes {
		a, err := s.CreateAccount("bench", 1<<40)
		if err != nil {
			b.Fatal(err)
		}
		accts[i], byID[a.ID] = a, a
		for range n {
			queue(a)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, ok, err := s.ClaimJob()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if _, err := s.FinishJob(c.ID, c.Attempt, store.Outcome{Output: &store.Output{Bytes: 1}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		queue(byID[c.AccountID])
		b.StartTimer()
	}
}
