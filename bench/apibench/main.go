// Command apibench measures how many job creates and starts per second convsvc's API takes
// from 64 concurrent clients spread over many keys, with p50/p99 latency, and compares it in
// the same run with two ceilings:
//
//   - the HTTP ceiling: a minimal net/http JSON handler in its own process that decodes the
//     same requests and answers a fixed job-sized JSON body, driven by the same client code at
//     the same concurrency;
//   - the storage ceiling: bbolt alone, 64 goroutines each writing 300-byte records, with
//     db.Batch at MaxBatchSize 64 / MaxBatchDelay 2 ms (the store's settings until it got its
//     own timer-less group commit), bbolt's defaults (1000, 10 ms), and one db.Update per record.
//
// Each round starts a fresh convsvc, makes -keys keys (one account each, or spread evenly over
// -accounts accounts), then runs a create phase (POST /v1/jobs for -duration), uploads a
// 16x16 PNG to every job created (timed apart), and a start phase (POST
// /v1/jobs/{id}/start for every job, until done or -duration). The
// rate limit is 120 creates+starts+cancels per key per rolling minute, so each key is given at
// most 60 jobs (120 writes); -keys must cover the run. Rounds rotate the order of the three.
// -versus adds a fourth contender, another server binary, so that two builds are compared in
// the same rounds rather than in runs minutes apart.
//
// -accounts below -keys tests what the account records cost: every create rewrites its
// account's record, so with one account per key a group commit rewrites a B+tree leaf per
// account it touches (docs/benchmarks.md, table 5i: the rate is the same with 6 accounts).
//
//	go run ./bench/apibench [-clients 64] [-keys 600] [-accounts 600] [-duration 10s] [-rounds 3] [-start-order client|created] [-bin BIN] [-versus BIN]
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/convsvc/convsvc/bench/internal/benchkit"
	"github.com/convsvc/convsvc/internal/promtext"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// perKeyJobs is how many jobs one key creates and starts: 120 writes, the limit per minute.
const perKeyJobs = 60

// prebuilt is the -bin flag: a server binary to use instead of building one.
var prebuilt string

// versusBin is the -versus flag: a second server binary measured as one more contender.
var versusBin string

// startOrder is the -start-order flag: the order the start phase takes the jobs in.
var startOrder string

// naccounts is the -accounts flag: how many accounts convsvc's keys belong to.
var naccounts int

