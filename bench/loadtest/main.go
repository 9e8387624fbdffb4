// Command loadtest drives a real convsvc binary on loopback with many accounts and concurrent
// clients for a fixed time, exercising the rate limit and spend caps, and reports throughput,
// latency percentiles, errors by code, peak RSS, open file descriptors and goroutines; at the
// end it stops the server and checks the ledger.
//
//	go run ./bench/loadtest -duration 60s -accounts 2000 -clients 64
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/convsvc/convsvc/bench/internal/benchkit"
	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

func main() {
	duration := flag.Duration("duration", 60*time.Second, "how long to drive load")
	accounts := flag.Int("accounts", 2000, "accounts (one key each)")
	clients := flag.Int("clients", 64, "concurrent clients")
	capped := flag.Float64("capped", 0.1, "share of accounts with a 1-cent cap (exercises limit_reached)")
	hammer := flag.Int("hammer", 2, "clients that hammer one key with creates (exercises rate_limited)")
	workers := flag.Int("workers", 0, "server --workers (0: its default)")
	flag.Parse()
	if err := run(*duration, *accounts, *clients, *capped, *hammer, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// recorder collects latencies per operation and errors by code.
type recorder struct {
	mu        sync.Mutex
	latencies map[string][]time.Duration
	errors    map[string]int
}

func (r *recorder) observe(op string, start time.Time, err error) {
	d := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies[op] = append(r.latencies[op], d)
	if err != nil {
		code := "transport"
		var apiErr *client.APIError
		if errors.As(err, &apiErr) {
			code = string(apiErr.Code)
		}
		r.errors[op+" "+code]++
	}
}

func run(duration time.Duration, nAccounts, nClients int, capped float64, nHammer, workers int) error {
	dir, err := os.MkdirTemp("", "convsvc-load-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	bin, err := benchkit.Server(dir, "")
	if err != nil {
		return err
	}
	sample, err := os.ReadFile(filepath.Join(root, "testdata", "images", "sample.png"))
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	args := []string{"--log-level", "warn"}
	if workers > 0 {
		args = append(args, "--workers", strconv.Itoa(workers))
	}
	p, err := testproc.Start(bin, data, args...)
	if err != nil {
		return err
	}
	defer p.Kill()
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: nClients * 2}, Timeout: 90 * time.Second}
	admin := &client.Client{BaseURL: p.URL, Key: strings.TrimSpace(string(token)), HTTP: hc}
	ctx := context.Background()
	setup := time.Now()
	keys := make([]string, nAccounts)
	for i := range keys {
		capCents := int64(1_000_000)
		if float64(i) < capped*float64(nAccounts) {
			capCents = 1
		}
		acct, err := admin.CreateAccount(ctx, fmt.Sprintf("load-%d", i), capCents)
		if err != nil {
			return fmt.Errorf("create account: %w", err)
		}
		k, err := admin.CreateKey(ctx, acct.ID)
		if err != nil {
			return err
		}
		keys[i] = k.Key
	}
	fmt.Printf("setup: %d accounts and keys in %v\n", nAccounts, time.Since(setup).Round(time.Millisecond))

	rec := &recorder{latencies: map[string][]time.Duration{}, errors: map[string]int{}}
	var completed atomic.Int64
	stop := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i := 0; i < nClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for time.Now().Before(stop) {
				c := &client.Client{BaseURL: p.URL, Key: keys[rng.IntN(len(keys))], HTTP: hc, Retries: -1}
				if i < nHammer {
					c.Key = keys[len(keys)-1-i] // one key, as fast as it goes
					t0 := time.Now()
					_, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10}, "")
					rec.observe("create(hammer)", t0, err)
					continue
				}
				if fullFlow(ctx, c, rec, sample) {
					completed.Add(1)
				}
			}
		}()
	}
	// Sample the server process while the load runs.
	var peakRSS, peakFDs, startRSS, endRSS int64
	var rssSamples []int64
	sampler := time.NewTicker(time.Second)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	pid := p.Pid()
	startRSS = rssKiB(pid)
loop:
	for {
		select {
		case <-done:
			break loop
		case <-sampler.C:
			rss, fds := rssKiB(pid), fdCount(pid)
			rssSamples = append(rssSamples, rss)
			peakRSS, peakFDs = max(peakRSS, rss), max(peakFDs, fds)
		}
	}
	endRSS = rssKiB(pid)
	elapsed := duration
	fmt.Printf("\nload: %d clients (%d hammering one key each) over %d accounts for %v\n", nClients, nHammer, nAccounts, elapsed)
	fmt.Printf("completed conversions (reserve, upload, start, wait, download): %d = %.1f/s\n", completed.Load(), float64(completed.Load())/elapsed.Seconds())
	fmt.Println("\n| operation | count | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
	ops := make([]string, 0, len(rec.latencies))
	for op := range rec.latencies {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		l := rec.latencies[op]
		slices.Sort(l)
		fmt.Printf("| %s | %d | %.2f | %.2f | %.2f |\n", op, len(l), ms(l[len(l)/2]), ms(l[len(l)*99/100]), ms(l[len(l)-1]))
	}
	fmt.Println("\n| errors (operation code) | count |\n|---|---|")
	errs := make([]string, 0, len(rec.errors))
	for e := range rec.errors {
		errs = append(errs, e)
	}
	slices.Sort(errs)
	for _, e := range errs {
		fmt.Printf("| %s | %d |\n", e, rec.errors[e])
	}
	fmt.Printf("\nserver RSS: start %d MiB, peak %d MiB, end %d MiB; peak open fds %d\n", startRSS/1024, peakRSS/1024, endRSS/1024, peakFDs)
	if n := len(rssSamples); n >= 20 {
		fmt.Printf("RSS over the run, per 10%%: ")
		for i := 0; i < 10; i++ {
			fmt.Printf("%d ", rssSamples[i*n/10]/1024)
		}
		fmt.Println("MiB")
	}
	if !p.Signal(syscall.SIGTERM, 60*time.Second) {
		return fmt.Errorf("server did not stop")
	}
	st, err := store.Open(filepath.Join(data, "convsvc.db"), store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		return fmt.Errorf("bbolt check: %w", err)
	}
	if err := st.VerifyLedger(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	fmt.Println("ledger invariant holds after the run (store.VerifyLedger), bbolt check passes")
	return nil
}

// fullFlow runs one conversion through the API; it reports whether it downloaded a result.
func fullFlow(ctx context.Context, c *client.Client, rec *recorder, sample []byte) bool {
	t0 := time.Now()
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(sample))}, "")
	rec.observe("create", t0, err)
	if err != nil {
		return false
	}
	t0 = time.Now()
	err = c.Upload(ctx, res.UploadURL, strings.NewReader(string(sample)), int64(len(sample)))
	rec.observe("upload", t0, err)
	if err != nil {
		return false
	}
	t0 = time.Now()
	_, err = c.StartJob(ctx, res.Job.ID)
	rec.observe("start", t0, err)
	if err != nil {
		return false
	}
	t0 = time.Now()
	job, err := c.GetJob(ctx, res.Job.ID, 30*time.Second)
	for err == nil && !job.Finished() {
		job, err = c.GetJob(ctx, res.Job.ID, 30*time.Second)
	}
	rec.observe("wait", t0, err)
	if err != nil || job.Output == nil {
		return false
	}
	t0 = time.Now()
	resp, err := c.HTTP.Get(job.Output.URL)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	rec.observe("download", t0, err)
	return err == nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}

func fdCount(pid int) int64 {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return int64(len(entries))
}
