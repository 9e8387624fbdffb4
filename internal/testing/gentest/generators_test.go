package gentest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/service"
)

// The generators under test, pinned. Change a version here and in docs/openapi.md together.
const (
	ogenModule = "github.com/ogen-go/ogen"
	ogenVer    = "v1.24.0"
	oapiModule = "github.com/oapi-codegen/oapi-codegen/v2"
	oapiVer    = "v2.8.2"
	// oapiRuntimeVer is the runtime library the oapi-codegen client imports.
	oapiRuntimeVer = "v1.9.0"
)

// TestGenerators generates a client with each generator from the document a live
// server serves, builds a small program on each (testdata/ogenprog, testdata/oapiprog)
// in a temporary module, and runs it against that server: create with options,
// upload, start, wait, download, and a typed 404 not_found. The server's view of
// the job must agree with what the program printed and wrote.
//
// It needs the go command and the generators' modules, from the module proxy or the
// module cache; without them it skips, or fails with CI=true. On a warm build cache it
// takes about 10 s (docs/openapi.md), so it runs with -short too.
func TestGenerators(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command: %v", err)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	probe := exec.Command(goBin, "mod", "download", ogenModule+"@"+ogenVer, oapiModule+"@"+oapiVer,
		"github.com/oapi-codegen/runtime@"+oapiRuntimeVer)
	probe.Dir, probe.Env = t.TempDir(), env
	if out, err := probe.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("download the generators: %v\n%s", err, out)
		}
		t.Skipf("the generators' modules are neither cached nor downloadable: %v\n%s", err, out)
	}

	var key string
	srv, err := service.Run(service.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(_, k string) { key = k },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	// The temporary module: the document as the server serves it, the generated
	// packages and the two programs.
	mod := t.TempDir()
	doc := get(t, srv.URL()+"/v1/openapi.json", "")
	write(t, filepath.Join(mod, "openapi.json"), doc)
	write(t, filepath.Join(mod, "go.mod"), []byte(fmt.Sprintf(
		"module gentest\n\ngo 1.24\n\nrequire (\n\t%s %s\n\tgithub.com/oapi-codegen/runtime %s\n)\n",
		ogenModule, ogenVer, oapiRuntimeVer)))
	for _, prog := range []string{"ogenprog", "oapiprog"} {
		src, err := os.ReadFile(filepath.Join("testdata", prog, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(mod, "cmd", prog, "main.go"), src)
	}
	if err := os.MkdirAll(filepath.Join(mod, "oapi"), 0o755); err != nil {
		t.Fatal(err)
	}

	gocmd := func(name string, args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = mod
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: go %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		t.Logf("%s: %.1fs", name, time.Since(start).Seconds())
	}
	gocmd("ogen", "run", ogenModule+"/cmd/ogen@"+ogenVer, "-target", "ogenapi", "-package", "ogenapi", "-clean", "openapi.json")
	gocmd("oapi-codegen", "run", oapiModule+"/cmd/oapi-codegen@"+oapiVer,
		"-generate", "types,client", "-package", "oapi", "-o", "oapi/oapi.gen.go", "openapi.json")
	// -mod=mod completes go.mod and go.sum. -trimpath keeps the temporary directory out
	// of the build cache's keys, so that the generated packages compile once per document
	// rather than once per run.
	gocmd("build", "build", "-trimpath", "-o", filepath.Join(mod, "bin")+string(filepath.Separator), "./cmd/...")

	in, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "images", "sample.png"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"ogenprog", "oapiprog"} {
		t.Run(prog, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jpg")
			cmd := exec.Command(filepath.Join(mod, "bin", prog), "-api", srv.URL(), "-key", key, "-in", in, "-out", out)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", prog, err, stdout.String(), stderr.String())
			}
			want := regexp.MustCompile(`^created (job_\S+) status=created attempt=0 quality=50
uploaded ` + fmt.Sprint(len(input)) + ` bytes
started status=(queued|running|succeeded)
finished status=succeeded error_code_null=true sha256=([0-9a-f]{64})
downloaded (\d+) bytes sha256=([0-9a-f]{64})
typed error code=not_found message_set=true
$`)
			m := want.FindStringSubmatch(stdout.String())
			if m == nil {
				t.Fatalf("%s printed:\n%s\nwant to match:\n%s", prog, stdout.String(), want)
			}
			id, reported, downloaded := m[1], m[3], m[5]

			// What the program wrote is what the server converted.
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != reported || got != downloaded {
				t.Errorf("%s: file sha256 %s, job says %s, program computed %s", prog, got, reported, downloaded)
			}
			if !bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}) || m[4] != fmt.Sprint(len(data)) {
				t.Errorf("%s: output is %d bytes (printed %s) starting % x, want a JPEG", prog, len(data), m[4], data[:min(len(data), 4)])
			}
			var job struct {
				Status  string `json:"status"`
				Options struct {
					Quality int `json:"quality"`
				} `json:"options"`
				Output struct {
					Bytes  int    `json:"bytes"`
					SHA256 string `json:"sha256"`
				} `json:"output"`
			}
			if err := json.Unmarshal(get(t, srv.URL()+"/v1/jobs/"+id, key), &job); err != nil {
				t.Fatal(err)
			}
			if job.Status != "succeeded" || job.Options.Quality != 50 || job.Output.SHA256 != reported || job.Output.Bytes != len(data) {
				t.Errorf("%s: server has job %s as %+v, want succeeded, quality 50, %d bytes, sha256 %s", prog, id, job, len(data), reported)
			}
		})
	}
}

func get(t *testing.T, url, key string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return body
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
