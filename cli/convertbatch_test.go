package cli_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// Issue 33 item 2: many files go through one batch, a handful of API requests whatever their
// number: one create, one start, the waits, one archive; no per-file job requests.
func TestConvert_ManyFilesUseOneBatch(t *testing.T) {
	const files = 40
	e := testenv.Start(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	png := testenv.NoisePNG(t, 16, 12)
	args := []string{"convert", "--to", "jpeg", "--output-dir", "out", "--server", e.URL, "--key", e.Key}
	for i := range files {
		name := fmt.Sprintf("f%02d.png", i)
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	out, errOut, code := runBinary(t, dir, nil, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for i := range files {
		name := fmt.Sprintf("f%02d", i)
		if !strings.Contains(out, name+".png -> "+filepath.Join("out", name+".jpg")+" (") {
			t.Fatalf("no summary line for %s.png:\n%s", name, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "out", name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		if img, err := jpeg.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 16 {
			t.Fatalf("%s.jpg: %v", name, err)
		}
	}
	m := e.Scrape()
	count := func(method, route string) float64 {
		return m.Value("convsvc_http_requests_total", "server", "api", "method", method, "route", route)
	}
	if n := count("POST", "/v1/batches"); n != 1 {
		t.Fatalf("%v batch creates, want 1", n)
	}
	if n := count("POST", "/v1/batches/:id/start"); n != 1 {
		t.Fatalf("%v batch starts, want 1", n)
	}
	if n := count("GET", "/v1/batches/:id/archive"); n != 1 {
		t.Fatalf("%v archive downloads, want 1", n)
	}
	if n := count("POST", "/v1/jobs") + count("POST", "/v1/jobs/:id/start") + count("GET", "/v1/jobs/:id"); n != 0 {
		t.Fatalf("%v per-job requests for a batch", n)
	}
	if total := m.Value("convsvc_http_requests_total", "server", "api"); total > 12 {
		t.Fatalf("%v API requests for %d files, want a handful", total, files)
	}
}

// convert --zip writes every output into one zip file, named as in --output-dir.
func TestConvert_Zip(t *testing.T) {
	e := testenv.Start(t)
	dir := t.TempDir()
	png := testenv.NoisePNG(t, 10, 10)
	for _, name := range []string{"a.png", "b.png", "c.png"} {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"convert", "a.png", "b.png", "c.png", "--to", "jpeg", "--zip", "out.zip", "--server", e.URL, "--key", e.Key}
	out, errOut, code := runBinary(t, dir, nil, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	zr, err := zip.OpenReader(filepath.Join(dir, "out.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jpeg.Decode(rc); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		rc.Close()
	}
	if strings.Join(names, " ") != "a.jpg b.jpg c.jpg" {
		t.Fatalf("zip entries %v", names)
	}
	for _, name := range []string{"a.jpg", "b.jpg", "c.jpg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Fatalf("%s written beside the zip", name)
		}
	}
	if !strings.Contains(out, "a.png -> out.zip:a.jpg (") {
		t.Fatalf("summary:\n%s", out)
	}
	// The zip exists now: a second run refuses to overwrite it without --force.
	_, errOut, code = runBinary(t, dir, nil, nil, args...)
	if code == 0 || !strings.Contains(errOut, "out.zip already exists") {
		t.Fatalf("second run: exit %d, stderr %s", code, errOut)
	}
	_, errOut, code = runBinary(t, dir, nil, nil, append(args, "--output-dir", "x")...)
	if code == 0 || !strings.Contains(errOut, "--zip excludes -o and --output-dir") {
		t.Fatalf("--zip with --output-dir: exit %d, stderr %s", code, errOut)
	}
}

// A file that fails in a batch is reported with its job's error; the others are written.
func TestConvert_BatchReportsFailedFiles(t *testing.T) {
	e := testenv.Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "good.png"), testenv.NoisePNG(t, 8, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	// A PNG by its extension and first bytes, cut short: the conversion fails.
	bad := testenv.NoisePNG(t, 64, 64)[:60]
	if err := os.WriteFile(filepath.Join(dir, "bad.png"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBinary(t, dir, nil, nil, "convert", "good.png", "bad.png", "--to", "jpeg", "--server", e.URL, "--key", e.Key)
	if code == 0 || !strings.Contains(errOut, "bad.png: job ") || !strings.Contains(errOut, "conversion_failed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "good.jpg")); err != nil || !strings.Contains(out, "good.png -> good.jpg (") {
		t.Fatalf("good.jpg: %v\nstdout:\n%s", err, out)
	}
}
