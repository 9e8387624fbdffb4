package migratetest

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/internal/testing/tests3"
)

// scalingBlock returns the first ```sh block after the heading in docs/scaling.md, and the
// block after it (the sample output of a command, where there is one).
func scalingBlock(t *testing.T, heading string) (block, next string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/scaling.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("docs/scaling.md has no sh block under %q", heading)
	}
	block, rest, _ = strings.Cut(rest, "```")
	if _, rest, ok = strings.Cut(rest, "```\n"); ok {
		next, _, _ = strings.Cut(rest, "```")
	}
	return block, next
}

// substitute replaces the doc's example values with the test's, each of which must be there.
func substitute(t *testing.T, block string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(block, pairs[i]) {
			t.Fatalf("the doc's block no longer contains %q:\n%s", pairs[i], block)
		}
		block = strings.ReplaceAll(block, pairs[i], pairs[i+1])
	}
	return block
}

// docsBinary builds convsvc once for the docs tests, into a directory that goes on PATH.
func docsBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs the docs' commands against PostgreSQL and S3")
	}
	bin, err := testproc.Build(t.TempDir(), testenv.RepoRoot(t))
	if err != nil {
		t.Fatalf("build convsvc: %v", err)
	}
	return bin
}

// docsEnv is the environment a docs script runs in: the test process's, without the CONVSVC_
// and AWS_ variables the script is to set itself, with convsvc on PATH.
func docsEnv(bin string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CONVSVC_") && !strings.HasPrefix(kv, "CONVSVC_TEST") || strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "PATH=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return append(env, extra...)
}

