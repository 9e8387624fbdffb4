// Command blobbench measures convsvc's object storage over loopback: a 1 GiB and a 2 GB PUT
// to a job's signed upload URL on the binary's blob listener, and GETs of outputs of the same
// sizes, against a bare net/http handler in its own process that copies the body to a file
// (with and without fsync) and serves files with http.ServeContent, in the same run. It
// samples the convsvc server's VmRSS every 100 ms during each transfer.
//
// The GET side: no built-in conversion turns a 2 GB input into a 2 GB output, so the bench
// writes each output into the running server's data directory with blobstore.WriteOutput (the
// call the workers use, for a real job id) and signs its URL with blobstore.DownloadURL and the
// server's own secret; the GET itself is served by the binary.
//
//	go run ./bench/blobbench [-rounds 3] [-sizes 1073741824,2000000000]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/convsvc/convsvc/bench/internal/benchkit"
	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// prebuilt is the -bin flag: a server binary to use instead of building one.
var prebuilt string

func main() {
	rounds := flag.Int("rounds", 3, "rounds per size and direction; each rotates the order of the contenders")
	sizesFlag := flag.String("sizes", "1073741824,2000000000", "transfer sizes in bytes, comma-separated")
	serveBare := flag.String("serve-bare", "", "internal: serve the bare handler over this directory, address to DIR/addr")
	binFlag := flag.String("bin", "", "server binary to run instead of building convsvc (e.g. bench/serveprof for a server-side CPU profile)")
	flag.Parse()
	prebuilt = *binFlag
	if *serveBare != "" {
		if err := bareServe(*serveBare); err != nil {
			fmt.Fprintln(os.Stderr, "blobbench:", err)
			os.Exit(1)
		}
		return
	}
	var sizes []int64
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > 2_000_000_000 {
			fmt.Fprintf(os.Stderr, "blobbench: bad size %q (1 to 2000000000)\n", s)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	if err := run(sizes, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "blobbench:", err)
		os.Exit(1)
	}
}

type sample struct {
	mbps            float64
	rssFirst, rssPk int64 // KiB, the serving process
}

