package store

import (
	"sync"
	"testing"
)

// The API's other hot paths: the reads every poll makes, the worker's claim and finish, and
// create+start from many goroutines at once, which is where group commit pays.

func BenchmarkStore_Job(b *testing.B) {
	s, a := benchStore(b)
	j, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}, noRender)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Job(a.ID, j.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStore_ListJobs(b *testing.B) {
	s, a := benchStore(b)
	for range 1000 {
		if _, _, err := s.CreateJob(CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}, noRender); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		jobs, _, err := s.ListJobs(a.ID, ListParams{Limit: 20})
		if err != nil || len(jobs) != 20 {
			b.Fatal(len(jobs), err)
		}
	}
}

// BenchmarkStore_CreateStartParallel64 is the API under load: 64 goroutines, each creating and
// starting jobs (two write transactions) on its own account.
func BenchmarkStore_CreateStartParallel64(b *testing.B) {
	s, _ := benchStore(b)
	const g = 64
	accts := make([]Account, g)
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
			p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
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

// BenchmarkStore_ClaimFinish is a worker's share of every job: claim from the queue, record
// the outcome.
func BenchmarkStore_ClaimFinish(b *testing.B) {
	s, a := benchStore(b)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		j, _, err := s.CreateJob(p, noRender)
		if err == nil {
			_, err = s.StartJob(a.ID, j.ID, 100)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c, ok, err := s.ClaimJob()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if _, err := s.FinishJob(c.ID, c.Attempt, Outcome{Output: &Output{Bytes: 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchHistory is the account history of the filtered-list benchmarks: issue 38 measured
// ?status=running&limit=1 over 8,000 jobs.
const benchHistory = 8000

// BenchmarkStore_ListJobsByStatus is a filtered page over a long history: 8,000 cancelled jobs
// and two running ones, of which the page asks for the newest (GET
// /v1/jobs?status=running&limit=1). Its cost should be the page's, not the history's.
func BenchmarkStore_ListJobsByStatus(b *testing.B) {
	s, a := benchStore(b)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	s.db.NoSync = true // setting up 16,000 transactions; the reads measured do not sync
	for i := range benchHistory + 2 {
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
	s.db.NoSync = false
	b.ReportAllocs()
	for b.Loop() {
		jobs, more, err := s.ListJobs(a.ID, ListParams{Limit: 1, Status: StatusRunning})
		if err != nil || len(jobs) != 1 || !more {
			b.Fatal(len(jobs), more, err)
		}
	}
	n, err := s.ListJobsVisits(a.ID, ListParams{Limit: 1, Status: StatusRunning})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n), "reads/op") // index entries and records read
}
