// Command scaleout measures convsvc on PostgreSQL with the local blob store on one node and
// with S3-compatible storage on one and three `convsvc serve` nodes, against the embedded
// default (bbolt + the local blob store) on one node, in the same run (-only picks some):
//
//   - API: creates+starts per second and their p50/p99 latency from -clients concurrent
//     clients, spread round-robin over the nodes. A create phase (POST /v1/jobs for -duration)
//     is followed by untimed uploads of a 16x16 PNG to each job's presigned URL and a start
//     phase (POST /v1/jobs/{id}/start for every job). Every job uploads the same PNG, so with
//     the cache on every start after an account's first is a cache hit; -distinct gives each
//     job its own (the job's number in a tEXt chunk), so that no start is. Each key makes at most 60 jobs (120
//     writes, SPEC's limit per rolling minute), so the run never meets the rate limit. Job n
//     uses key n mod -keys (keys are spread over -keys/10+1 accounts in turn), so concurrent
//     clients act for different accounts, as many tenants do; -spread=false gives each key
//     its 60 jobs in a row, so all clients write to one or two accounts at a time, whose
//     row locks then serialise them (one commit, and with fsync on one WAL flush, at a time).
//   - Reads (outside the rate above): then a GET /v1/jobs/{id} of every job, as a client
//     polls, on the node after the one that started it (round-robin).
//   - Conversions (on new nodes and a new database): -conversions PNG -> GIF jobs of a -size x -size noisy image, uploaded
//     first, then started all at once over the nodes; conversions per second is their number
//     over the time from the first start to the last success.
//
// After the table, each contender's create, start and read phases get a line of their own: rate,
// p50/p90/p99/max, a latency histogram, and the CPU milliseconds per request of the nodes, the
// S3 server (-s3-pid), PostgreSQL (-pg-pid) and this load generator itself, read from /proc (the started jobs convert
// meanwhile, so their workers' CPU is in the start phase's figures), and PostgreSQL's WAL
// syncs (pg_stat_wal) and commits (pg_stat_database) per request, cluster-wide.
//
// SCALEOUT_PHASES=FILE appends the wall clock (Unix seconds) of the API phase's edges to FILE:
// the create phase's start and end, the start phase's start and end (the read phase's start),
// the read phase's end, for `perf record -k
// realtime` and `perf report --time START,END`.
//
// Each contender gets a fresh database (CREATE DATABASE on -postgres), dropped when its nodes
// stop, and its own prefix in -bucket. bench/scaleout.sh starts PostgreSQL and versitygw on loopback and runs this:
//
//	go run ./bench/scaleout -postgres URL -s3-endpoint URL -bucket NAME [-clients 32] [-duration 10s] [-conversions 48] [-size 512] [-only bbolt,pg-local,pg-s3,pg-s3-3] [-versus BIN] [-client lean|nethttp] [-distinct]
//
// -versus runs each contender a second time with another binary (main's, say), right after
// the first, on the same PostgreSQL and between the same two pgbench runs, so a change is measured
// against its base in one run.
//
// The create and start phases send their requests with a lean client (leanhttp.go: one
// keep-alive connection per client goroutine, no net/http Transport), as pgbench's own
// client is lean: the generator shares the 2 cores with the node and PostgreSQL, and its own
// CPU per request is reported beside theirs. -client nethttp takes net/http's Client, as
// runs before 2026-12-03 did. With bench/serveprof as -bin and $CONVSVC_CPUPROFILE set, each
// node's profile is cut at the phases' edges (cut).
//
// S3 credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (inherited by the nodes).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/bench/internal/benchkit"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

const adminToken = "scaleout-bench-admin-token-0123456789"

// perKeyJobs is how many jobs one key creates and starts: 120 writes, the limit per minute.
const perKeyJobs = 60

