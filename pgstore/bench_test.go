package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
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
	accts := benchAccounts(b, s, g)
	b.ReportAllocs()
	b.ResetTimer()
	fanOut(b, g, func(i int) error {
		a := accts[i]
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}, noRender)
		if err == nil {
			_, err = s.StartJob(a.ID, j.ID, 100)
		}
		return err
	})
}

// benchAccounts creates n accounts named bench whose cap no benchmark reaches.
func benchAccounts(b *testing.B, s *pgstore.Store, n int) []store.Account {
	b.Helper()
	accts := make([]store.Account, n)
	for i := range accts {
		a, err := s.CreateAccount("bench", 1<<40)
		if err != nil {
			b.Fatal(err)
		}
		accts[i] = a
	}
	return accts
}

// fanOut runs b.N calls of op over g goroutines, goroutine i calling op(i) for each of its
// share; the first error stops that goroutine and fails b.
func fanOut(b *testing.B, g int, op func(i int) error) {
	var wg sync.WaitGroup
	work := make(chan struct{}, g)
	for i := range g {
		wg.Go(func() {
			for range work {
				if err := op(i); err != nil {
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

// BenchmarkListJobsByStatus is a filtered page over a long history (the same as store's
// BenchmarkStore_ListJobsByStatus): 8,000 cancelled jobs and two running ones, of which the
// page asks for the newest, and a page of failed jobs, of which there are none. rows/op is
// what the statements read (EXPLAIN ANALYZE). The "without-index" runs drop
// jobs_account_status first: the plans the list had before it.
func BenchmarkListJobsByStatus(b *testing.B) {
	url := testpg.NewDatabase(b)
	s := open(b, url, pgstore.Options{})
	a, err := s.CreateAccount("bench", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	p := store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	for i := range 8000 + 2 {
		j, _, err := s.CreateJob(p, noRender)
		if err != nil {
			b.Fatal(err)
		}
		if i < 2 {
			if _, err := s.StartJob(a.ID, j.ID, 100); err != nil {
				b.Fatal(err)
			}
			if _, ok, err := s.ClaimJob(); err != nil || !ok {
				b.Fatal(ok, err)
			}
		} else if _, err := s.CancelJob(a.ID, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	run := func(name string, lp store.ListParams, want int, more bool) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				jobs, m, err := s.ListJobs(a.ID, lp)
				if err != nil || len(jobs) != want || m != more {
					b.Fatal(len(jobs), m, err)
				}
			}
			n, err := s.ListJobsVisits(a.ID, lp)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "rows/op")
		})
	}
	running := store.ListParams{Limit: 1, Status: store.StatusRunning}
	failed := store.ListParams{Limit: 20, Status: store.StatusFailed}
	run("running", running, 1, true)
	run("failed", failed, 0, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connect(b, url)
	if _, err := conn.Exec(ctx, `DROP INDEX jobs_account_status`); err != nil {
		b.Fatal(err)
	}
	run("running-without-index", running, 1, true)
	run("failed-without-index", failed, 0, false)
}

// BenchmarkCacheHitCreateStart64 is BenchmarkCreateStartParallel64 with the conversion cache:
// 64 accounts, each with its key's entry (one job converted first), create and start jobs of
// that key at once, every start a hit; on the transition functions (migration 0019, whose
// start finds the entry and leaves the hit to Go) and on the Go transactions.
func BenchmarkCacheHitCreateStart64(b *testing.B) {
	onBothTransitionPaths(b, pgstore.Options{MaxConns: 16}, func(b *testing.B, s *pgstore.Store) {
		const g, base = 64, "png>gif;bench"
		sha := strings.Repeat("e", 64)
		accts := benchAccounts(b, s, g)
		for _, a := range accts {
			j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 100, CacheBase: base + a.ID}, noRender)
			if err == nil {
				_, err = s.StartSealedJob(a.ID, j.ID, store.Upload{Size: 100, SHA256: sha})
			}
			if err == nil {
				j, _, err = s.ClaimJob()
			}
			if err == nil {
				_, err = s.FinishJob(j.ID, j.Attempt, store.Outcome{Output: &store.Output{Bytes: 1, SHA256: sha}})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		var creating, starting atomic.Int64
		fanOut(b, g, func(i int) error {
			a := accts[i]
			t0 := time.Now()
			j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 100, CacheBase: base + a.ID}, noRender)
			t1 := time.Now()
			if err == nil {
				j, err = s.StartSealedJob(a.ID, j.ID, store.Upload{Size: 100, SHA256: sha})
			}
			creating.Add(int64(t1.Sub(t0)))
			starting.Add(int64(time.Since(t1)))
			if err == nil && j.Status != store.StatusSucceeded {
				err = fmt.Errorf("start of job %s: %s, want a hit", j.ID, j.Status)
			}
			return err
		})
		b.ReportMetric(float64(s.Retried())/float64(b.N), "retries/op")
		b.ReportMetric(float64(creating.Load())/1e6/float64(b.N), "create-ms/op")
		b.ReportMetric(float64(starting.Load())/1e6/float64(b.N), "start-ms/op")
	})
}

// BenchmarkCancel cancels created jobs one at a time through migration 0031's function
// (CancelJob: the call and the take, one round trip) and through the Go transaction it
// replaced; the create before each cancel is not timed.
func BenchmarkCancel(b *testing.B) {
	onBothTransitionPaths(b, pgstore.Options{}, func(b *testing.B, s *pgstore.Store) {
		a, err := s.CreateAccount("bench", 1<<40)
		if err != nil {
			b.Fatal(err)
		}
		p := store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			j, _, err := s.CreateJob(p, noRender)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := s.CancelJob(a.ID, j.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// onBothTransitionPaths runs fn as two sub-benchmarks, each on a store of its own database
// opened with o: "functions" on the transition functions, "go" on the Go transactions they
// replaced (UseGoTransitions).
func onBothTransitionPaths(b *testing.B, o pgstore.Options, fn func(b *testing.B, s *pgstore.Store)) {
	for _, goTx := range []bool{false, true} {
		name := "functions"
		if goTx {
			name = "go"
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, testpg.NewDatabase(b), o)
			if goTx {
				s.UseGoTransitions()
			}
			fn(b, s)
		})
	}
}
