package pgstore_test

import (
	"sync"
	"testing"

	"github.com/convsvc/convsvc/internal/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

func noRender(store.Job) (store.Response, error) { return store.Response{}, nil }

// BenchmarkJobLifecycle is create, start, claim and finish: the four transactions every
// conversion costs (the same as store's BenchmarkStore_JobLifecycle).
func BenchmarkJobLifecycle(b *testing.B) {
	s := open(b, testpg.NewDatabase(b), pgstore.Options{})
	a, err := s.CreateAccount("bench", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	p := store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	b.ReportAllocs()
	for b.Loop() {
		j, _, err := s.CreateJob(p, noRender)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.StartJob(a.ID, j.ID, 100); err != nil {
			b.Fatal(err)
		}
		c, ok, err := s.ClaimJob()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if _, err := s.FinishJob(c.ID, c.Attempt, store.Outcome{Output: &store.Output{Bytes: 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateStartParallel64 is 64 accounts creating and starting jobs at once (the same
// as store's BenchmarkStore_CreateStartParallel64), on one Store with a pool of 16 connections.
func BenchmarkCreateStartParallel64(b *testing.B) {
	s := open(b, testpg.NewDatabase(b), pgstore.Options{MaxConns: 16})
	const g = 64
	accts := make([]store.Account, g)
	for i := range accts {
		a, err := s.CreateAccount("bench", 1<<40)
		if err != nil {
			b.Fatal(err)
		}
		accts[i] = a
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	work := make(chan struct{}, g)
	for i := range g {
		wg.Go(func() {
			a := accts[i]
			p := store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
			for range work {
				j, _, err := s.CreateJob(p, noRender)
				if err == nil {
					_, err = s.StartJob(a.ID, j.ID, 100)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}