var (
	pgURL       = flag.String("postgres", "", "PostgreSQL URL of a role that may CREATE DATABASE (its maintenance database)")
	s3Endpoint  = flag.String("s3-endpoint", "", "S3 endpoint, e.g. http://127.0.0.1:7070")
	s3Region    = flag.String("s3-region", "us-east-1", "S3 region")
	bucket      = flag.String("bucket", "", "existing bucket; each contender uses its own prefix")
	clients     = flag.Int("clients", 32, "concurrent API clients")
	duration    = flag.Duration("duration", 10*time.Second, "length of the create phase")
	conversions = flag.Int("conversions", 48, "jobs of the conversion phase")
	size        = flag.Int("size", 512, "width and height of the conversion phase's noisy PNG")
	keys        = flag.Int("keys", 600, "API keys (each makes at most 60 jobs)")
	prebuilt    = flag.String("bin", "", "convsvc binary (default: build this module)")
	versus      = flag.String("versus", "", "a second convsvc binary (e.g. main's), run right after -bin on each contender, on the same PostgreSQL, its rows marked (versus)")
	distinct    = flag.Bool("distinct", false, "each job of the API phases uploads a different input (the same PNG with its job number in a tEXt chunk), so that with the cache on no start is a cache hit")
	spread      = flag.Bool("spread", true, "job n uses key n mod -keys, so concurrent clients write as different keys and accounts; false: each key's 60 jobs in a row, so all clients share one or two keys and accounts at a time")
	poolConns   = flag.Int("pool-max-conns", 0, "pool_max_conns on the nodes' database URL (default: pgxpool's, max(4, CPUs))")
	pgPid       = flag.Int("pg-pid", 0, "PostgreSQL's postmaster pid, to report its CPU per job (bench/scaleout.sh passes it)")
	gwPid       = flag.Int("s3-pid", 0, "the S3 server's pid, to report its CPU per job (bench/scaleout.sh passes it)")
	client      = flag.String("client", "lean", "the API phases' HTTP client: lean (one keep-alive connection per client goroutine, no Transport: leanhttp.go) or nethttp (net/http's Client, as before 2026-12-03)")
	only        = flag.String("only", "", "comma-separated contenders to run (default all): "+strings.Join(contenderKeys(), ","))
)

// contender is one configuration under test.
type contender struct {
	key   string // its -only name
	name  string
	nodes int
	pg    bool // PostgreSQL, else bbolt
	s3    bool // S3 object storage, else the local blob store
}

// contenders are the configurations compared, in the order they run.
var contenders = []contender{
	{"bbolt", "bbolt + local blobs, 1 node", 1, false, false},
	{"pg-local", "PostgreSQL + local blobs, 1 node", 1, true, false},
	{"pg-s3", "PostgreSQL + S3, 1 node", 1, true, true},
	{"pg-s3-3", "PostgreSQL + S3, 3 nodes", 3, true, true},
}

func contenderKeys() []string {
	var keys []string
	for _, c := range contenders {
		keys = append(keys, c.key)
	}
	return keys
}

func main() {
	flag.Parse()
	if *pgURL == "" || *s3Endpoint == "" || *bucket == "" {
		fmt.Fprintln(os.Stderr, "scaleout: -postgres, -s3-endpoint and -bucket are required (bench/scaleout.sh starts both servers)")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "convsvc-scaleout-")
	check(err)
	defer os.RemoveAll(dir)
	bin, err := benchkit.Server(dir, *prebuilt)
	check(err)
	benchkit.Header(os.Stdout, "scaleout: PostgreSQL + local blobs or S3, 1 and 3 nodes, vs bbolt on 1 node")
	fmt.Printf("clients %d, create phase %v, conversions %d of a %dx%d PNG -> GIF\n\n", *clients, *duration, *conversions, *size, *size)
	fmt.Println("| backend | creates+starts/s | p50 ms | p99 ms | jobs | conversions/s | load avg before -> after |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var details []string
	defer func() { fmt.Println("\n" + strings.Join(details, "\n")) }()
	type run struct {
		bin, mark string
	}
	runs := []run{{bin, ""}}
	if *versus != "" {
		runs = append(runs, run{*versus, " (versus)"})
	}
	for i, c := range contenders {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), c.key) {
			continue
		}
		for _, r := range runs {
			details = append(details, runContender(r.bin, dir, i, c, c.name+r.mark))
		}
	}
}