func writeSecret(t *testing.T, dir, name, value string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var servingLine = regexp.MustCompile(`serving the API on (\S+) and object storage on ?(\S*)`)

// serveScript runs a docs block that ends in `convsvc serve` until it serves, checks /readyz
// and the admin API with the token the block configured, stops it with SIGTERM and returns
// its standard output and the object storage it named.
func serveScript(t *testing.T, bin, script, adminToken string) (stdout, objectStorage string) {
	t.Helper()
	work := t.TempDir()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = work
	// Where the doc's block leaves the data dir and the listeners at their defaults, the test
	// gives them a temporary directory and free loopback ports.
	cmd.Env = docsEnv(bin, "CONVSVC_DATA="+filepath.Join(work, "scratch"),
		"CONVSVC_LISTEN=127.0.0.1:0", "CONVSVC_BLOB_LISTEN=127.0.0.1:0", "CONVSVC_LOG_LEVEL=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuilder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var all lockedBuilder
	ready := make(chan [2]string, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		exited <- cmd.Wait()
	}()
	done := false
	t.Cleanup(func() {
		if !done {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	var apiURL string
	select {
	case r := <-ready:
		apiURL, objectStorage = r[0], r[1]
	case err := <-exited:
		done = true
		t.Fatalf("serve exited before serving (%v):\n%s\nstderr:\n%s", err, all.String(), stderr.String())
	case <-time.After(testtime.Scale(2 * time.Minute)):
		t.Fatalf("serve did not serve within 2 minutes:\n%s\nstderr:\n%s", all.String(), stderr.String())
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", apiURL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz", ""); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, body := get("/v1/admin/accounts", adminToken); code != http.StatusOK || !strings.Contains(body, `"default"`) {
		t.Errorf("admin accounts with the token from CONVSVC_ADMIN_TOKEN_FILE: %d %s", code, body)
	}
	// SIGTERM to the process group: convsvc drains and exits (bash, if it did not exec
	// convsvc, ends on the signal too, which is not a failure of the doc's command).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		done = true
	case <-time.After(testtime.Scale(time.Minute)):
		t.Fatal("serve did not stop within a minute of SIGTERM")
	}
	if strings.Contains(stderr.String(), "serve failed") || strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("serve logged an error:\n%s", stderr.String())
	}
	return all.String(), objectStorage
}

// lockedBuilder is a strings.Builder that a process's output goroutine and the test share.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// docs/scaling.md's "On PostgreSQL" and "S3-compatible object storage" blocks run as written
// (bash, convsvc on PATH) with the example URLs, endpoint and secret files replaced by the test
// PostgreSQL, versitygw bucket and files: the first node creates account "default" in the
// database and prints its key, the second (PostgreSQL and S3) finds it there and prints none;
// both answer /readyz and the admin API with the token from CONVSVC_ADMIN_TOKEN_FILE, and the
// second serves object storage from the bucket.
func TestDocs_ScalingServeRunsAsWritten(t *testing.T) {
	bin := docsBinary(t)
	dbURL := testpg.NewDatabase(t)
	bk := tests3.NewBucket(t, tests3.Options{})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	if password == "" {
		password = "unused-by-trust-auth"
	}
	u.User = url.User(u.User.Username())
	secrets := t.TempDir()
	const token = "cs_admin_docs_scaling_test"

	pg, _ := scalingBlock(t, "### On PostgreSQL")
	pg = substitute(t, pg,
		"'postgres://convsvc@db.internal:5432/convsvc?sslmode=require'", "'"+u.String()+"'",
		"/run/secrets/pg-password", writeSecret(t, secrets, "pg-password", password),
		"/run/secrets/admin-token", writeSecret(t, secrets, "admin-token", token))
	out, _ := serveScript(t, bin, pg, token)
	if !strings.Contains(out, `Created account "default"`) || !strings.Contains(out, "cs_live_") {
		t.Errorf("the first node on an empty database printed no default key:\n%s", out)
	}

	s3, _ := scalingBlock(t, "### S3-compatible object storage")
	s3 = substitute(t, s3,
		"s3://convsvc-files/prod", "s3://"+bk.Name+"/prod",
		"http://minio.internal:9000", bk.Endpoint,
		"CONVSVC_S3_REGION=us-east-1", "CONVSVC_S3_REGION="+bk.Region,
		"/run/secrets/s3-key-id", writeSecret(t, secrets, "s3-key-id", bk.AccessKey),
		"/run/secrets/s3-secret", writeSecret(t, secrets, "s3-secret", bk.SecretKey),
		"/run/secrets/admin-token", filepath.Join(secrets, "admin-token"),
		"postgres://convsvc@db.internal/convsvc", dbURL)
	out, objectStorage := serveScript(t, bin, s3, token)
	if strings.Contains(out, "cs_live_") {
		t.Errorf("the second node printed a new default key: it is not on the first one's database:\n%s", out)
	}
	if objectStorage != "s3://"+bk.Name+"/prod" {
		t.Errorf("object storage %q, want s3://%s/prod", objectStorage, bk.Name)
	}
}

// docs/scaling.md's `convsvc admin migrate` block runs as written (bash, ./convsvc, the
// credentials on the command line) with the example data dir, database, bucket and endpoint
// replaced by a real data dir, a fresh PostgreSQL database and a versitygw bucket; every line it
// prints has the shape of a line of the doc's sample output (numbers aside), and the lines that
// say the ledger was verified and the inputs were copied are there.
func TestDocs_ScalingMigrateRunsAsWritten(t *testing.T) {
	bin := docsBinary(t)
	src := makeSource(t)
	dbURL := testpg.NewDatabase(t)
	bk := tests3.NewBucket(t, tests3.Options{})
	block, sample := scalingBlock(t, "## Moving up: convsvc admin migrate")
	script := substitute(t, block,
		"AWS_ACCESS_KEY_ID=...", "AWS_ACCESS_KEY_ID="+bk.AccessKey,
		"AWS_SECRET_ACCESS_KEY=...", "AWS_SECRET_ACCESS_KEY="+bk.SecretKey,
		"--data /var/lib/convsvc", "--data "+src.dir,
		"'postgres://convsvc:secret@db:5432/convsvc'", "'"+dbURL+"'",
		"s3://convsvc-files/prod", "s3://"+bk.Name+"/prod",
		"http://minio:9000", bk.Endpoint,
		"--s3-region us-east-1", "--s3-region "+bk.Region)
	work := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(work, "convsvc")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = work
	cmd.Env = docsEnv(bin)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("migrate as written: %v\n%s%s", err, out, stderr)
	}
	if sample == "" {
		t.Fatal("docs/scaling.md shows no sample output after the migrate block")
	}
	number := regexp.MustCompile(`[0-9]+`)
	var shapes []*regexp.Regexp
	for _, line := range strings.Split(strings.TrimSpace(sample), "\n") {
		pattern := number.ReplaceAllString(regexp.QuoteMeta(line), `[0-9]+`)
		shapes = append(shapes, regexp.MustCompile("^"+pattern+"$"))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ok := false
		for _, s := range shapes {
			ok = ok || s.MatchString(line)
		}
		if !ok {
			t.Errorf("migrate printed a line the doc's sample output does not show: %q\nsample:\n%s", line, sample)
		}
	}
	for _, want := range []string{"database: ledger verified", "object storage: copied 3 input files ("} {
		if !strings.Contains(string(out), want) {
			t.Errorf("migrate's output lacks %q:\n%s", want, out)
		}
	}
}
