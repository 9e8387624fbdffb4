package store

import (
	"path/filepath"
	"testing"
)

func benchStore(b *testing.B) (*Store, Account) {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	a, err := s.CreateAccount("bench", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	return s, a
}

func BenchmarkStore_CreateJob(b *testing.B) {
	s, a := benchStore(b)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.CreateJob(p, noRender); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStore_CreateJobParallel(b *testing.B) {
	s, a := benchStore(b)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
	b.ReportAllocs()
	b.SetParallelism(32)
	before := s.WriteStats()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.CreateJob(p, noRender); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportGroupSize(b, before, s.WriteStats())
}

// reportGroupSize reports the average number of writes per write transaction.
func reportGroupSize(b *testing.B, before, after WriteStats) {
	if tx := after.Transactions - before.Transactions; tx > 0 {
		b.ReportMetric(float64(after.Writes-before.Writes)/float64(tx), "writes/commit")
	}
}

// BenchmarkStore_JobLifecycle is create, start, claim and finish: the four write transactions
// every conversion costs.
func BenchmarkStore_JobLifecycle(b *testing.B) {
	s, a := benchStore(b)
	p := CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}
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
			b.Fatal(err)
		}
		if _, err := s.FinishJob(c.ID, c.Attempt, Outcome{Output: &Output{Bytes: 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStore_Authenticate(b *testing.B) {
	s, a := benchStore(b)
	_, secret, err := s.CreateKey(a.ID)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Authenticate(secret); err != nil {
			b.Fatal(err)
		}
	}
}