// runContender runs c's API and conversion phases with the binary bin, prints its row and
// returns its phases' detail.
func runContender(bin, dir string, i int, c contender, name string) string {
	load := benchkit.LoadAvg()
	// Each phase gets its own nodes on a fresh database and prefix, so the conversion
	// phase does not share the workers with the API phase's thousands of started jobs.
	nodes, pids, stop := startNodes(bin, dir, i, c)
	api := runAPI(nodes, pids)
	stop()
	benchkit.Settle()
	nodes, _, stop = startNodes(bin, dir, i, c)
	conv := runConversions(nodes)
	stop()
	fmt.Printf("| %s | %.0f | %.1f | %.1f | %d | %.2f | %s -> %s |\n", name, api.rate, benchkit.Ms(api.p50), benchkit.Ms(api.p99), api.jobs, conv, load, benchkit.LoadAvg())
	benchkit.Settle()
	return name + ":\n" + api.detail
}

// startNodes starts c's nodes on a fresh database and prefix (PostgreSQL) or a fresh data dir,
// and returns their URLs and pids.
func startNodes(bin, dir string, i int, c contender) ([]string, []int, func()) {
	var common []string
	var db string
	if c.pg {
		db = "convsvc_bench_" + randomHex(6)
		admin(*pgURL, "CREATE DATABASE "+db)
		u, err := url.Parse(*pgURL)
		check(err)
		u.Path = "/" + db
		if *poolConns > 0 {
			q := u.Query()
			q.Set("pool_max_conns", strconv.Itoa(*poolConns))
			u.RawQuery = q.Encode()
		}
		common = []string{"--database", u.String()}
		if c.s3 {
			common = append(common, "--object-storage", "s3://"+*bucket+"/bench-"+strconv.Itoa(i)+"-"+randomHex(4),
				"--s3-endpoint", *s3Endpoint, "--s3-region", *s3Region)
		}
	}
	var procs []*testproc.Proc
	var urls []string
	var pids []int
	for n := 0; n < c.nodes; n++ {
		data, err := os.MkdirTemp(dir, "node-")
		check(err)
		p, err := testproc.Start(bin, data, append([]string{"--admin-token", adminToken, "--log-level", "warn"}, common...)...)
		check(err)
		procs = append(procs, p)
		runningMu.Lock()
		running = append(running, p)
		runningMu.Unlock()
		urls = append(urls, p.URL)
		pids = append(pids, p.Pid())
	}
	return urls, pids, func() {
		for _, p := range procs {
			p.Kill()
		}
		runningMu.Lock()
		running = nil
		runningMu.Unlock()
		if db != "" {
			// Dropped, not left to autovacuum: its VACUUM of 36,000 jobs and their events would
			// run, a minute on, in the next contender's phases or in bench/scaleout.sh's second
			// pgbench (docs/benchmarks.md, run U).
			admin(*pgURL, "DROP DATABASE "+db+" WITH (FORCE)")
		}
	}
}

// apiResult is the API phase's figures.
type apiResult struct {
	rate     float64
	p50, p99 time.Duration
	jobs     int
	detail   string // each phase's rate, percentiles, latency histogram and CPU per request
}

// cpuSample is the CPU seconds so far of the nodes, the S3 server, PostgreSQL and this
// process (the load generator: its own threads only, not the nodes it started).
type cpuSample struct{ nodes, s3, pg, gen float64 }

func sampleCPU(pids []int) cpuSample {
	c := cpuSample{gen: benchkit.ProcCPU(os.Getpid())}
	for _, p := range pids {
		c.nodes += benchkit.TreeCPU(p)
	}
	if *gwPid > 0 {
		c.s3 = benchkit.TreeCPU(*gwPid)
	}
	if *pgPid > 0 {
		c.pg = benchkit.TreeCPU(*pgPid)
	}
	return c
}

// walSample is PostgreSQL's WAL syncs (pg_stat_wal.wal_sync) and committed transactions
// (pg_stat_database, every database) so far, cluster-wide.
type walSample struct{ syncs, commits float64 }

