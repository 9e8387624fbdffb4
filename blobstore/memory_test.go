package blobstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// memoryBound is how much the heap may grow while any upload streams
// through: its chunks (chunkCount*chunkSize) and HTTP plumbing, never the body.
const memoryBound = 32 << 20

func TestHandler_Put_256MiBMemory(t *testing.T) {
	testPutMemory(t, 256<<20)
}

// TestHandler_Put_2GBMemory uploads the service's maximum input size. It needs
// 2 GB of disk; run it with CONVSVC_BIG_TESTS=1 go test -run 2GB ./blobstore/.
func TestHandler_Put_2GBMemory(t *testing.T) {
	if testing.Short() || os.Getenv("CONVSVC_BIG_TESTS") != "1" {
		t.Skip("set CONVSVC_BIG_TESTS=1 (and drop -short) to upload 2,000,000,000 bytes")
	}
	testPutMemory(t, 2_000_000_000)
}

// testPutMemory PUTs a generated body of size bytes and asserts that neither
// the peak heap in use nor the bytes allocated grow with it.
func testPutMemory(t *testing.T, size int64) {
	e := newTestEnv(t)
	u := e.uploadURL("job_big", size)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	resp := e.do("PUT", u, &patternReader{n: size}, size, nil)
	close(stop)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status = %d: %s", resp.StatusCode, b)
	}

	if grew := int64(peak.Load()) - int64(before.HeapInuse); grew > memoryBound {
		t.Errorf("heap in use grew by %d MiB during a %d MiB upload, want under %d MiB", grew>>20, size>>20, memoryBound>>20)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > memoryBound {
		t.Errorf("allocated %d MiB during a %d MiB upload, want under %d MiB", alloc>>20, size>>20, memoryBound>>20)
	}
	t.Logf("%d MiB upload: peak heap +%d KiB, allocated %d KiB", size>>20,
		(int64(peak.Load())-int64(before.HeapInuse))>>10, (after.TotalAlloc-before.TotalAlloc)>>10)

	h := sha256.New()
	io.Copy(h, &patternReader{n: size})
	var got struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(h.Sum(nil)); got.Bytes != size || got.SHA256 != want {
		t.Errorf("stored %d bytes with sha256 %s, want %d and %s", got.Bytes, got.SHA256, size, want)
	}
	if fi, err := os.Stat(filepath.Join(e.dir, "uploads", "job_big")); err != nil || fi.Size() != size {
		t.Errorf("uploads/job_big: %v, want %d bytes", err, size)
	}
}

func BenchmarkPutUpload(b *testing.B) {
	const size = 64 << 20
	e := newTestEnv(b)
	u := e.st.UploadURL("job_bench", size, time.Unix(0, e.now.Load()).Add(24*time.Hour))
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		resp := e.do("PUT", u, &patternReader{n: size}, size, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status = %d", resp.StatusCode)
		}
	}
}

func BenchmarkGetDownload(b *testing.B) {
	const size = 64 << 20
	e := newTestEnv(b)
	out, err := e.st.WriteOutput("job_bench", OutputMeta{ContentType: "image/png"}, func(w io.Writer) error {
		_, err := io.Copy(w, &patternReader{n: size})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	u := e.st.DownloadURL("job_bench", out.Bytes, time.Unix(0, e.now.Load()).Add(24*time.Hour))
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		resp := e.do("GET", u, nil, 0, nil)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n != size {
			b.Fatalf("status = %d, %d bytes", resp.StatusCode, n)
		}
	}
}
