package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

// TestFaults_CacheKillLoop: clients convert the same few files again and again, with and
// without input_sha256, so jobs are converted, answered at create, at start and at claim and
// wait for their twins, while the server is SIGKILLed at random points 12 times. After every
// kill and at the end the store is consistent (VerifyLedger checks every output's references
// and the cache's totals besides the cents) and every succeeded job's output, its own or the
// one it shares, is on disk with the recorded size and hash.
func TestFaults_CacheKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop runs without -short")
	}
	data := filepath.Join(t.TempDir(), "data")
	samples := [][]byte{testenv.Sample(t, "images/sample.png"), testenv.NoisePNG(t, 64, 48), testenv.NoisePNG(t, 48, 64)}
	serve := func() *testproc.Proc { return testproc.Serve(t, binary, data, "--workers", "2") }
	p := serve()
	key := p.Key
	var base atomic.Pointer[string]
	base.Store(&p.URL)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var hits atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 35))
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := &client.Client{BaseURL: *base.Load(), Key: key, Retries: -1, HTTP: &http.Client{Timeout: 5 * time.Second}}
				in := samples[rng.IntN(len(samples))]
				req := client.CreateJobRequest{InputFormat: "png", TargetFormat: "webp", InputBytes: int64(len(in))}
				if rng.IntN(2) == 0 {
					sum := sha256.Sum256(in)
					req.InputSHA256 = hex.EncodeToString(sum[:])
				}
				ctx := context.Background()
				res, err := c.CreateJob(ctx, req, "")
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the server is down or restarting
					continue
				}
				if res.Job.Status == client.StatusSucceeded {
					hits.Add(1)
					continue
				}
				if err := c.Upload(ctx, res.UploadURL, strings.NewReader(string(in)), int64(len(in))); err != nil {
					continue
				}
				c.StartJob(ctx, res.Job.ID)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(35, 1))
	for range 12 {
		time.Sleep(time.Duration(150+rng.IntN(500)) * time.Millisecond)
		p.Kill()
		checkStopped(t, data, false)
		p = serve()
		base.Store(&p.URL)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	waitIdle(t, &client.Client{BaseURL: p.URL, Key: key})
	if !p.Signal(syscall.SIGTERM, 30*time.Second) {
		t.Fatal("server did not stop on SIGTERM")
	}
	cached, converted := 0, 0
	for _, j := range checkStopped(t, data, true) {
		if j.Status == store.StatusSucceeded {
			if j.Output.Cached {
				cached++
			} else {
				converted++
			}
		}
	}
	t.Logf("12 kills: %d jobs converted, %d answered from the cache (%d at create)", converted, cached, hits.Load())
	if cached == 0 {
		t.Fatal("no job was answered from the cache")
	}
}
