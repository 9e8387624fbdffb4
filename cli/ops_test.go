package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

func TestCLI_ServeHelpShowsDefaultsAndEnvironment(t *testing.T) {
	out, err := run(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`--data string`, `(default "./convsvc-data")`, `[$CONVSVC_DATA]`,
		`(default "127.0.0.1:8080")`, `[$CONVSVC_LISTEN]`, `[$CONVSVC_BLOB_LISTEN]`,
		`[$CONVSVC_METRICS_LISTEN]`, `(default 24h0m0s)`, `[$CONVSVC_RETENTION]`,
		`(default 30s)`, `[$CONVSVC_DRAIN_TIMEOUT]`, `[$CONVSVC_ADMIN_TOKEN, $CONVSVC_ADMIN_TOKEN_FILE]`,
		`(default: number of CPUs)`, `(default "text")`, `[$CONVSVC_LOG_FORMAT]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	// Every flag line names its environment twin.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") && !strings.Contains(line, "--help") && !strings.Contains(line, "[$CONVSVC_") {
			t.Errorf("flag without its environment twin: %s", line)
		}
	}
}

func TestCLI_ConfigShowsEffectiveValuesAndMasksSecrets(t *testing.T) {
	data := t.TempDir()
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("cs_admin_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONVSVC_LISTEN", "0.0.0.0:9000")
	t.Setenv("CONVSVC_ADMIN_TOKEN_FILE", secret)
	t.Setenv("CONVSVC_CACHE_HIT_CENTS", "0")
	out, err := run(t, "config", "--data", data, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]struct{ Env, Value, Source string }
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checks := map[string][2]string{
		"data":            {data, "flag"},
		"listen":          {"0.0.0.0:9000", "env"},
		"public-url":      {"http://0.0.0.0:9000", "default"},
		"blob-listen":     {"127.0.0.1:8081", "default"},
		"admin-token":     {"********", "env_file"},
		"workers":         {strconv.Itoa(runtime.GOMAXPROCS(0)), "default"},
		"retention":       {"24h0m0s", "default"},
		"metrics-listen":  {"", "default"},
		"drain-timeout":   {"30s", "default"},
		"log-format":      {"text", "default"},
		"max-attempts":    {"3", "default"},
		"blob-public-url": {"http://127.0.0.1:8081", "default"},
		"cache-hit-cents": {"0", "env"},
	}
	// The values serve computes at start, not the flags' 0 (TestCLI_ConfigShowsS3MaskedAndDefaultsUnchanged
	// checks that only the object storage in use shows its flags).
	conns, perAddr := service.ConnectionLimits(service.FileLimit(), runtime.GOMAXPROCS(0), 0, 0)
	checks["max-connections-per-address"] = [2]string{strconv.Itoa(perAddr), "default"}
	if got := cfg["max-connections"].Value; !strings.HasPrefix(got, strconv.Itoa(conns)+" (from the open-file limit, ") {
		t.Errorf("max-connections = %q, want %d from the open-file limit", got, conns)
	}
	if mem := (convert.Limits{}).Normalized().MaxConversionMemory; !strings.Contains(cfg["max-conversion-memory"].Value, fmt.Sprintf(", %d bytes (half of", mem)) {
		t.Errorf("max-conversion-memory = %q, want %d bytes", cfg["max-conversion-memory"].Value, mem)
	}
	for flag, want := range checks {
		if got := cfg[flag]; got.Value != want[0] || got.Source != want[1] {
			t.Errorf("%s = %q from %s, want %q from %s", flag, got.Value, got.Source, want[0], want[1])
		}
	}
	if cfg["admin-token"].Env != "CONVSVC_ADMIN_TOKEN, CONVSVC_ADMIN_TOKEN_FILE" || cfg["listen"].Env != "CONVSVC_LISTEN" {
		t.Errorf("env names %v %v", cfg["admin-token"], cfg["listen"])
	}
	if strings.Contains(out, "fromfile") {
		t.Error("the secret is printed")
	}
	serve, _, err := cli.NewRootCommand().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := cfg[f.Name]; !ok && !strings.HasPrefix(f.Name, "s3-") { // S3's flags show with s3:// only
			t.Errorf("config does not show --%s", f.Name)
		}
	})

	// Text: a table; a token given on the command line is masked too.
	t.Setenv("CONVSVC_ADMIN_TOKEN_FILE", "")
	os.Unsetenv("CONVSVC_ADMIN_TOKEN_FILE")
	out, err = run(t, "config", "--data", data, "--admin-token", "cs_admin_onflag")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "onflag") || !regexp.MustCompile(`--admin-token\s+\*{8}\s+flag`).MatchString(out) ||
		!regexp.MustCompile(`--listen\s+0\.0\.0\.0:9000\s+env\s+CONVSVC_LISTEN`).MatchString(out) {
		t.Errorf("text output:\n%s", out)
	}
	// Bad values are refused as serve would refuse them.
	if _, err := run(t, "config", "--log-format", "xml"); err == nil {
		t.Error("config accepted --log-format xml")
	}
}

func TestCLI_AdminBackup(t *testing.T) {
	e := testenv.Start(t)
	job := e.Create(e.Key, "png", "jpeg", 10)
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	dir := t.TempDir()
	path := filepath.Join(dir, "b.db")
	if _, err := run(t, "admin", "backup", "-o", path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left: %v", entries)
	}
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if j, err := st.Job(e.AccountID, job.Job.ID); err != nil || j.Status != "created" {
		t.Fatalf("job in backup: %+v %v", j, err)
	}
	if err := st.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	// A wrong token writes nothing.
	bad := filepath.Join(dir, "bad.db")
	if _, err := run(t, "admin", "backup", "-o", bad, "--admin-token", "nope"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("wrong token: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed backup left files: %v", entries)
	}
}

// TestCLI_AdminBackupOnPostgres: the binary's admin backup against a PostgreSQL server prints
// the API's 501 not_implemented naming pg_dump, with the request id the server logged, and
// exits 1 having written nothing.
func TestCLI_AdminBackupOnPostgres(t *testing.T) {
	e := testenv.Start(t, testenv.Postgres(t))
	dir := t.TempDir()
	_, stderr, code := runBinary(t, dir, nil, []string{"CONVSVC_SERVER=" + e.URL, "CONVSVC_ADMIN_TOKEN=" + e.AdminToken},
		"admin", "backup", "-o", "b.db")
	if code != 1 || !regexp.MustCompile(`^convsvc: not_implemented: .*pg_dump.* \(request id req_[0-9a-f]+\)\n$`).MatchString(stderr) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused backup left files: %v", entries)
	}
}

// TestCLI_APIErrorsNameTheRequestID: every API error the CLI prints ends with the request id,
// the one the server answered with.
func TestCLI_APIErrorsNameTheRequestID(t *testing.T) {
	e := testenv.Start(t)
	for _, args := range [][]string{
		{"admin", "accounts", "list", "--admin-token", "wrong"},
		{"admin", "accounts", "get", "acct_nosuchaccount", "--admin-token", e.AdminToken},
		{"admin", "backup", "-o", "b.db", "--admin-token", "wrong"},
	} {
		_, stderr, code := runBinary(t, t.TempDir(), nil, []string{"CONVSVC_SERVER=" + e.URL}, args...)
		if code != 1 || !regexp.MustCompile(`^convsvc: [a-z_]+: .* \(request id req_[0-9a-f]+\)\n$`).MatchString(stderr) {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

func TestCLI_FormatsShowsTargetsAndOptions(t *testing.T) {
	local, err := run(t, "formats", "png")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+jpeg\s+.*quality`).MatchString(local) || !strings.Contains(local, "converts from:") {
		t.Fatalf("formats png:\n%s", local)
	}
	// The same from a running server (CONVSVC_URL), as a table and as JSON.
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	remote, err := run(t, "formats", "png")
	if err != nil || remote != local {
		t.Fatalf("remote differs from local (%v):\n%s\n---\n%s", err, remote, local)
	}
	out, err := run(t, "formats", "jpg", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		ID            string              `json:"id"`
		Targets       []string            `json:"targets"`
		Options       []string            `json:"options"`
		TargetOptions map[string][]string `json:"target_options"`
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil || f.ID != "jpeg" || len(f.Targets) == 0 || len(f.TargetOptions) != len(f.Targets) {
		t.Fatalf("%v %s", err, out)
	}
	table, err := run(t, "formats")
	if err != nil || !strings.Contains(table, "CONVERTS TO") || !regexp.MustCompile(`(?m)^png\s+image`).MatchString(table) {
		t.Fatalf("%v\n%s", err, table)
	}
	if _, err := run(t, "formats", "nope"); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("unknown format: %v", err)
	}
}

func TestCLI_ConvertOutputIsOneLinePerFileWhenNotATerminal(t *testing.T) {
	dir := t.TempDir()
	sample := testenv.Sample(t, "images/sample.png")
	var inputs []string
	for _, name := range []string{"a.png", "b.png", "c.png"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, sample, 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
	}
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	out, err := run(t, append([]string{"convert", "--to", "jpeg", "--output-dir", outDir, "--parallel", "3"}, inputs...)...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("want exactly three summary lines, got %q", out)
	}
	line := regexp.MustCompile(`^(\S+) -> (\S+) \(\d+ bytes, job_[0-9A-Za-z]+\)$`)
	seen := map[string]bool{}
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("summary line %q", l)
		}
		seen[m[1]] = true
		if _, err := os.Stat(m[2]); err != nil {
			t.Errorf("output %s: %v", m[2], err)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("lines %q", lines)
	}
	// --json: one Job per line.
	out, err = run(t, "convert", "--to", "gif", "--output-dir", outDir, "--json", inputs[0])
	var job struct{ ID, Status string }
	if err != nil || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &job) != nil || job.Status != "succeeded" {
		t.Fatalf("--json: %v %q", err, out)
	}
}
