package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// rssKiB is a process's resident set (VmRSS) in KiB.
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// photo12MP is a 4000x3000 photo-like image: gradients with noise, so encoders work as hard
// as on a photograph.
func photo12MP() *image.RGBA {
	const w, h = 4000, 3000
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(12, 12))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := m.PixOffset(x, y)
			n := byte(rng.IntN(24))
			m.Pix[i] = byte(x*200/w) + n
			m.Pix[i+1] = byte(y*200/h) + n
			m.Pix[i+2] = byte((x+y)*100/(w+h)) + n
			m.Pix[i+3] = 255
		}
	}
	return m
}

// A warm server's resident set goes back to within 2x of what it was idle a few seconds after
// its last job, here a round of 12 MP conversions (PNG -> JPEG, JPEG -> PNG, JPEG -> WebP, a
// resize) that take it to several hundred MiB: the memory the jobs used goes back to the
// system once the workers are idle (service's idle trim), instead of staying with the process.
func TestE2E_MemoryReturnsAfterTheJobs(t *testing.T) {
	img := photo12MP()
	var pngData, jpegData bytes.Buffer
	if err := png.Encode(&pngData, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegData, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	img = nil

	data := filepath.Join(t.TempDir(), "data")
	p := testproc.Serve(t, binary, data, "--workers", "2")
	c := &client.Client{BaseURL: p.URL, Key: p.Key}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	convert := func(in []byte, from, to string, opts *client.Options) {
		t.Helper()
		_, err := c.ConvertWith(ctx, client.ConvertRequest{In: bytes.NewReader(in), Size: int64(len(in)), From: from, To: to, Options: opts}, io.Discard)
		if err != nil {
			t.Fatalf("%s -> %s: %v", from, to, err)
		}
	}
	// Warm: one small job, so idle means a server that has served.
	var small bytes.Buffer
	png.Encode(&small, image.NewRGBA(image.Rect(0, 0, 64, 48)))
	convert(small.Bytes(), "png", "jpeg", nil)
	time.Sleep(5 * time.Second) // not an assertion: let the start-up settle before measuring idle
	idle := rssKiB(t, p.Pid())

	peak := idle
	for range 2 {
		convert(pngData.Bytes(), "png", "jpeg", nil)
		peak = max(peak, rssKiB(t, p.Pid()))
		convert(jpegData.Bytes(), "jpeg", "png", nil)
		peak = max(peak, rssKiB(t, p.Pid()))
		convert(jpegData.Bytes(), "jpeg", "webp", nil)
		peak = max(peak, rssKiB(t, p.Pid()))
		convert(jpegData.Bytes(), "jpeg", "png", &client.Options{Width: 800})
		peak = max(peak, rssKiB(t, p.Pid()))
	}
	done := time.Now()
	var trace []string
	for {
		rss := rssKiB(t, p.Pid())
		if len(trace) < 20 {
			trace = append(trace, fmt.Sprintf("%.1fs %d MiB", time.Since(done).Seconds(), rss>>10))
		}
		if rss <= 2*idle {
			t.Logf("idle %d MiB, after the jobs %d MiB, back to %d MiB %.1f s after the last job", idle>>10, peak>>10, rss>>10, time.Since(done).Seconds())
			return
		}
		if time.Since(done) > 60*time.Second {
			t.Fatalf("idle %d MiB, after the jobs %d MiB; 60 s after the last job still %d MiB, over 2x idle (first samples: %v)", idle>>10, peak>>10, rss>>10, trace)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
