// Command apitrace traces conversions through the API end to end and prints where each
// millisecond of one went: the client's calls (create, upload, start, the long-polls,
// download) as `convsvc convert --server` makes them, and inside the server the blob store's
// receive, fsync and publish of the upload, the seal, the claim, opening the input, the
// worker process's conversion, the output's copy, hash, fsync and publish, the finish and
// the download's send. Server and client run in this process (conversions in worker
// processes, which are this program again, as `serve` runs them by default), under one
// execution trace, so every phase is on one clock; the phases are runtime/trace regions
// that blobstore, worker and service mark, which cost nothing when no trace runs.
//
//	go build -o /tmp/apitrace ./bench/apitrace
//	/tmp/apitrace -runs 7 -to png -width 800 big.jpg
//	/tmp/apitrace -runs 7 -to jpeg -quality 85 big.tif
//
// The conversions run with the cache off (-cache turns it on): each repeat of one input would
// otherwise be answered by the conversion cache at start, from the upload's hash.
//
// The client's process start (about 14 ms for `convsvc version`) is not in the timeline:
// measure it with hyperfine beside the rows of docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/worker"
)

func main() {
	if worker.IsChild() {
		os.Exit(worker.ChildMain())
	}
	runs := flag.Int("runs", 7, "conversions traced (after one untraced warm-up)")
	to := flag.String("to", "", "target format")
	width := flag.Int("width", 0, "width option")
	quality := flag.Int("quality", 0, "quality option")
	isolation := flag.String("isolation", service.IsolationProcess, "process or none")
	data := flag.String("data", "", "data directory (default a new one under the temp dir, removed at exit)")
	verbose := flag.Bool("v", false, "also print every region of the fastest conversion")
	cache := flag.Bool("cache", false, "let the conversion cache answer: off by default, as bench/apirows's --no-cache, since every repeat of one input would be answered by the cache at start (the upload's hash) and convert nothing")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (client and server; the conversions run in worker processes) over the traced conversions")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apitrace:", err)
			os.Exit(1)
		}
		defer f.Close()
		profile = f
	}
	if flag.NArg() != 1 || *to == "" {
		fmt.Fprintln(os.Stderr, "usage: apitrace [-runs N] -to FORMAT [-width N] [-quality N] INPUT")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *to, *width, *quality, *runs, *isolation, *data, *verbose, *cache); err != nil {
		fmt.Fprintln(os.Stderr, "apitrace:", err)
		os.Exit(1)
	}
}

// profile, when set, receives the CPU profile of the traced conversions.
var profile *os.File