// sampleWAL reads them after a pause of 1.5 s: a backend reports its statistics when it has
// been idle for a second, so figures read at once would miss the phase's last second.
func sampleWAL() walSample {
	var w walSample
	if *pgURL == "" {
		return w
	}
	time.Sleep(1500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, *pgURL)
	check(err)
	defer conn.Close(ctx)
	check(conn.QueryRow(ctx, `SELECT (SELECT wal_sync FROM pg_stat_wal)::float8, (SELECT sum(xact_commit) FROM pg_stat_database)::float8`).
		Scan(&w.syncs, &w.commits))
	return w
}

// histogramBounds are the upper bounds of the latency histogram's buckets.
var histogramBounds = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second}

// phaseDetail is one line about a phase: n requests in d, their latency percentiles and
// histogram, and the CPU milliseconds per request the nodes, the S3 server, PostgreSQL and the
// load generator spent.
func phaseDetail(name string, lat []time.Duration, d time.Duration, before, after cpuSample, walBefore, walAfter walSample) string {
	n := len(lat)
	if n == 0 {
		return ""
	}
	counts := make([]int, len(histogramBounds)+1)
	for _, l := range lat {
		i := 0
		for i < len(histogramBounds) && l > histogramBounds[i] {
			i++
		}
		counts[i]++
	}
	var hist []string
	for i, c := range counts {
		label := ">" + histogramBounds[len(histogramBounds)-1].String()
		if i < len(histogramBounds) {
			label = "<=" + histogramBounds[i].String()
		}
		hist = append(hist, fmt.Sprintf("%s %.1f%%", label, 100*float64(c)/float64(n)))
	}
	perReq := func(a, b float64) float64 { return 1000 * (b - a) / float64(n) }
	perN := func(a, b float64) float64 { return (b - a) / float64(n) }
	return fmt.Sprintf("  %s: %d in %.1f s = %.0f/s; p50 %.1f, p90 %.1f, p99 %.1f, max %.1f ms; CPU ms per request: node %.2f, S3 server %.2f, PostgreSQL %.2f, load generator %.2f; per request: PostgreSQL WAL syncs %.2f, commits %.2f\n    latency: %s\n",
		name, n, d.Seconds(), float64(n)/d.Seconds(),
		benchkit.Ms(benchkit.Percentile(lat, 50)), benchkit.Ms(benchkit.Percentile(lat, 90)),
		benchkit.Ms(benchkit.Percentile(lat, 99)), benchkit.Ms(slices.Max(lat)),
		perReq(before.nodes, after.nodes), perReq(before.s3, after.s3), perReq(before.pg, after.pg), perReq(before.gen, after.gen),
		perN(walBefore.syncs, walAfter.syncs), perN(walBefore.commits, walAfter.commits),
		strings.Join(hist, ", "))
}

