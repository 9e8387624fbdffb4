// Command batchbench measures what a batch saves (issue 33): -files small PNGs converted to
// JPEG through one batch (POST /v1/batches, the uploads, one start, the waits, one archive)
// against the same files as separate jobs (create, upload, start, wait, download each,
// -parallel at once), counting the API requests each makes (the server's
// convsvc_http_requests_total) and the wall time, in the same run on one in-process server.
// It then streams the archive of the batch's outputs twice, with small and with larger
// outputs, sampling the process's heap every 5 ms, to show that the archive's memory does not
// grow with its size.
//
// By default the server's rate limits are set past reach (as for convert's embedded server),
// so the figures are the API's own cost; -limit 120 gives serve's 120 writes a minute per key,
// under which the separate jobs wait (2 writes a file) and the batch does not (2 in all).
//
//	go run ./bench/batchbench [-files 200] [-parallel 8] [-big 512,1024]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/promtext"
	"github.com/convsvc/convsvc/service"
)

func main() {
	files := flag.Int("files", 200, "files per run")
	parallel := flag.Int("parallel", 8, "separate jobs in flight at once")
	limit := flag.Int("limit", 0, "writes per key and minute, as serve's 120 (0: past reach, as convert's embedded server)")
	big := flag.String("big", "512,1024", "sides in pixels of the larger outputs' noise PNGs (archive memory)")
	flag.Parse()
	var sides []int
	for _, f := range strings.Split(*big, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "batchbench: -big is a list of sides in pixels, like 512,1024")
			os.Exit(2)
		}
		sides = append(sides, n)
	}
	if err := run(*files, *parallel, *limit, sides); err != nil {
		fmt.Fprintln(os.Stderr, "batchbench:", err)
		os.Exit(1)
	}
}

func run(files, parallel, limit int, sides []int) error {
	dir, err := os.MkdirTemp("", "batchbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var key string
	cfg := service.Config{
		DataDir: dir, Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(_, k string) { key = k },
		WriteLimit:   1 << 30, ReadLimit: 1 << 30,
	}
	if limit > 0 {
		cfg.WriteLimit, cfg.ReadLimit = limit, 0
	}
	m, err := service.Run(cfg)
	if err != nil {
		return err
	}
	defer m.Shutdown(context.Background())
	// A 429 is waited out as convert does, so that the runs finish under a served limit.
	c := &client.Client{BaseURL: m.URL(), Key: key, WaitOutRateLimit: true}
	ctx := context.Background()
	small := noisePNG(64)
	limitText := "past reach"
	if limit > 0 {
		limitText = strconv.Itoa(limit) + " writes a minute per key"
	}
	fmt.Printf("%d files of %d bytes (64x64 noise PNG -> JPEG), rate limit %s, GOMAXPROCS %d\n\n", files, len(small), limitText, runtime.GOMAXPROCS(0))

	before := requests(m.URL())
	start := time.Now()
	if err := separate(ctx, c, small, files, parallel); err != nil {
		return err
	}
	sepTime, sepReq := time.Since(start), requests(m.URL())-before

	before = requests(m.URL())
	start = time.Now()
	id, err := batch(ctx, c, small, files)
	if err != nil {
		return err
	}
	n, err := c.DownloadBatchArchive(ctx, id, io.Discard)
	if err != nil {
		return err
	}
	batchTime, batchReq := time.Since(start), requests(m.URL())-before
	fmt.Printf("| run | API requests | wall time |\n|---|---|---|\n")
	fmt.Printf("| %d separate jobs (%d at once) | %.0f | %.2f s |\n", files, parallel, sepReq, sepTime.Seconds())
	fmt.Printf("| one batch of %d, archive of %d bytes | %.0f | %.2f s |\n\n", files, n, batchReq, batchTime.Seconds())

	archives := []struct{ name, id string }{{"64x64", id}}
	for _, side := range sides {
		bigID, err := batch(ctx, c, noisePNG(side), files)
		if err != nil {
			return err
		}
		archives = append(archives, struct{ name, id string }{fmt.Sprintf("%dx%d", side, side), bigID})
	}
	fmt.Printf("| archive of %d outputs | bytes | heap in use before | peak while streaming |\n|---|---|---|---|\n", files)
	for _, a := range archives {
		base, peak, n, err := streamPeak(ctx, c, a.id)
		if err != nil {
			return err
		}
		fmt.Printf("| %s JPEGs | %d | %.1f MiB | %.1f MiB |\n", a.name, n, mib(base), mib(peak))
	}
	return nil
}

// separate converts the file n times as separate jobs, parallel at once.
func separate(ctx context.Context, c *client.Client, data []byte, n, parallel int) error {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := c.Convert(ctx, bytes.NewReader(data), int64(len(data)), "png", "jpeg", io.Discard)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}

// batch converts the file n times through one batch and returns its id once finished.
func batch(ctx context.Context, c *client.Client, data []byte, n int) (string, error) {
	reqs := make([]client.CreateJobRequest, n)
	for i := range reqs {
		reqs[i] = client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(data))}
	}
	res, err := c.CreateBatch(ctx, reqs, "")
	if err != nil {
		return "", err
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for _, j := range res.Jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.Upload(ctx, j.UploadURL, bytes.NewReader(data), int64(len(data))); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return "", err
	}
	if _, err := c.StartBatch(ctx, res.ID); err != nil {
		return "", err
	}
	b, err := c.WaitBatch(ctx, res.ID, nil)
	if err != nil {
		return "", err
	}
	if b.Counts.Succeeded != n {
		return "", fmt.Errorf("batch %s: %d of %d succeeded", b.ID, b.Counts.Succeeded, n)
	}
	return res.ID, nil
}

// streamPeak downloads the batch's archive (discarding it) while sampling the heap in use.
func streamPeak(ctx context.Context, c *client.Client, id string) (base, peak uint64, n int64, err error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base = ms.HeapInuse
	var maxSeen atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > maxSeen.Load() {
				maxSeen.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	n, err = c.DownloadBatchArchive(ctx, id, io.Discard)
	close(stop)
	<-done
	return base, maxSeen.Load(), n, err
}

// requests sums the API server's convsvc_http_requests_total (the /metrics scrape itself
// is one more each time, counted out).
func requests(base string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ms, err := promtext.Parse(string(b))
	if err != nil {
		return 0
	}
	total := ms.Value("convsvc_http_requests_total", "server", "api")
	return total - ms.Value("convsvc_http_requests_total", "server", "api", "route", "/metrics")
}

func noisePNG(side int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
	}
	for y := range side {
		img.SetNRGBA(0, y, color.NRGBA{A: 255})
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
