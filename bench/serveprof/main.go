// Command serveprof is `convsvc serve` with a CPU profile: it runs the same service.Run the
// binary runs with serve's default GC heap floor, takes the flags testproc passes (serve
// --data --listen --blob-listen [--log-level] [--workers] [--database] [--admin-token]) and
// $CONVSVC_CACHE_MAX_BYTES (0: the cache off, as serve takes it), prints the same "serving" line,
// and profiles the whole process until SIGTERM, when it writes the profile to
// $CONVSVC_CPUPROFILE and drains. SIGUSR1 cuts the profile: what was recorded so far is
// written and a new one starts in $CONVSVC_CPUPROFILE.1, .2, ... (apibench sends it between
// its phases). The benchmarks take it in place of the binary with -bin, to show where the
// server's time goes under load:
//
//	go build -o /tmp/serveprof ./bench/serveprof
//	CONVSVC_CPUPROFILE=/tmp/api.pprof go run ./bench/apibench -bin /tmp/serveprof -rounds 1
//	go tool pprof -top /tmp/serveprof /tmp/api.pprof.1   # the create phase
//
// bench/scaleout cuts it too, at its API phases' edges (.1 the create phase, .3 the start
// phase):
//
//	CONVSVC_CPUPROFILE=/tmp/p.cpu CONVSVC_MEMPROFILE=/tmp/p.mem bash bench/scaleout.sh -only pg-local -bin /tmp/serveprof
//
// With $CONVSVC_MEMPROFILE set as well, each cut writes the allocations so far into
// $CONVSVC_MEMPROFILE.1, .2, ...; a phase's own are the difference of its two cuts' files.
// With $CONVSVC_TRACE set as well, each cut also records an execution trace of the next
// second into $CONVSVC_TRACE.1, .2, ...: what the goroutines waited on (go tool trace
// -pprof=sync|sched|syscall FILE) and how busy the store's writer was (bench/writertrace).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"syscall"
	"time"

	"github.com/convsvc/convsvc/bench/internal/benchkit"
	"github.com/convsvc/convsvc/internal/gcfloor"
	"github.com/convsvc/convsvc/service"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: serveprof serve --data DIR [--listen ADDR] [--blob-listen ADDR] [--log-level LEVEL] [--workers N] [--database URL] [--admin-token TOKEN]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var cfg service.Config
	fs.StringVar(&cfg.DataDir, "data", "./convsvc-data", "data directory")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "API address")
	fs.StringVar(&cfg.BlobListen, "blob-listen", "127.0.0.1:8081", "object storage address")
	fs.IntVar(&cfg.Workers, "workers", 0, "conversion workers")
	fs.StringVar(&cfg.Database, "database", "", "job database (a postgres:// URL for PostgreSQL)")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "admin token")
	level := fs.String("log-level", "warn", "log level")
	fs.Parse(os.Args[2:])
	// CONVSVC_CACHE_MAX_BYTES, as serve takes it (bench/scaleout's cache-off runs set it):
	// a byte count, 0 turning the cache off.
	if v := os.Getenv("CONVSVC_CACHE_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fail(fmt.Errorf("CONVSVC_CACHE_MAX_BYTES: %w", err))
		}
		cfg.CacheMaxBytes = n
		if n == 0 {
			cfg.CacheMaxBytes = -1 // off
		}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fail(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	gcfloor.Set(gcfloor.DefaultFloor) // as serve's default --gc-heap-floor
	if path := os.Getenv("CONVSVC_CPUPROFILE"); path != "" {
		f := startProfile(path)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
		cut := make(chan os.Signal, 1)
		if benchkit.CutSignal != nil {
			signal.Notify(cut, benchkit.CutSignal)
		}
		go func() {
			for n := 1; ; n++ {
				<-cut
				pprof.StopCPUProfile()
				f.Close()
				f = startProfile(fmt.Sprintf("%s.%d", path, n))
				if tp := os.Getenv("CONVSVC_TRACE"); tp != "" {
					traceSecond(fmt.Sprintf("%s.%d", tp, n))
				}
				if mp := os.Getenv("CONVSVC_MEMPROFILE"); mp != "" {
					writeAllocs(fmt.Sprintf("%s.%d", mp, n))
				}
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	m, err := service.Run(cfg)
	if err != nil {
		fail(err)
	}
	fmt.Printf("convsvc serving the API on %s and object storage on %s\n", m.URL(), m.BlobURL())
	<-ctx.Done()
	drain, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Shutdown(drain); err != nil {
		fmt.Fprintln(os.Stderr, "serveprof:", err)
	}
}

// traceSecond records an execution trace of the next second into a new file at path (when
// no trace is running already: a phase shorter than that gets none).
func traceSecond(path string) {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintln(os.Stderr, "serveprof: trace:", err)
		f.Close()
		return
	}
	time.AfterFunc(time.Second, func() { trace.Stop(); f.Close() })
}

// writeAllocs writes the allocations so far (the allocs profile, cumulative since the
// start) into a new file at path; the allocations of one phase are the difference of the
// files written at its two cuts (go tool pprof -sample_index=alloc_space -diff_base A B).
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fail(err)
	}
}

// startProfile starts the CPU profile into a new file at path.
func startProfile(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fail(err)
	}
	return f
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "serveprof:", err)
	os.Exit(1)
}