func run(in, to string, width, quality, runs int, isolation, data string, verbose, cache bool) error {
	if data == "" {
		d, err := os.MkdirTemp("", "apitrace-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		data = d
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var key string
	m, err := service.Run(service.Config{
		DataDir: data, Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0", Workers: 2,
		Isolation: isolation, WorkerCommand: []string{exe},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(_, k string) { key = k },
	})
	if err != nil {
		return err
	}
	defer m.Shutdown(context.Background())
	from := m.Catalog().FormatOfName(in)
	if from == "" {
		return fmt.Errorf("%s: no format has its extension", in)
	}
	c := &client.Client{BaseURL: m.URL(), Key: key}
	req := client.CreateJobRequest{InputFormat: from, TargetFormat: to}
	if !cache {
		req.Cache = new(bool) // as convsvc convert --no-cache
	}
	if width > 0 || quality > 0 {
		req.Options = &client.Options{}
		if width > 0 {
			req.Options.Width = width
		}
		if quality > 0 {
			req.Options.Quality = quality
		}
	}
	out := filepath.Join(data, "out")
	if err := convertOnce(c, in, req, out); err != nil { // warm-up
		return err
	}
	if profile != nil {
		if err := pprof.StartCPUProfile(profile); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var timelines [][]phase
	for range runs {
		var buf bytes.Buffer
		if err := trace.Start(&buf); err != nil {
			return err
		}
		err := convertOnce(c, in, req, out)
		trace.Stop()
		if err != nil {
			return err
		}
		tl, err := timeline(&buf)
		if err != nil {
			return err
		}
		timelines = append(timelines, tl)
	}
	report(os.Stdout, in, to, timelines)
	if verbose {
		best := timelines[0]
		for _, tl := range timelines {
			if total(tl) < total(best) {
				best = tl
			}
		}
		fmt.Printf("\nthe fastest conversion (%.1f ms), every region:\n\n", ms(total(best)))
		for _, p := range best {
			fmt.Printf("%8.1f %8.1f  %s\n", ms(p.start), ms(p.end-p.start), p.name)
		}
	}
	return nil
}

// convertOnce makes the calls `convsvc convert --server` makes (cli/convert.go convertOne),
// each in a region of its own.
func convertOnce(c *client.Client, in string, req client.CreateJobRequest, out string) error {
	ctx := context.Background()
	defer trace.StartRegion(ctx, "client.total").End()
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	req.InputBytes = fi.Size()
	// The checks `convsvc convert` makes before it reserves a job (cli/convert.go check).
	r := trace.StartRegion(ctx, "client.check")
	_, err = c.Formats(ctx)
	if err == nil {
		_, err = c.Format(ctx, req.TargetFormat)
	}
	if err == nil {
		_, err = c.Format(ctx, req.InputFormat)
	}
	r.End()
	if err != nil {
		return err
	}
	r = trace.StartRegion(ctx, "client.create")
	res, err := c.CreateJob(ctx, req, fmt.Sprintf("apitrace-%d", time.Now().UnixNano())) // the CLI sends an Idempotency-Key
	r.End()
	if err != nil {
		return err
	}
	progress := func(done, total int64) {} // the CLI always shows progress
	r = trace.StartRegion(ctx, "client.upload")
	err = c.UploadWithProgress(ctx, res.UploadURL, f, fi.Size(), progress)
	r.End()
	if err != nil {
		return err
	}
	r = trace.StartRegion(ctx, "client.start")
	_, err = c.StartJob(ctx, res.Job.ID)
	r.End()
	if err != nil {
		return err
	}
	r = trace.StartRegion(ctx, "client.wait")
	job, err := c.WaitJob(ctx, res.Job.ID, func(client.Job) {})
	r.End()
	if err != nil {
		return err
	}
	if job.Output == nil {
		return fmt.Errorf("job %s %s", job.ID, job.Error())
	}
	r = trace.StartRegion(ctx, "client.download")
	err = c.DownloadWithProgress(ctx, *job.Output, out, progress)
	r.End()
	return err
}

// phase is one region of the trace: its name, and its start and end from the start of
// client.total.
type phase struct {
	name       string
	start, end time.Duration
}

// timeline reads the regions of one traced conversion.
func timeline(r io.Reader) ([]phase, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	type open struct {
		name string
		at   xtrace.Time
	}
	stacks := map[xtrace.GoID][]open{}
	var raw []struct {
		name   string
		at, to xtrace.Time
	}
	var origin xtrace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case xtrace.EventRegionBegin:
			g := ev.Goroutine()
			stacks[g] = append(stacks[g], open{ev.Region().Type, ev.Time()})
		case xtrace.EventRegionEnd:
			g := ev.Goroutine()
			st := stacks[g]
			if len(st) == 0 {
				continue // begun before the trace started
			}
			o := st[len(st)-1]
			stacks[g] = st[:len(st)-1]
			raw = append(raw, struct {
				name   string
				at, to xtrace.Time
			}{o.name, o.at, ev.Time()})
			if o.name == "client.total" {
				origin = o.at
			}
		}
	}
	var out []phase
	for _, p := range raw {
		out = append(out, phase{p.name, time.Duration(p.at - origin), time.Duration(p.to - origin)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

// report prints each phase's median start and duration over the runs (a phase that occurs
// several times in a run, such as the long-polls' sends, is summed), in order of start.
func report(w io.Writer, in, to string, tls [][]phase) {
	type agg struct {
		starts, durs []time.Duration
		count        int
	}
	by := map[string]*agg{}
	for _, tl := range tls {
		seen := map[string]time.Duration{}
		first := map[string]time.Duration{}
		for _, p := range tl {
			if _, ok := first[p.name]; !ok {
				first[p.name] = p.start
			}
			seen[p.name] += p.end - p.start
		}
		for name, d := range seen {
			a := by[name]
			if a == nil {
				a = &agg{}
				by[name] = a
			}
			a.starts = append(a.starts, first[name])
			a.durs = append(a.durs, d)
			a.count++
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return median(by[names[i]].starts) < median(by[names[j]].starts) })
	fmt.Fprintf(w, "%s -> %s, %d traced conversions, medians (ms)\n\n", filepath.Base(in), to, len(tls))
	fmt.Fprintln(w, "| phase | starts at | takes | min-max |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, n := range names {
		a := by[n]
		lo, hi := slices.Min(a.durs), slices.Max(a.durs)
		name := n
		if !strings.HasPrefix(n, "client.") {
			name = "  " + n
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f-%.1f |\n", name, ms(median(a.starts)), ms(median(a.durs)), ms(lo), ms(hi))
	}
	// The API's own time: everything of client.total that is not the worker process's
	// conversion, before it (checks, create, upload, start, claim) and after it (commit,
	// finish, the long-poll's answer, download).
	var own, before, after []time.Duration
	for _, tl := range tls {
		var tot, conv phase
		for _, p := range tl {
			switch p.name {
			case "client.total":
				tot = p
			case "worker.child":
				conv = p
			}
		}
		if conv.end == 0 {
			continue
		}
		before = append(before, conv.start-tot.start)
		after = append(after, tot.end-conv.end)
		own = append(own, (tot.end-tot.start)-(conv.end-conv.start))
	}
	if len(own) > 0 {
		fmt.Fprintf(w, "\nthe API's own time (client.total less worker.child): median %.1f ms (min %.1f, max %.1f): %.1f ms before the conversion, %.1f ms after (medians)\n",
			ms(median(own)), ms(slices.Min(own)), ms(slices.Max(own)), ms(median(before)), ms(median(after)))
	}
}

// total is the client's time for the conversion.
func total(tl []phase) time.Duration {
	for _, p := range tl {
		if p.name == "client.total" {
			return p.end - p.start
		}
	}
	return 0
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