// runAPI runs the create, upload and start phases over the nodes (whose pids are pids).
func runAPI(nodes []string, pids []int) apiResult {
	ctx := context.Background()
	hc := benchkit.NewHTTPClient(*clients, time.Minute)
	keyList, err := benchkit.CreateKeysIn(ctx, hc, nodes[0], adminToken, *keys, *keys/10+1, 1_000_000)
	check(err)
	base := encodePNG(16)
	input := func(int) []byte { return base }
	if *distinct {
		input = func(n int) []byte { return withNumber(base, n) }
	}
	pngBytes := input(0) // every job's input is this long
	type job struct {
		id, key, upload string
		node, n         int
	}
	var (
		mu        sync.Mutex
		jobs      []job
		latencies []time.Duration
		creates   []time.Duration // the create phase's part of latencies
		next      atomic.Int64
	)
	record := func(d time.Duration) { mu.Lock(); latencies = append(latencies, d); mu.Unlock() }
	// Create phase.
	cut(pids) // with bench/serveprof as -bin: .1 is the create phase
	wal0 := sampleWAL()
	cpu0 := sampleCPU(pids)
	deadline := time.Now().Add(*duration)
	began := time.Now()
	var wg sync.WaitGroup
	lean := *client == "lean"
	createBody, err := json.Marshal(map[string]any{"input_format": "png", "target_format": "gif", "input_bytes": len(pngBytes)})
	check(err)
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns := make([]*leanConn, len(nodes))
			defer closeLean(conns)
			for time.Now().Before(deadline) {
				n := int(next.Add(1) - 1)
				if n/perKeyJobs >= len(keyList) {
					return
				}
				k := n / perKeyJobs
				if *spread {
					k = n % len(keyList)
				}
				key, node := keyList[k], n%len(nodes)
				var res benchkit.Reservation
				t0 := time.Now()
				if lean {
					out := leanDo(conns, nodes, node, "POST", "/v1/jobs", key, createBody)
					check(json.Unmarshal(out, &res))
				} else {
					check(benchkit.DoJSON(ctx, hc, "POST", nodes[node]+"/v1/jobs", key,
						map[string]any{"input_format": "png", "target_format": "gif", "input_bytes": len(pngBytes)}, &res))
				}
				record(time.Since(t0))
				mu.Lock()
				jobs = append(jobs, job{res.Job.ID, key, res.UploadURL, node, n})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	createTime := time.Since(began)
	cpu1 := sampleCPU(pids)
	cut(pids) // .2: the uploads
	wal1 := sampleWAL()
	creates = slices.Clone(latencies)
	// Uploads, untimed.
	work := make(chan job)
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				check(benchkit.Upload(ctx, hc, j.upload, bytes.NewReader(input(j.n)), int64(len(pngBytes))))
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	// perJob sends one request of each job from the clients, on the node offset after the one
	// that created it, and passes each latency to rec.
	perJob := func(method string, path func(job) string, offset int, rec func(time.Duration)) {
		work := make(chan job)
		for c := 0; c < *clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conns := make([]*leanConn, len(nodes))
				defer closeLean(conns)
				for j := range work {
					node := (j.node + offset) % len(nodes)
					t0 := time.Now()
					if lean {
						leanDo(conns, nodes, node, method, path(j), j.key, nil)
					} else {
						check(benchkit.DoJSON(ctx, hc, method, nodes[node]+path(j), j.key, nil, nil))
					}
					rec(time.Since(t0))
				}
			}()
		}
		for _, j := range jobs {
			work <- j
		}
		close(work)
		wg.Wait()
	}
	// Start phase: each job on the next node after the one that created it.
	wal2 := sampleWAL()
	cut(pids) // .3: the start phase
	cpu2 := sampleCPU(pids)
	began = time.Now()
	perJob("POST", func(j job) string { return "/v1/jobs/" + j.id + "/start" }, 1, record)
	startTime := time.Since(began)
	cpu3 := sampleCPU(pids)
	cut(pids) // .4: the reads phase
	wal3 := sampleWAL()
	// Reads phase, outside the creates+starts rate: a GET of every job (a client's poll), on
	// the node after the one that started it; the started jobs may still be converting.
	var reads []time.Duration
	cpu4 := sampleCPU(pids)
	began = time.Now()
	perJob("GET", func(j job) string { return "/v1/jobs/" + j.id }, 2, func(d time.Duration) { mu.Lock(); reads = append(reads, d); mu.Unlock() })
	readTime := time.Since(began)
	cpu5 := sampleCPU(pids)
	cut(pids) // .5: after it
	wal4 := sampleWAL()
	return apiResult{
		detail: phaseDetail("creates", creates, createTime, cpu0, cpu1, wal0, wal1) +
			phaseDetail("starts", latencies[len(creates):], startTime, cpu2, cpu3, wal2, wal3) +
			phaseDetail("reads", reads, readTime, cpu4, cpu5, wal3, wal4),
		rate: float64(2*len(jobs)) / (createTime + startTime).Seconds(),
		p50:  benchkit.Percentile(latencies, 50),
		p99:  benchkit.Percentile(latencies, 99),
		jobs: len(jobs),
	}
}

