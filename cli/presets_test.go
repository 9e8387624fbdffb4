package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestCLI_Presets: admin presets set, get, list and rm; a presets-only key from admin keys
// create --presets-only; convert --preset runs the preset and is the only thing that key can
// run; option flags beside --preset are refused before anything is reserved.
func TestCLI_Presets(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	out, err := run(t, "admin", "presets", "set", "small-jpeg", `{"target_format":"jpeg","options":{"width":16,"quality":70}}`)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Name         string         `json:"name"`
		TargetFormat string         `json:"target_format"`
		Options      map[string]any `json:"options"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Name != "small-jpeg" || p.TargetFormat != "jpeg" || p.Options["width"] != 16.0 {
		t.Fatalf("set: %s (%v)", out, err)
	}
	if _, err := run(t, "admin", "presets", "set", "bad", `{"target_format":"jpeg","options":{"width":0,"fit":"stretch"}}`); err == nil {
		t.Fatal("an invalid preset was accepted")
	}
	if _, err := run(t, "admin", "presets", "set", "bad", `{"target":"jpeg"}`); err == nil || !strings.Contains(err.Error(), "target_format") {
		t.Fatalf("unknown field: %v", err)
	}
	out, err = run(t, "admin", "presets", "list")
	if err != nil || !strings.Contains(out, `"small-jpeg"`) || strings.Contains(out, `"bad"`) {
		t.Fatalf("list: %s (%v)", out, err)
	}
	out, err = run(t, "admin", "keys", "create", e.AccountID, "--presets-only")
	if err != nil || !strings.Contains(out, `"presets_only": true`) {
		t.Fatalf("keys create --presets-only: %s (%v)", out, err)
	}
	var key struct{ Key string }
	json.Unmarshal([]byte(out), &key)

	dir := workdir(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", key.Key)
	if _, _, code, _ := runIn(t, dir, "convert", "sample.png", "--to", "jpeg"); code == 0 {
		t.Fatalf("a presets-only key converted without a preset (exit %d)", code)
	}
	if _, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "--preset", "small-jpeg", "--width", "9"); code == 0 || !strings.Contains(err.Error(), "drop the option flags (width)") {
		t.Fatalf("option flags beside --preset: exit %d, %v", code, err)
	}
	if _, stderr, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "--preset", "small-jpeg"); code != 0 {
		t.Fatalf("convert --preset: exit %d, %v\n%s", code, err, stderr)
	}
	if identify, err := exec.LookPath("identify"); err == nil {
		out, err := exec.Command(identify, "-format", "%w", filepath.Join(dir, "sample.jpg")).Output()
		if err != nil || string(out) != "16" {
			t.Fatalf("identify: %q %v, want the preset's width 16", out, err)
		}
	}
	out, err = run(t, "admin", "presets", "rm", "small-jpeg")
	if err != nil || !strings.Contains(out, `"small-jpeg"`) {
		t.Fatalf("rm: %s (%v)", out, err)
	}
	if _, err := run(t, "admin", "presets", "get", "small-jpeg"); err == nil {
		t.Fatal("get after rm succeeded")
	}
}

// TestCLI_ConvertPages: --pages all of a 3-page PDF to PNG writes NAME.zip of three pages;
// --pages 3,1 of a PDF to PDF writes a 2-page PDF (pdfinfo).
func TestCLI_ConvertPages(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "doc.pdf"), testenv.Sample(t, "documents/sample.pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code, err := runIn(t, dir, "convert", "doc.pdf", "--to", "png", "--pages", "all", "--dpi", "40"); code != 0 {
		t.Fatalf("convert --pages all: exit %d, %v\n%s", code, err, stderr)
	}
	if unzip, err := exec.LookPath("unzip"); err == nil {
		out, err := exec.Command(unzip, "-l", filepath.Join(dir, "doc.zip")).Output()
		if n := len(regexp.MustCompile(`page-\d{4}\.png`).FindAllString(string(out), -1)); err != nil || n != 3 {
			t.Fatalf("unzip -l doc.zip: %d pages, %v\n%s", n, err, out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("unzip is not installed")
	}
	if _, stderr, code, err := runIn(t, dir, "convert", "doc.pdf", "--to", "pdf", "--pages", "3,1", "-o", "two.pdf"); code != 0 {
		t.Fatalf("convert pdf to pdf --pages: exit %d, %v\n%s", code, err, stderr)
	}
	if pdfinfo, err := exec.LookPath("pdfinfo"); err == nil {
		out, err := exec.Command(pdfinfo, filepath.Join(dir, "two.pdf")).Output()
		if err != nil || !regexp.MustCompile(`(?m)^Pages:\s+2$`).Match(out) {
			t.Fatalf("pdfinfo two.pdf: %v\n%s", err, out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("pdfinfo is not installed")
	}
}
