// Package benchkit holds what the bench/ programs share: machine facts for the report header,
// the load average beside every figure, process RSS from /proc, order statistics, a raw JSON
// HTTP client that is the same for convsvc and for the bare handlers it is compared with, and
// the admin calls that make accounts and keys on a running convsvc.
package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// LoadAvg is the 1-, 5- and 15-minute load average from /proc/loadavg, e.g. "3.12 2.80 2.41".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Machine describes the host in one line: CPU model, cores, memory, kernel, Go version.
func Machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	mem := "?"
	if kib := procField("/proc/meminfo", "MemTotal:"); kib > 0 {
		mem = fmt.Sprintf("%.0f GiB", float64(kib)/(1<<20))
	}
	kernel := "?"
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		kernel = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%s, %d cores, %s RAM, kernel %s, %s %s/%s", model, runtime.NumCPU(), mem, kernel,
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Header prints the lines every report starts with: date, machine, load average.
func Header(w io.Writer, title string) {
	fmt.Fprintf(w, "## %s\n\n", title)
	fmt.Fprintf(w, "date: %s\nmachine: %s\nload average at start: %s\n\n", time.Now().UTC().Format(time.RFC3339), Machine(), LoadAvg())
}

// procField returns the first number after key in a /proc status-style file, or 0.
func procField(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line[len(key):])
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// RSSKiB is a process's resident set size (VmRSS) in KiB, 0 when it is gone.
func RSSKiB(pid int) int64 { return procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// HWMKiB is a process's peak resident set size since it started (VmHWM) in KiB.
func HWMKiB(pid int) int64 { return procField(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:") }

// ProcCPU is a process's user+system CPU seconds so far, from /proc/PID/stat (0 when it is gone).
func ProcCPU(pid int) float64 { return statSeconds(pid, 11, 12) }

// statSeconds sums fields of /proc/PID/stat (counted after the command name) that hold clock
// ticks, in seconds; 0 when the process is gone.
func statSeconds(pid int, fields ...int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks float64
	for _, i := range fields {
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100 // USER_HZ
}

// RSSSampler records a process's VmRSS (or its and its children's) every interval until Stop.
type RSSSampler struct {
	read    func() int64 // one sample, in KiB
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []int64
}

// SampleRSS starts sampling pid's VmRSS every interval.
func SampleRSS(pid int, interval time.Duration) *RSSSampler {
	return sample(func() int64 { return RSSKiB(pid) }, interval)
}

// sample starts calling read every interval.
func sample(read func() int64, interval time.Duration) *RSSSampler {
	s := &RSSSampler{read: read, stop: make(chan struct{}), done: make(chan struct{})}
	s.samples = append(s.samples, read())
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				v := s.read()
				s.mu.Lock()
				s.samples = append(s.samples, v)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the first sample, the largest, and how many were taken.
func (s *RSSSampler) Stop() (first, peak int64, n int) {
	close(s.stop)
	<-s.done
	s.samples = append(s.samples, s.read())
	return s.samples[0], slices.Max(s.samples), len(s.samples)
}

// Median of xs (xs is sorted in place); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Percentile returns the p-th percentile (0..100, nearest rank) of ds, sorting ds in place.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// NewHTTPClient is the HTTP client every comparison uses on both sides: keep-alive with enough
// idle connections for conns concurrent callers, no timeout beyond t.
func NewHTTPClient(conns int, t time.Duration) *http.Client {
	return &http.Client{
		Timeout: t,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// StatusError is a response that was not 2xx.
type StatusError struct {
	Status int
	Body   string
}

// Error shows the status and the body.
func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// Code is the API error code in the body ("rate_limited"), or "http_NNN".
func (e *StatusError) Code() string {
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.Body), &body) == nil && body.Error.Code != "" {
		return body.Error.Code
	}
	return "http_" + strconv.Itoa(e.Status)
}

// DoJSON sends method url with a bearer token and the JSON of in (nil for no body), and decodes
// a 2xx response into out (nil to discard). Other statuses are a *StatusError.
func DoJSON(ctx context.Context, hc *http.Client, method, url, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{Status: resp.StatusCode, Body: string(b)}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Reservation is the part of POST /v1/jobs's answer the benchmarks use.
type Reservation struct {
	Job       Job    `json:"job"`
	UploadURL string `json:"upload_url"`
}

// Job is the part of a Job the benchmarks use.
type Job struct {
	ID        string  `json:"id"`
	Status    string  `json:"status"`
	ErrorCode *string `json:"error_code"`
	Output    *struct {
		Bytes int64  `json:"bytes"`
		URL   string `json:"url"`
	} `json:"output"`
}

// Finished reports whether the job reached a final status.
func (j Job) Finished() bool {
	switch j.Status {
	case "succeeded", "failed", "cancelled":
		return true
	}
	return false
}

// CreateKeys makes n accounts with a spend cap of capCents and one key each on the convsvc at
// baseURL, authorised by the admin token; it returns the keys.
func CreateKeys(ctx context.Context, hc *http.Client, baseURL, adminToken string, n int, capCents int64) ([]string, error) {
	return CreateKeysIn(ctx, hc, baseURL, adminToken, n, n, capCents)
}

// CreateKeysIn makes accounts accounts with a spend cap of capCents and n keys spread over them
// in turn (key i belongs to account i mod accounts), and returns the keys.
func CreateKeysIn(ctx context.Context, hc *http.Client, baseURL, adminToken string, n, accounts int, capCents int64) ([]string, error) {
	ids := make([]string, accounts)
	for i := range ids {
		var acct struct {
			ID string `json:"id"`
		}
		err := DoJSON(ctx, hc, "POST", baseURL+"/v1/admin/accounts", adminToken,
			map[string]any{"name": fmt.Sprintf("bench-%d", i), "spend_cap_cents": capCents}, &acct)
		if err != nil {
			return nil, fmt.Errorf("create account: %w", err)
		}
		ids[i] = acct.ID
	}
	keys := make([]string, n)
	for i := range keys {
		var key struct {
			Key string `json:"key"`
		}
		if err := DoJSON(ctx, hc, "POST", baseURL+"/v1/admin/accounts/"+ids[i%accounts]+"/keys", adminToken, nil, &key); err != nil {
			return nil, fmt.Errorf("create key: %w", err)
		}
		keys[i] = key.Key
	}
	return keys, nil
}

// Upload PUTs size bytes from r to url with Content-Length set.
func Upload(ctx context.Context, hc *http.Client, url string, r io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, r)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return &StatusError{Status: resp.StatusCode, Body: string(b)}
	}
	return nil
}

// PatternReader yields N bytes of a fixed pseudo-random 1 MiB block, repeated: incompressible
// enough, and free to generate at any size.
type PatternReader struct {
	N   int64
	off int64
}

var pattern = func() []byte {
	b := make([]byte, 1<<20)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}()

// Read fills b with the next bytes of the pattern.
func (p *PatternReader) Read(b []byte) (int, error) {
	if p.off >= p.N {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.off < p.N {
		i := p.off % int64(len(pattern))
		c := copy(b[n:], pattern[i:min(int64(len(pattern)), i+p.N-p.off)])
		n += c
		p.off += int64(c)
	}
	return n, nil
}

// WriteTo lets io.Copy hand whole 1 MiB blocks to w without an intermediate buffer.
func (p *PatternReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for p.off < p.N {
		i := p.off % int64(len(pattern))
		chunk := pattern[i:min(int64(len(pattern)), i+p.N-p.off)]
		n, err := w.Write(chunk)
		total += int64(n)
		p.off += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Server returns the convsvc binary to benchmark: prebuilt when set (a -bin flag), else one
// built from the module in the current directory into dir.
func Server(dir, prebuilt string) (string, error) {
	if prebuilt != "" {
		return prebuilt, nil
	}
	root, err := filepath.Abs(".")
	if err != nil {
		return "", err
	}
	bin, err := testproc.Build(dir, root)
	if err != nil {
		return "", fmt.Errorf("build convsvc: %w", err)
	}
	return bin, nil
}

// children lists the pids whose parent is pid (the server's worker processes), whichever of
// its threads started them.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// TreeRSSKiB is the VmRSS of pid and its children together, in KiB.
func TreeRSSKiB(pid int) int64 {
	n := RSSKiB(pid)
	for _, c := range children(pid) {
		n += RSSKiB(c)
	}
	return n
}

// TreeCPU is the user+system CPU seconds of pid, of its children that are alive, and of those
// it has reaped (cutime, cstime).
func TreeCPU(pid int) float64 {
	total := statSeconds(pid, 11, 12, 13, 14)
	for _, c := range children(pid) {
		total += ProcCPU(c)
	}
	return total
}

// SampleTreeRSS samples the VmRSS of pid and its children together every interval.
func SampleTreeRSS(pid int, interval time.Duration) *RSSSampler {
	return sample(func() int64 { return TreeRSSKiB(pid) }, interval)
}

// Scrape reads a server's /metrics into a map of unlabelled sample values.
func Scrape(hc *http.Client, base string) (map[string]float64, error) {
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, nil
}
