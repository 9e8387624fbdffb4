package service_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/store"
)

// BenchmarkAPI_Create is the API's hot path over real HTTP in one process: POST /v1/jobs
// (the CreateStart variant adds an upload of a 16x16 PNG and POST /v1/jobs/{id}/start).
// 32 client goroutines share keys enough for the per-key rate limit. bench/apibench measures
// the same against a bare handler in separate processes; this one is for profiles:
//
//	go test ./service -run XXX -bench APICreate -benchtime 20000x -cpuprofile /tmp/create.pprof
//
// With CONVSVC_TEST_DATABASE=postgres the jobs are in PostgreSQL (testenv.Postgres).
func BenchmarkAPI_Create(b *testing.B) { benchCreate(b, false) }

// BenchmarkAPI_CreateStart creates, uploads and starts: one op is all three requests.
func BenchmarkAPI_CreateStart(b *testing.B) { benchCreate(b, true) }

func benchCreate(b *testing.B, start bool) {
	e := testenv.Start(b)
	const perKey = 55 // 120 writes per key per rolling minute: create + start for 55 jobs, with room
	keys := make([]string, b.N/perKey+1)
	for i := range keys {
		_, keys[i] = e.NewAccount(1 << 40)
	}
	png := testenv.NoisePNG(b, 16, 16)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	do := func(method, url, key string, body []byte) ([]byte, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, out)
		}
		return out, err
	}
	create := []byte(fmt.Sprintf(`{"input_format":"png","target_format":"jpeg","input_bytes":%d}`, len(png)))
	var next atomic.Int64
	b.SetParallelism(16) // 32 clients on 2 cores
	b.ReportAllocs()
	var before, after store.WriteStats
	bolt := e.Main.Store() // nil on PostgreSQL
	if bolt != nil {
		before = bolt.WriteStats()
	}
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := keys[int(next.Add(1)-1)/perKey]
			out, err := do("POST", e.URL+"/v1/jobs", key, create)
			if err != nil {
				b.Error(err)
				return
			}
			if !start {
				continue
			}
			var res struct {
				Job struct {
					ID string `json:"id"`
				} `json:"job"`
				UploadURL string `json:"upload_url"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				b.Error(err)
				return
			}
			if _, err := do("PUT", res.UploadURL, "", png); err != nil {
				b.Error(err)
				return
			}
			if _, err := do("POST", e.URL+"/v1/jobs/"+res.Job.ID+"/start", key, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// This process's CPU per op: the server's and the client's (PostgreSQL, with
	// CONVSVC_TEST_DATABASE=postgres, is another process).
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if bolt != nil {
		after = bolt.WriteStats()
	}
	if tx := after.Transactions - before.Transactions; tx > 0 {
		b.ReportMetric(float64(after.Writes-before.Writes)/float64(tx), "writes/commit")
	}
}

// processCPU is this process's user and system CPU time so far (0 where getrusage is not).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
