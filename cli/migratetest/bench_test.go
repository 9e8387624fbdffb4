package migratetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/store"
)

// BenchmarkMigrateDatabase copies a data dir of 1,000 accounts with a key each and 10,000
// unfinished jobs (half created, half queued) into a fresh PostgreSQL database per iteration.
//
//	go test ./cli/migratetest -run '^$' -bench MigrateDatabase -benchtime 3x
func BenchmarkMigrateDatabase(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "convsvc.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const accounts, jobsPer = 1000, 10
	for range accounts {
		acct, err := st.CreateAccount("bench", 100)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := st.CreateKey(acct.ID); err != nil {
			b.Fatal(err)
		}
		for i := range jobsPer {
			job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
				func(store.Job) (store.Response, error) { return store.Response{}, nil })
			if err != nil {
				b.Fatal(err)
			}
			if i%2 == 1 {
				if _, err := st.StartJob(acct.ID, job.ID, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		url := testpg.NewDatabase(b)
		b.StartTimer()
		rep, err := cli.Migrate(context.Background(), cli.MigrateOptions{DataDir: dir, DatabaseURL: url})
		if err != nil {
			b.Fatal(err)
		}
		if rep.UnfinishedJobs != accounts*jobsPer {
			b.Fatalf("copied %d jobs, want %d", rep.UnfinishedJobs, accounts*jobsPer)
		}
	}
	b.ReportMetric(float64(accounts*jobsPer)*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
