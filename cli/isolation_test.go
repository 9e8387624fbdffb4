package cli_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/worker"
)

// convsvc config starts one worker process (this test binary: TestMain runs worker.ChildMain)
// and shows the confinement it applied, not what the kernel offers.
func TestCLI_ConfigShowsAppliedConfinement(t *testing.T) {
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	config := func(args ...string) string {
		t.Helper()
		out, err := run(t, append([]string{"config", "--data", t.TempDir(), "--json", "--font-dir", "/usr/share/fonts"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]struct{ Value string }
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return cfg["isolation"].Value
	}
	got := config("--isolation", "process")
	applied, err := worker.Probe(worker.Config{FontDir: "/usr/share/fonts"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "process (" + strings.Join(applied, "; ") + ")"; got != want {
		t.Errorf("isolation = %q\nwant %q", got, want)
	}
	// Lines only a started worker reports.
	for _, line := range []string{"process: one worker process per conversion slot", "memory: RSS watchdog ("} {
		if !strings.Contains(got, line) {
			t.Errorf("isolation = %q, want %q", got, line)
		}
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		if !strings.Contains(got, "syscalls: seccomp filter (sockets: AF_UNIX only") {
			t.Errorf("isolation = %q, want the seccomp filter the worker installed", got)
		}
	}
	if got := config("--isolation", "none"); got != "none" {
		t.Errorf("isolation none = %q", got)
	}
}
