package service_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/worker"
)

// TestMain (shared_test.go) runs worker.ChildMain in the worker processes these tests start.

// processIsolation runs conversions in worker processes that are this test binary.
func processIsolation(c *service.Config) {
	c.Isolation = service.IsolationProcess
	c.WorkerCommand = []string{os.Args[0]}
	c.FontDir = "/usr/share/fonts"
}

// TestIsolation_Samples converts every sample of every family in testdata to one of its
// targets with conversions in the server's process and in worker processes: the same jobs
// succeed in both, with outputs of the same size where the converter is deterministic.
func TestIsolation_Samples(t *testing.T) {
	if testing.Short() {
		t.Skip("converts every sample twice")
	}
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	many := func(c *service.Config) { c.WriteLimit = 100000 }
	none := testenv.Start(t, many, func(c *service.Config) { c.Isolation = service.IsolationNone })
	proc := testenv.Start(t, many, processIsolation)
	if mode, conf := proc.Main.Isolation(); mode != service.IsolationProcess || len(conf) == 0 {
		t.Fatalf("isolation %q %v, want process", mode, conf)
	}
	cat := none.Main.Catalog()
	byExt := map[string]string{}
	for _, f := range cat.Formats() {
		for _, ext := range f.Extensions {
			if _, ok := byExt[ext]; !ok {
				byExt[ext] = f.ID
			}
		}
	}
	families := []string{"images", "documents", "data", "audio", "archives"}
	seen := map[string]bool{}
	perFamily := map[string]int{}
	for _, fam := range families {
		entries, err := os.ReadDir(filepath.Join("..", "testdata", fam))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasPrefix(name, "sample") {
				continue
			}
			ext := strings.TrimPrefix(filepath.Ext(name), ".")
			if strings.HasSuffix(name, ".tar.gz") {
				ext = "tar.gz"
			} else if strings.HasSuffix(name, ".tar.zst") {
				ext = "tar.zst"
			}
			from, ok := byExt[ext]
			if !ok {
				continue
			}
			targets := slices.DeleteFunc(cat.Targets(from), func(s string) bool { return s == from })
			if len(targets) == 0 {
				continue
			}
			// One target per sample, a different one for each sample of a format.
			to := targets[len(seen)%len(targets)]
			seen[name] = true
			perFamily[fam]++
			data, err := os.ReadFile(filepath.Join("..", "testdata", fam, name))
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fam+"/"+name+"->"+to, func(t *testing.T) {
				a := none.Convert(none.Key, from, to, data)
				b := proc.Convert(proc.Key, from, to, data)
				if a.Status != b.Status || a.Error() != b.Error() {
					t.Fatalf("in-process: %s %s; worker process: %s %s", a.Status, a.Error(), b.Status, b.Error())
				}
				if b.Status != "succeeded" {
					t.Logf("both %s: %s", b.Status, b.Error())
				}
			})
		}
	}
	for _, fam := range families {
		if perFamily[fam] == 0 {
			t.Errorf("no sample of %s was converted", fam)
		}
	}
}

// /readyz shows the confinement the started workers applied (each worker reports it when it
// is ready), the same a worker started alone with the same settings applies; and /metrics
// shows the one memory budget the workers reserve from, all of it given back after a job.
func TestIsolation_ReadyzShowsAppliedConfinement(t *testing.T) {
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	e := testenv.Start(t, processIsolation, func(c *service.Config) { c.MaxConversionMemory = 96 << 20 })
	r := e.Do("GET", "/readyz", "", nil)
	testenv.MustStatus(t, r, 200, "")
	var ready struct {
		Details struct {
			Isolation   string   `json:"isolation"`
			Confinement []string `json:"confinement"`
		} `json:"details"`
	}
	if err := json.Unmarshal(r.Body, &ready); err != nil {
		t.Fatal(err)
	}
	applied, err := worker.Probe(worker.Config{FontDir: "/usr/share/fonts", Command: []string{os.Args[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if ready.Details.Isolation != service.IsolationProcess || !slices.Equal(ready.Details.Confinement, applied) {
		t.Fatalf("readyz details %+v\nwant process with %q", ready.Details, applied)
	}
	if !slices.ContainsFunc(applied, func(s string) bool { return strings.HasPrefix(s, "memory: RSS watchdog (") }) {
		t.Errorf("confinement %q names no memory enforcement", applied)
	}

	data := testenv.Sample(t, "images/sample.png")
	res := e.Create(e.Key, "png", "jpeg", int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	if j := e.Get(e.Key, res.Job.ID, 30); j.Status != "succeeded" {
		t.Fatalf("job %s: %+v", j.Status, j)
	}
	m := e.Scrape()
	if got := m.Value("convsvc_conversion_memory_budget_bytes"); got != 96<<20 {
		t.Errorf("budget gauge %v, want %d", got, 96<<20)
	}
	if got := m.Value("convsvc_conversion_memory_reserved_bytes"); got != 0 {
		t.Errorf("reserved after the job: %v, want 0", got)
	}
}
