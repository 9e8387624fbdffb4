package cli_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// version reports what Go stamped into the binary: built with VCS stamping, the commit and its
// time are the checkout's HEAD.
func TestVersion_ReportsCommitAndTimeFromBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary once more; -short skips it")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, _ := filepath.Abs("..")
	head, err := exec.Command("git", "-C", root, "log", "-1", "--format=%H %cI").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	commit, when, _ := strings.Cut(strings.TrimSpace(string(head)), " ")
	// Go stamps VCS information only where .git is a directory, not in a git worktree (where
	// it is a file): build in a shallow clone of HEAD holding the current files instead.
	src := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "--no-checkout", "file://"+root, src).CombinedOutput(); err != nil {
		t.Skipf("git clone: %v: %s", err, out)
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree
		}
		os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "convsvc")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version   string `json:"version"`
		Commit    string `json:"commit"`
		BuildTime string `json:"build_time"`
		Go        string `json:"go"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wantTime, _ := time.Parse(time.RFC3339, when)
	gotTime, err := time.Parse(time.RFC3339, v.BuildTime)
	if v.Commit != commit || err != nil || !gotTime.Equal(wantTime) || v.Version == "" || v.Version == "dev" || !strings.HasPrefix(v.Go, "go1.") {
		t.Fatalf("version --json = %s; want commit %s at %s", out, commit, when)
	}
	text, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(text), "\ncommit "+commit) || !strings.Contains(string(text), "\ncommit time "+v.BuildTime+"\n") {
		t.Fatalf("version: %q (%v)", text, err)
	}
}

// With --log-format json every line serve writes, on stdout and stderr, is a JSON object: the
// one-time key notice and the serving line included.
func TestServe_LogFormatJSONWritesOnlyJSON(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--listen", "127.0.0.1:0",
		"--blob-listen", "127.0.0.1:0", "--workers", "1", "--log-format", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var lines []map[string]any
	sc := bufio.NewScanner(stdout)
	key := ""
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		lines = append(lines, m)
		if k, ok := m["api_key"].(string); ok {
			key = k
		}
		if m["msg"] == "convsvc serving" {
			break
		}
	}
	if !strings.HasPrefix(key, "cs_live_") {
		t.Fatalf("no JSON line carried the default key: %v", lines)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go func() { // read stdout to its end
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
			}
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Errorf("stderr line is not JSON: %q", line)
		}
	}
	// A failure is a JSON line too, and the exit status is 1.
	cmd = exec.Command(binary, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--listen", "256.0.0.1:0", "--log-format", "json")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("bad listen address: %v, %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Errorf("line is not JSON: %q", line)
		}
	}
}