func run(sizes []int64, rounds int) error {
	work, err := os.MkdirTemp("", "convsvc-blobbench-*")
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
	data := filepath.Join(work, "data")
	p, err := testproc.Start(bin, data, "--log-level", "warn")
	if err != nil {
		return err
	}
	// SIGTERM first: a graceful stop, and serveprof writes its profile then.
	defer func() {
		if !p.Signal(syscall.SIGTERM, time.Minute) {
			p.Kill()
		}
	}()
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	hc := benchkit.NewHTTPClient(4, time.Hour)
	keys, err := benchkit.CreateKeys(ctx, hc, p.URL, strings.TrimSpace(string(token)), 1, 1<<40)
	if err != nil {
		return err
	}
	bareDir := filepath.Join(work, "bare")
	bare, bareURL, err := startBare(self, bareDir)
	if err != nil {
		return err
	}
	defer func() { bare.Process.Kill(); bare.Wait() }()

	benchkit.Header(os.Stdout, "Object storage: PUT and GET over loopback")
	fmt.Println("client: Go net/http, body generated on the fly (1 MiB pseudo-random block repeated), GET bodies read into io.Discard; client and servers share the machine's cores. Before every transfer: sync(2), 1 s pause.")
	fmt.Println()

	type key struct{ dir, who string }
	results := map[int64]map[key][]sample{}
	var loads []string
	jobs := map[int64]string{} // size -> a job whose upload was the last convsvc PUT
	for _, size := range sizes {
		results[size] = map[key][]sample{}
		order := []string{"convsvc", "bare", "bare+fsync"}
		for range rounds {
			loads = append(loads, strings.Fields(benchkit.LoadAvg())[0])
			for _, who := range order {
				benchkit.Settle()
				var s sample
				switch who {
				case "convsvc":
					var res benchkit.Reservation
					req := map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": size}
					if err := benchkit.DoJSON(ctx, hc, "POST", p.URL+"/v1/jobs", keys[0], req, &res); err != nil {
						return fmt.Errorf("create: %w", err)
					}
					s, err = put(hc, res.UploadURL, size, p.Pid())
					os.Remove(filepath.Join(data, "blobs", "uploads", res.Job.ID))
					jobs[size] = res.Job.ID
				case "bare":
					s, err = put(hc, bareURL+"/put/f", size, bare.Process.Pid)
					os.Remove(filepath.Join(bareDir, "f"))
				case "bare+fsync":
					s, err = put(hc, bareURL+"/put/f?fsync=1", size, bare.Process.Pid)
					os.Remove(filepath.Join(bareDir, "f"))
				}
				if err != nil {
					return fmt.Errorf("PUT %d to %s: %w", size, who, err)
				}
				results[size][key{"PUT", who}] = append(results[size][key{"PUT", who}], s)
				fmt.Fprintf(os.Stderr, "PUT %d %s: %.0f MB/s, RSS %d -> %d MiB (load %s)\n", size, who, s.mbps, s.rssFirst>>10, s.rssPk>>10, benchkit.LoadAvg())
			}
			order = append(order[1:], order[0])
		}
	}

	// GET: outputs of each size for convsvc (written the way a worker writes them) and a file
	// for the bare handler; both are then in the page cache, as a just-finished output is.
	bs, err := blobstore.Open(blobstore.Config{Dir: filepath.Join(data, "blobs"), PublicURL: p.BlobURL})
	if err != nil {
		return err
	}
	for _, size := range sizes {
		id := jobs[size]
		if _, err := bs.WriteOutput(id, blobstore.OutputMeta{ContentType: "image/jpeg"}, func(w io.Writer) error {
			_, err := io.Copy(w, &benchkit.PatternReader{N: size})
			return err
		}); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		if err := writeFile(filepath.Join(bareDir, "g"), size); err != nil {
			return err
		}
		url := bs.DownloadURL(id, size, time.Now().Add(time.Hour))
		order := []string{"convsvc", "bare"}
		for range rounds {
			loads = append(loads, strings.Fields(benchkit.LoadAvg())[0])
			for _, who := range order {
				benchkit.Settle()
				var s sample
				switch who {
				case "convsvc":
					s, err = get(hc, url, size, p.Pid())
				case "bare":
					s, err = get(hc, bareURL+"/get/g", size, bare.Process.Pid)
				}
				if err != nil {
					return fmt.Errorf("GET %d from %s: %w", size, who, err)
				}
				results[size][key{"GET", who}] = append(results[size][key{"GET", who}], s)
				fmt.Fprintf(os.Stderr, "GET %d %s: %.0f MB/s, RSS %d -> %d MiB (load %s)\n", size, who, s.mbps, s.rssFirst>>10, s.rssPk>>10, benchkit.LoadAvg())
			}
			order = append(order[1:], order[0])
		}
		os.Remove(filepath.Join(bareDir, "g"))
		bs.Delete(id)
	}

	fmt.Printf("load average (1 min) before each round: %s\n\n", strings.Join(loads, ", "))
	fmt.Println("| transfer | size bytes | convsvc MB/s | bare MB/s | bare+fsync MB/s | convsvc/bare | convsvc/bare+fsync | convsvc RSS before -> peak MiB (growth) | bare RSS peak MiB | every round MB/s (convsvc; bare; bare+fsync) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, dir := range []string{"PUT", "GET"} {
		for _, size := range sizes {
			r := results[size]
			cs, b, bf := r[key{dir, "convsvc"}], r[key{dir, "bare"}], r[key{dir, "bare+fsync"}]
			cm, bm, bfm := medMBps(cs), medMBps(b), medMBps(bf)
			var first, peak, bpeak int64
			for i, s := range cs {
				if i == 0 || s.rssPk-s.rssFirst > peak-first {
					first, peak = s.rssFirst, s.rssPk
				}
			}
			for _, s := range b {
				bpeak = max(bpeak, s.rssPk)
			}
			bfCol, bfRatio := "", ""
			if len(bf) > 0 {
				bfCol, bfRatio = fmt.Sprintf("%.0f", bfm), fmt.Sprintf("%.2f", cm/bfm)
			}
			fmt.Printf("| %s | %d | %.0f | %.0f | %s | %.2f | %s | %d -> %d (+%d) | %d | %s; %s; %s |\n", dir, size, cm, bm, bfCol, cm/bm, bfRatio,
				first>>10, peak>>10, (peak-first)>>10, bpeak>>10, mbpsList(cs), mbpsList(b), mbpsList(bf))
		}
	}
	fmt.Printf("\nconvsvc server VmHWM (peak RSS since start) at the end: %d MiB\n", benchkit.HWMKiB(p.Pid())>>10)
	fmt.Printf("load average at end: %s\n", benchkit.LoadAvg())
	return nil
}

