package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// goModRequires reads go.mod's requirements: direct ones, and all (direct and indirect).
func goModRequires(t *testing.T, root string) (direct, all map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	direct, all = map[string]bool{}, map[string]bool{}
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		all[fields[0]] = true
		if !strings.Contains(line, "// indirect") {
			direct[fields[0]] = true
		}
	}
	return direct, all
}

var modulePath = regexp.MustCompile("[a-z0-9][a-z0-9.-]*\\.[a-z]+/[A-Za-z0-9_./-]*[A-Za-z0-9_]")

// docModules reads the module paths in the first column of docs/dependencies.md's tables.
func docModules(t *testing.T, root string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "dependencies.md"))
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| module") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range modulePath.FindAllString(first, -1) {
			mods[m] = true
		}
	}
	return mods
}

// covers reports whether module m is path p or one of p's modules (github.com/aws/aws-sdk-go-v2
// covers github.com/aws/aws-sdk-go-v2/service/s3).
func covers(p, m string) bool { return m == p || strings.HasPrefix(m, p+"/") }

// docs/dependencies.md lists every module go.mod requires directly, and only modules in the
// build's module graph: a module nothing imports any more cannot stay in the doc.
func TestDocs_DependenciesMatchGoMod(t *testing.T) {
	root := testenv.RepoRoot(t)
	direct, all := goModRequires(t, root)
	documented := docModules(t, root)
	for m := range direct {
		ok := false
		for d := range documented {
			ok = ok || covers(d, m)
		}
		if !ok {
			t.Errorf("go.mod requires %s directly; docs/dependencies.md does not list it (licence, what, why)", m)
		}
	}
	for d := range documented {
		ok := false
		for m := range all {
			ok = ok || covers(d, m)
		}
		if !ok {
			t.Errorf("docs/dependencies.md lists %s, which go.mod does not require: remove it", d)
		}
	}
}

// The README and the docs link only to files inside the repository, and those files exist.
func TestDocs_LinksStayInsideTheRepository(t *testing.T) {
	root := testenv.RepoRoot(t)
	// Markdown links, and paths written as code (`../shared/SPEC.md`).
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)|` + "`" + `(\.\./[^` + "`" + `\s]+)` + "`")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[3]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(filepath.Dir(f), target)
			rel, err := filepath.Rel(root, abs)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links outside the repository: %s", filepath.Base(f), target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(f), target)
			}
		}
	}
}

// The README's curl walkthrough runs as written against a real server: only the key line is
// given the server's key, and API comes from the environment (the block defaults it).
func TestDocs_READMECurlWalkthrough(t *testing.T) {
	out, tmp := runREADMEScript(t, "### API walkthrough with curl")
	jpgs, _ := filepath.Glob(filepath.Join(tmp, "*", "sample.jpg"))
	if len(jpgs) != 1 {
		t.Fatalf("the walkthrough wrote no sample.jpg under its temp dir:\n%s", out)
	}
	if jpg, _ := os.ReadFile(jpgs[0]); !bytes.HasPrefix(jpg, []byte{0xFF, 0xD8}) {
		t.Fatalf("sample.jpg is not a JPEG:\n%s", out)
	}
	if !strings.Contains(out, `"status":"succeeded"`) {
		t.Fatalf("the job did not succeed:\n%s", out)
	}
}

// TestDocs_READMEBatchWalkthrough runs the README's batch block: two jobs, one start, one wait,
// one archive holding the manifest and both outputs.
func TestDocs_READMEBatchWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("unzip"); err != nil {
		t.Skip("no unzip")
	}
	out, tmp := runREADMEScript(t, "### Many files: a batch with curl")
	zips, _ := filepath.Glob(filepath.Join(tmp, "*", "batch.zip"))
	if len(zips) != 1 {
		t.Fatalf("the walkthrough wrote no batch.zip:\n%s", out)
	}
	for _, want := range []string{`"status":"finished"`, `"succeeded":2`, "manifest.json", "0.jpg", "1.webp"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the walkthrough's output lacks %s:\n%s", want, out)
		}
	}
}

// TestDocs_READMEEventsWalkthrough runs the README's events block: a job's stream ends after
// its success, with the webhook event's id, and a resume after its queued event starts later.
func TestDocs_READMEEventsWalkthrough(t *testing.T) {
	out, _ := runREADMEScript(t, "### Following a job live with curl")
	first, resumed, ok := strings.Cut(out, "event: job.succeeded")
	if !ok || !strings.Contains(first, "event: job.queued") || !strings.Contains(first, "event: job.running") {
		t.Fatalf("the first stream lacks queued, running or succeeded:\n%s", out)
	}
	if !regexp.MustCompile(`id: evt_job_[A-Za-z0-9]+_succeeded`).MatchString(out) {
		t.Fatalf("no succeeded event with the webhook's id:\n%s", out)
	}
	if !strings.Contains(resumed, "event: job.succeeded") || strings.Contains(resumed, "event: job.queued") {
		t.Fatalf("the resumed stream is not the events after queued:\n%s", resumed)
	}
}

// runREADMEScript runs the first sh block after heading in README.md with bash -e against a
// real server (the export KEY= line gets its key), and returns its output and its TMPDIR.
func runREADMEScript(t *testing.T, heading string) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), heading)
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	script, _, _ := strings.Cut(rest, "```")
	e := testenv.Start(t)
	keyLine := regexp.MustCompile(`(?m)^export KEY=cs_live_\.\.\..*$`)
	if !keyLine.MatchString(script) {
		t.Fatalf("the walkthrough's key line changed:\n%s", script)
	}
	script = keyLine.ReplaceAllString(script, "export KEY="+e.Key)
	tmp := t.TempDir()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "API="+e.URL, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough: %v\n%s", err, out)
	}
	return string(out), tmp
}