func main() {
	clients := flag.Int("clients", 64, "concurrent clients")
	nkeys := flag.Int("keys", 600, "keys (each key creates and starts at most 60 jobs)")
	flag.IntVar(&naccounts, "accounts", 0, "accounts the keys are spread over evenly (default: one per key)")
	duration := flag.Duration("duration", 10*time.Second, "length of the create phase (the start phase ends when every job started or after as long)")
	rounds := flag.Int("rounds", 3, "rounds; each rotates the order of convsvc, bare handler and bbolt")
	serveBare := flag.String("serve-bare", "", "internal: serve the bare handler and write its address to this file")
	flag.StringVar(&startOrder, "start-order", "client", "order of the start phase: client (each create goroutine's jobs together, so a group commit of starts touches jobs from all over the create phase) or created (the order the jobs were created in, as clients that create, upload and start at once would)")
	binFlag := flag.String("bin", "", "server binary to run instead of building convsvc (e.g. bench/serveprof for a server-side CPU profile)")
	flag.StringVar(&versusBin, "versus", "", "a second server binary (e.g. an older build) run as one more contender in every round, to compare two builds in the same sitting")
	flag.Parse()
	prebuilt = *binFlag
	if *serveBare != "" {
		if err := bareServe(*serveBare); err != nil {
			fmt.Fprintln(os.Stderr, "apibench:", err)
			os.Exit(1)
		}
		return
	}
	if *nkeys < 64 {
		fmt.Fprintln(os.Stderr, "apibench: use at least 64 keys")
		os.Exit(2)
	}
	if naccounts <= 0 || naccounts > *nkeys {
		naccounts = *nkeys
	}
	if err := run(*clients, *nkeys, *duration, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

// phase is the outcome of one timed phase.
type phase struct {
	ok      int
	elapsed time.Duration
	lat     []time.Duration
	errs    map[string]int
	// serverCPU and clientCPU are the CPU seconds the server process and this program
	// used during the phase: on a shared machine they say who the cores went to.
	serverCPU, clientCPU float64
	// writes and commits are convsvc's store writes and the bbolt transactions that carried
	// them during the phase (from /metrics): writes/commits is the group commit's size.
	// pages is how many pages bbolt wrote to the file for them (data pages and the meta
	// page, each one pwrite); conversions is how many conversions the workers finished meanwhile.
	writes, commits, pages, conversions float64
}

func (p phase) rate() float64 { return float64(p.ok) / p.elapsed.Seconds() }

// cpuNote says how much CPU the server and the client spent per operation of the phase.
func (p phase) cpuNote() string {
	if p.ok == 0 {
		return "no operations"
	}
	note := fmt.Sprintf("server %.0f µs CPU/op, client %.0f µs/op, %.0f%% of %d cores busy",
		1e6*p.serverCPU/float64(p.ok), 1e6*p.clientCPU/float64(p.ok),
		100*(p.serverCPU+p.clientCPU)/p.elapsed.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
	if p.commits > 0 {
		note += fmt.Sprintf(", %.0f commits/s of %.1f writes and %.1f pages each, %.0f conversions finished",
			p.commits/p.elapsed.Seconds(), p.writes/p.commits, p.pages/p.commits, p.conversions)
	}
	return note
}

// measured runs a phase and records the CPU the server (pid) and this process used meanwhile,
// and, given convsvc's /metrics URL, its store writes and commits.
// With $CONVSVC_CPUPROFILE set (the server is bench/serveprof), the server's profile is cut
// before and after the phase with SIGUSR1, so each phase has a profile file of its own.
func measured(pid int, metricsURL string, run func() phase) phase {
	cut := func() {
		if os.Getenv("CONVSVC_CPUPROFILE") != "" {
			benchkit.SendCut(pid)
		}
	}
	cut()
	s0, c0 := benchkit.ProcCPU(pid), benchkit.ProcCPU(os.Getpid())
	before := scrapeCounters(metricsURL)
	p := run()
	cut()
	p.serverCPU, p.clientCPU = benchkit.ProcCPU(pid)-s0, benchkit.ProcCPU(os.Getpid())-c0
	after := scrapeCounters(metricsURL)
	p.writes, p.commits, p.pages = after.writes-before.writes, after.commits-before.commits, after.pages-before.pages
	p.conversions = after.conversions - before.conversions
	return p
}

// counters are the figures of convsvc's /metrics the phases report.
type counters struct{ writes, commits, pages, conversions float64 }

// scrapeCounters reads convsvc's store write and write transaction counters, bbolt's page
// writes and its finished conversions (summed over their labels) from its /metrics: zeros for
// a server without them, or an empty URL.
func scrapeCounters(metricsURL string) (c counters) {
	if metricsURL == "" {
		return c
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		return c
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m, err := promtext.Parse(string(b))
	if err != nil {
		return c
	}
	return counters{
		writes:      m.Value("convsvc_store_writes_total"),
		commits:     m.Value("convsvc_store_write_transactions_total"),
		pages:       m.Value("convsvc_bolt_writes_total"),
		conversions: m.Value("convsvc_conversions_total"),
	}
}

// result is one contender's figures in one round.
type result struct {
	create, start phase
	upload        phase // convsvc only, not part of the rate
	note          string
}

func (r result) combined() float64 {
	return float64(r.create.ok+r.start.ok) / (r.create.elapsed + r.start.elapsed).Seconds()
}

func run(clients, nkeys int, duration time.Duration, rounds int) error {
	work, err := os.MkdirTemp("", "convsvc-apibench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin, err := benchkit.Server(work, prebuilt)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	benchkit.Header(os.Stdout, "API: creates and starts per second")
	fmt.Printf("%d clients, %d keys in %d accounts (rate limit: 120 creates+starts+cancels per key per rolling minute, so each key creates and starts at most %d jobs), create phase %v\n\n",
		clients, nkeys, naccounts, perKeyJobs, duration)
	order := []string{"convsvc", "bare", "bbolt"}
	if versusBin != "" {
		order = append(order, "versus")
	}
	all := map[string][]result{}
	bolts := map[string][]float64{}
	var loads []string
	for round := range rounds {
		loads = append(loads, strings.Fields(benchkit.LoadAvg())[0])
		for _, who := range order {
			benchkit.Settle()
			switch who {
			case "convsvc", "versus":
				server := bin
				if who == "versus" {
					server = versusBin
				}
				r, err := convsvcRound(server, work, clients, nkeys, duration)
				if err != nil {
					return fmt.Errorf("%s: %w", who, err)
				}
				all[who] = append(all[who], r)
				fmt.Fprintf(os.Stderr, "round %d %s: %.0f creates+starts/s (load %s)\n", round+1, who, r.combined(), benchkit.LoadAvg())
			case "bare":
				r, err := bareRound(self, clients, duration)
				if err != nil {
					return fmt.Errorf("bare: %w", err)
				}
				all[who] = append(all[who], r)
				fmt.Fprintf(os.Stderr, "round %d bare: %.0f creates+starts/s (load %s)\n", round+1, r.combined(), benchkit.LoadAvg())
			case "bbolt":
				for _, v := range boltVariants {
					rate, err := boltRound(work, clients, min(duration, 5*time.Second), v)
					if err != nil {
						return fmt.Errorf("bbolt: %w", err)
					}
					bolts[v.name] = append(bolts[v.name], rate)
					fmt.Fprintf(os.Stderr, "round %d bbolt %s: %.0f records/s (load %s)\n", round+1, v.name, rate, benchkit.LoadAvg())
				}
			}
		}
		order = append(order[1:], order[0])
	}

	med := func(rs []result, f func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return benchkit.Median(xs)
	}
	ms := func(p phase, q float64) float64 { return benchkit.Ms(benchkit.Percentile(p.lat, q)) }
	cv, bare := all["convsvc"], all["bare"]
	bestBolt := benchkit.Median(bolts[boltVariants[0].name])
	fmt.Printf("load average (1 min) at each round: %s\n\n", strings.Join(loads, ", "))
	fmt.Println("| contender | creates+starts/s | creates/s | starts/s | create p50 ms | create p99 ms | start p50 ms | start p99 ms | every round, creates+starts/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		name string
		rs   []result
	}{{"convsvc", cv}, {"bare net/http handler", bare}, {"versus " + versusBin, all["versus"]}} {
		if len(c.rs) == 0 {
			continue
		}
		var each []string
		for _, r := range c.rs {
			each = append(each, fmt.Sprintf("%.0f", r.combined()))
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %s |\n", c.name,
			med(c.rs, result.combined), med(c.rs, func(r result) float64 { return r.create.rate() }),
			med(c.rs, func(r result) float64 { return r.start.rate() }),
			med(c.rs, func(r result) float64 { return ms(r.create, 50) }), med(c.rs, func(r result) float64 { return ms(r.create, 99) }),
			med(c.rs, func(r result) float64 { return ms(r.start, 50) }), med(c.rs, func(r result) float64 { return ms(r.start, 99) }),
			strings.Join(each, ", "))
	}
	for _, v := range boltVariants {
		fmt.Printf("| bbolt, %s | %.0f records/s | | | | | | | %s |\n", v.name, benchkit.Median(bolts[v.name]), floats(bolts[v.name]))
	}
	var ratios, boltRatios []string
	for i := range min(len(cv), len(bare)) {
		ratios = append(ratios, fmt.Sprintf("%.2f", cv[i].combined()/bare[i].combined()))
	}
	for i, r := range cv {
		if i < len(bolts[boltVariants[0].name]) {
			boltRatios = append(boltRatios, fmt.Sprintf("%.2f", r.combined()/bolts[boltVariants[0].name][i]))
		}
	}
	fmt.Printf("\nconvsvc / bare handler (creates+starts/s), per round: %s; of medians: %.2f\n", strings.Join(ratios, ", "),
		med(cv, result.combined)/med(bare, result.combined))
	fmt.Printf("convsvc creates+starts/s / bbolt records/s (store settings), per round: %s; of medians: %.2f\n",
		strings.Join(boltRatios, ", "), med(cv, result.combined)/bestBolt)
	if vs := all["versus"]; len(vs) > 0 {
		var each []string
		for i := range min(len(cv), len(vs)) {
			each = append(each, fmt.Sprintf("%.2f", cv[i].combined()/vs[i].combined()))
		}
		fmt.Printf("convsvc / versus (creates+starts/s), per round: %s; of medians: %.2f\n", strings.Join(each, ", "),
			med(cv, result.combined)/med(vs, result.combined))
	}
	fmt.Println()
	for i, r := range cv {
		fmt.Printf("- convsvc round %d: %s; uploads between the phases (not in the rate): %d at %.0f/s, p50 %.2f ms, p99 %.2f ms; errors: %s\n",
			i+1, r.note, r.upload.ok, r.upload.rate(), ms(r.upload, 50), ms(r.upload, 99), errString(r.create.errs, r.start.errs, r.upload.errs))
	}
	for i, r := range all["versus"] {
		fmt.Printf("- versus round %d: %s; errors: %s\n", i+1, r.note, errString(r.create.errs, r.start.errs, r.upload.errs))
	}
	for i, r := range bare {
		fmt.Printf("- bare round %d: %s; errors: %s\n", i+1, r.note, errString(r.create.errs, r.start.errs))
	}
	fmt.Printf("\nload average at end: %s\n", benchkit.LoadAvg())
	return nil
}

func floats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}

func errString(ms ...map[string]int) string {
	var parts []string
	for _, m := range ms {
		for k, v := range m {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// job is a created job and the key that owns it.
type job struct{ id, key, uploadURL string }

// createPhase runs clients that each create jobs for duration, drawing keys so that none
// gets more than perKeyJobs; it returns the jobs created.
func createPhase(base string, hc *http.Client, clients int, keys []string, duration time.Duration, inputBytes int) (phase, []job) {
	var next atomic.Int64
	var mu sync.Mutex
	p := phase{errs: map[string]int{}}
	var jobs []job
	body := map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": inputBytes}
	ctx := context.Background()
	stop := time.Now().Add(duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			var lat []time.Duration
			var mine []job
			errs := map[string]int{}
			for time.Now().Before(stop) {
				i := int(next.Add(1)) - 1
				if i >= len(keys)*perKeyJobs {
					break
				}
				key := keys[i%len(keys)]
				var res benchkit.Reservation
				t := time.Now()
				err := benchkit.DoJSON(ctx, hc, "POST", base+"/v1/jobs", key, body, &res)
				lat = append(lat, time.Since(t))
				if err != nil {
					errs[code(err)]++
					continue
				}
				mine = append(mine, job{res.Job.ID, key, res.UploadURL})
			}
			mu.Lock()
			p.lat = append(p.lat, lat...)
			jobs = append(jobs, mine...)
			for k, v := range errs {
				p.errs["create "+k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	p.elapsed = time.Since(t0)
	p.ok = len(jobs)
	if startOrder == "created" {
		// Job ids begin with their creation time, so this is the order they were created in.
		slices.SortFunc(jobs, func(a, b job) int { return strings.Compare(a.id, b.id) })
	}
	return p, jobs
}

// eachJob runs do for every job with clients workers until done or until limit passes.
func eachJob(jobs []job, clients int, limit time.Duration, name string, do func(job) error) phase {
	var next atomic.Int64
	var mu sync.Mutex
	p := phase{errs: map[string]int{}}
	stop := time.Now().Add(limit)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			var lat []time.Duration
			ok := 0
			errs := map[string]int{}
			for time.Now().Before(stop) {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					break
				}
				t := time.Now()
				err := do(jobs[i])
				lat = append(lat, time.Since(t))
				if err != nil {
					errs[code(err)]++
					continue
				}
				ok++
			}
			mu.Lock()
			p.lat = append(p.lat, lat...)
			p.ok += ok
			for k, v := range errs {
				p.errs[name+" "+k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	p.elapsed = time.Since(t0)
	return p
}

func code(err error) string {
	var se *benchkit.StatusError
	if errors.As(err, &se) {
		return se.Code()
	}
	return "transport"
}

func tinyPNG() []byte {
	m := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	for i := range m.Pix {
		m.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	png.Encode(&b, m)
	return b.Bytes()
}

func convsvcRound(bin, work string, clients, nkeys int, duration time.Duration) (result, error) {
	data := filepath.Join(work, "data")
	os.RemoveAll(data)
	defer os.RemoveAll(data)
	p, err := testproc.Start(bin, data, "--log-level", "warn")
	if err != nil {
		return result{}, err
	}
	// SIGTERM first: a graceful stop, and serveprof writes its profile then.
	defer func() {
		if !p.Signal(syscall.SIGTERM, time.Minute) {
			p.Kill()
		}
	}()
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return result{}, err
	}
	ctx := context.Background()
	hc := benchkit.NewHTTPClient(clients, time.Minute)
	keys, err := benchkit.CreateKeysIn(ctx, hc, p.URL, strings.TrimSpace(string(token)), nkeys, naccounts, 1<<40)
	if err != nil {
		return result{}, err
	}
	img := tinyPNG()
	rss := benchkit.SampleRSS(p.Pid(), 100*time.Millisecond)
	var r result
	var jobs []job
	r.create = measured(p.Pid(), p.URL+"/metrics", func() phase {
		var ph phase
		ph, jobs = createPhase(p.URL, hc, clients, keys, duration, len(img))
		return ph
	})
	r.upload = eachJob(jobs, clients, 10*duration, "upload", func(j job) error {
		return benchkit.Upload(ctx, hc, j.uploadURL, bytes.NewReader(img), int64(len(img)))
	})
	r.start = measured(p.Pid(), p.URL+"/metrics", func() phase {
		return eachJob(jobs, clients, duration, "start", func(j job) error {
			return benchkit.DoJSON(ctx, hc, "POST", p.URL+"/v1/jobs/"+j.id+"/start", j.key, nil, nil)
		})
	})
	first, peak, _ := rss.Stop()
	r.note = fmt.Sprintf("%d jobs created in %.1f s (%s), %d started in %.1f s (%s; the workers convert them meanwhile), server RSS %d -> peak %d MiB",
		r.create.ok, r.create.elapsed.Seconds(), r.create.cpuNote(), r.start.ok, r.start.elapsed.Seconds(), r.start.cpuNote(), first>>10, peak>>10)
	return r, nil
}

// bareRound starts the bare handler in its own process and runs the same phases against it.
func bareRound(self string, clients int, duration time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "apibench-bare-*")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(self, "-serve-bare", addrFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var addr []byte
	for range 200 {
		if addr, err = os.ReadFile(addrFile); err == nil && len(addr) > 0 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if len(addr) == 0 {
		return result{}, errors.New("bare handler did not start")
	}
	base := "http://" + string(addr)
	hc := benchkit.NewHTTPClient(clients, time.Minute)
	keys := make([]string, 1000) // any bearer token: the bare handler only checks one is there
	for i := range keys {
		keys[i] = fmt.Sprintf("cs_live_bench%06d", i)
	}
	var r result
	var jobs []job
	pid := cmd.Process.Pid
	r.create = measured(pid, "", func() phase {
		var ph phase
		ph, jobs = createPhase(base, hc, clients, keys, duration, 100)
		return ph
	})
	r.start = measured(pid, "", func() phase {
		return eachJob(jobs, clients, duration, "start", func(j job) error {
			return benchkit.DoJSON(context.Background(), hc, "POST", base+"/v1/jobs/"+j.id+"/start", j.key, nil, nil)
		})
	})
	r.note = fmt.Sprintf("creates: %s; starts: %s", r.create.cpuNote(), r.start.cpuNote())
	return r, nil
}

// bareServe is the HTTP ceiling: it checks for a bearer token, decodes the JSON body of a
// create, and answers what convsvc answers, with no storage: the same status, the same
// headers (rate limit, request id, nosniff) and a job of the same fields and length, so
// that both servers write, and the clients parse, the same amount.
func bareServe(addrFile string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var seq atomic.Int64
	stamp := "2026-11-22T19:00:00.123456789Z" // convsvc's timestamps carry nanoseconds
	jobJSON := func(id, status string, started any) map[string]any {
		return map[string]any{
			"id": id, "status": status, "input_format": "png", "target_format": "jpeg", "input_bytes": 100,
			"options": nil, "attempt": 0, "error_code": nil, "error_message": nil, "expires_at": stamp,
			"created_at": stamp, "started_at": started, "finished_at": nil, "output": nil,
		}
	}
	headers := func(w http.ResponseWriter) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("RateLimit-Limit", "120")
		h.Set("RateLimit-Remaining", "119")
		h.Set("RateLimit-Reset", "60")
		h.Set("Request-Id", fmt.Sprintf("req_%024x", seq.Add(1)))
		h.Set("X-Content-Type-Options", "nosniff")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			InputFormat  string `json:"input_format"`
			TargetFormat string `json:"target_format"`
			InputBytes   int64  `json:"input_bytes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"code":"invalid_request"}}`, http.StatusBadRequest)
			return
		}
		id := fmt.Sprintf("job_%024x", seq.Add(1))
		headers(w)
		json.NewEncoder(w).Encode(map[string]any{
			"job":               jobJSON(id, "created", nil),
			"upload_url":        "http://127.0.0.1:1/uploads/" + id + "?expires=1795000000&size=100&sig=" + strings.Repeat("ab", 32),
			"upload_expires_in": 900,
		})
	})
	mux.HandleFunc("POST /v1/jobs/{id}/start", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		headers(w)
		json.NewEncoder(w).Encode(jobJSON(r.PathValue("id"), "queued", stamp))
	})
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	return http.Serve(ln, mux)
}

type boltVariant struct {
	name     string
	batch    bool
	maxBatch int
	delay    time.Duration
}

var boltVariants = []boltVariant{
	{"db.Batch, MaxBatchSize 64, MaxBatchDelay 2ms", true, 64, 2 * time.Millisecond},
	{"db.Batch, bbolt defaults (1000, 10ms)", true, 1000, 10 * time.Millisecond},
	{"db.Update per record", false, 0, 0},
}

// boltRound writes 300-byte records from clients goroutines for d into a fresh database on the
// same filesystem and returns records per second.
func boltRound(work string, clients int, d time.Duration, v boltVariant) (float64, error) {
	path := filepath.Join(work, "bolt.db")
	os.Remove(path)
	defer os.Remove(path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if v.batch {
		db.MaxBatchSize, db.MaxBatchDelay = v.maxBatch, v.delay
	}
	bucket := []byte("jobs")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		return 0, err
	}
	var seq, done atomic.Uint64
	var firstErr atomic.Value
	stop := time.Now().Add(d)
	t0 := time.Now()
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			val := make([]byte, 300)
			for time.Now().Before(stop) {
				for i := range val {
					val[i] = byte('a' + rng.IntN(26))
				}
				k := binary.BigEndian.AppendUint64(nil, seq.Add(1))
				put := func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(k, val) }
				var err error
				if v.batch {
					err = db.Batch(put)
				} else {
					err = db.Update(put)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(done.Load()) / time.Since(t0).Seconds(), nil
}