func medMBps(ss []sample) float64 {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = s.mbps
	}
	return benchkit.Median(xs)
}

func mbpsList(ss []sample) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%.0f", s.mbps)
	}
	return strings.Join(parts, " ")
}

func put(hc *http.Client, url string, size int64, pid int) (sample, error) {
	rss := benchkit.SampleRSS(pid, 100*time.Millisecond)
	t0 := time.Now()
	err := benchkit.Upload(context.Background(), hc, url, &benchkit.PatternReader{N: size}, size)
	el := time.Since(t0)
	first, peak, _ := rss.Stop()
	if err != nil {
		return sample{}, err
	}
	return sample{float64(size) / el.Seconds() / 1e6, first, peak}, nil
}

func get(hc *http.Client, url string, size int64, pid int) (sample, error) {
	rss := benchkit.SampleRSS(pid, 100*time.Millisecond)
	t0 := time.Now()
	resp, err := hc.Get(url)
	if err != nil {
		rss.Stop()
		return sample{}, err
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 1<<20))
	resp.Body.Close()
	el := time.Since(t0)
	first, peak, _ := rss.Stop()
	if err != nil {
		return sample{}, err
	}
	if resp.StatusCode != http.StatusOK || n != size {
		return sample{}, fmt.Errorf("HTTP %d, %d of %d bytes", resp.StatusCode, n, size)
	}
	return sample{float64(size) / el.Seconds() / 1e6, first, peak}, nil
}

func writeFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, &benchkit.PatternReader{N: size}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func startBare(self, dir string) (*exec.Cmd, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, "-serve-bare", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	for range 200 {
		if addr, err := os.ReadFile(filepath.Join(dir, "addr")); err == nil && len(addr) > 0 {
			return cmd, "http://" + string(addr), nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, "", errors.New("bare handler did not start")
}

// bareServe is the ceiling: PUT /put/NAME[?fsync=1] copies the body into DIR/NAME with
// io.Copy (and f.Sync when asked); GET /get/NAME serves it with http.ServeContent (sendfile).
func bareServe(dir string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /put/{name}", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Create(filepath.Join(dir, filepath.Base(r.PathValue("name"))))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, err = io.Copy(f, r.Body)
		if err == nil && r.URL.Query().Get("fsync") == "1" {
			err = f.Sync()
		}
		if err = errors.Join(err, f.Close()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write([]byte("{}\n"))
	})
	mux.HandleFunc("GET /get/{name}", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(filepath.Join(dir, filepath.Base(r.PathValue("name"))))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "", fi.ModTime(), f)
	})
	if err := os.WriteFile(filepath.Join(dir, "addr.tmp"), []byte(ln.Addr().String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "addr.tmp"), filepath.Join(dir, "addr")); err != nil {
		return err
	}
	return http.Serve(ln, mux)
}
