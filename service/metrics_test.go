package service

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/store"
)

// BenchmarkMetricsScrape measures one GET /metrics (the HTTP round trip, the store's count
// transaction, bbolt's stats, the Go and process collectors, encoding) with N jobs stored.
func BenchmarkMetricsScrape(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			m, err := Run(Config{
				DataDir: filepath.Join(b.TempDir(), "data"), Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DefaultSpendCapCents: 1 << 40,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			accts, err := m.Store().Accounts()
			if err != nil {
				b.Fatal(err)
			}
			fill(b, m.Store(), accts[0].ID, n)
			url := m.MetricsURL()
			b.ResetTimer()
			for b.Loop() {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				nbytes, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
				b.ReportMetric(float64(nbytes), "bytes/scrape")
			}
		})
	}
}

// fill creates n jobs through the store, 32 at a time.
func fill(b *testing.B, st *store.Store, accountID string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	jobs := make(chan struct{})
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				_, _, err := st.CreateJob(store.CreateJobParams{AccountID: accountID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
					func(store.Job) (store.Response, error) { return store.Response{Status: 200}, nil })
				if err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
}