// leanDo sends one request to nodes[node] on the client's connection to it (conns[node],
// dialled at its first use) and returns the body of its 200 answer; anything else ends the run.
func leanDo(conns []*leanConn, nodes []string, node int, method, path, key string, body []byte) []byte {
	if conns[node] == nil {
		c, err := newLeanConn(nodes[node])
		check(err)
		conns[node] = c
	}
	status, out, err := conns[node].do(method, path, key, body)
	check(err)
	if status != 200 {
		check(fmt.Errorf("%s %s: %d %s", method, path, status, out))
	}
	return out
}

func closeLean(conns []*leanConn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

// cut starts a new profile file in each node when the nodes are bench/serveprof
// ($CONVSVC_CPUPROFILE set): its files .1, .3 and .4 are then the create, start and read phases (the
// allocations of phase N are the difference of $CONVSVC_MEMPROFILE.N and .N+1).
func cut(pids []int) {
	if f := os.Getenv("SCALEOUT_PHASES"); f != "" {
		// The phase edges' wall clock, for `perf record -k realtime` and `perf report --time`.
		out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		check(err)
		_, err = fmt.Fprintf(out, "%.6f\n", float64(time.Now().UnixMicro())/1e6)
		check(err)
		check(out.Close())
	}
	if os.Getenv("CONVSVC_CPUPROFILE") == "" {
		return
	}
	for _, p := range pids {
		check(benchkit.SendCut(p))
	}
}

// runConversions uploads -conversions inputs, starts them all over the nodes and returns
// conversions per second from the first start to the last success.
func runConversions(nodes []string) float64 {
	ctx := context.Background()
	hc := benchkit.NewHTTPClient(*clients, 5*time.Minute)
	keyList, err := benchkit.CreateKeysIn(ctx, hc, nodes[0], adminToken, *conversions/perKeyJobs+1, 1, 1_000_000)
	check(err)
	input := encodePNG(*size)
	type job struct{ id, key string }
	var jobs []job
	for i := 0; i < *conversions; i++ {
		key := keyList[i/perKeyJobs]
		var res benchkit.Reservation
		check(benchkit.DoJSON(ctx, hc, "POST", nodes[i%len(nodes)]+"/v1/jobs", key,
			map[string]any{"input_format": "png", "target_format": "gif", "input_bytes": len(input)}, &res))
		check(benchkit.Upload(ctx, hc, res.UploadURL, bytes.NewReader(input), int64(len(input))))
		jobs = append(jobs, job{res.Job.ID, key})
	}
	began := time.Now()
	for i, j := range jobs {
		check(benchkit.DoJSON(ctx, hc, "POST", nodes[i%len(nodes)]+"/v1/jobs/"+j.id+"/start", j.key, nil, nil))
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var got benchkit.Job
				check(benchkit.DoJSON(ctx, hc, "GET", nodes[i%len(nodes)]+"/v1/jobs/"+j.id+"?wait=20", j.key, nil, &got))
				if got.Finished() {
					if got.Status != "succeeded" {
						check(fmt.Errorf("job %s %s", j.id, got.Status))
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(len(jobs)) / time.Since(began).Seconds()
}

// encodePNG is a w x w PNG of noise (it does not compress, so the conversion does real work).
func encodePNG(w int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, w))
	rng := mrand.New(mrand.NewPCG(1, 2))
	for y := 0; y < w; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32()), 255})
		}
	}
	var buf bytes.Buffer
	check(png.Encode(&buf, img))
	return buf.Bytes()
}

// withNumber returns the PNG p with a tEXt chunk holding n in twelve digits before its IEND
// chunk (p's last 12 bytes): a different input of the same length for each n.
func withNumber(p []byte, n int) []byte {
	data := fmt.Appendf([]byte("n\x00"), "%012d", n)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(append(chunk, "tEXt"...), data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	end := len(p) - 12
	return append(append(slices.Clone(p[:end]), chunk...), p[end:]...)
}

// admin runs one statement on the maintenance database.
func admin(u, stmt string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	check(err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	check(err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// running are the serve processes up now; check kills them before it exits.
var (
	runningMu sync.Mutex
	running   []*testproc.Proc
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		runningMu.Lock()
		for _, p := range running {
			p.Kill()
		}
		runningMu.Unlock()
		os.Exit(1)
	}
}
