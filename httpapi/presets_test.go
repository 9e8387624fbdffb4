package httpapi_test

import (
	"archive/zip"
	"bytes"
	"mime"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestAPI_Presets: an operator defines, reads, lists, replaces and removes presets; PUT checks
// the target and options against the catalog; a job created from a preset takes its target
// and options; options beside a preset, a different target and an unknown preset are 400; a
// presets-only key can create nothing else (403 presets_only). Runs on every backend.
func TestAPI_Presets(t *testing.T) {
	e := testenv.Start(t)
	admin := e.AdminToken
	must(t, e.Do("PUT", "/v1/admin/presets/web-thumb", e.Key, map[string]any{"target_format": "webp"}), 403, "unauthorized")
	must(t, e.Do("GET", "/v1/admin/presets/web-thumb", admin, nil), 404, "not_found")
	must(t, e.Do("PUT", "/v1/admin/presets/Web", admin, map[string]any{"target_format": "webp"}), 400, "invalid_request")
	must(t, e.Do("PUT", "/v1/admin/presets/x", admin, map[string]any{"target_format": "nope"}), 400, "unsupported_format")
	must(t, e.Do("PUT", "/v1/admin/presets/x", admin, map[string]any{"options": map[string]any{"width": 3}}), 400, "invalid_request")
	must(t, e.Do("PUT", "/v1/admin/presets/x", admin, map[string]any{"target_format": "webp", "options": map[string]any{"width": 0, "quality": 101}}), 400, "invalid_request")
	must(t, e.Do("PUT", "/v1/admin/presets/x", admin, map[string]any{"target_format": "csv", "options": map[string]any{"width": 10}}), 400, "invalid_request")
	must(t, e.Do("PUT", "/v1/admin/presets/x", admin, map[string]any{"target_format": "webp", "opts": map[string]any{}}), 400, "invalid_request")

	r := e.Do("PUT", "/v1/admin/presets/web-thumb", admin, map[string]any{"target_format": "webp", "options": map[string]any{"width": 320, "quality": 75}})
	must(t, r, 201, "")
	if m := r.Map(t); m["name"] != "web-thumb" || m["target_format"] != "webp" || m["options"].(map[string]any)["width"] != 320.0 {
		t.Fatalf("PUT answered %v", m)
	}
	must(t, e.Do("PUT", "/v1/admin/presets/jpeg-small", admin, map[string]any{"target_format": "jpeg", "options": map[string]any{"width": 16}}), 201, "")
	must(t, e.Do("PUT", "/v1/admin/presets/jpeg-small", admin, map[string]any{"target_format": "jpeg", "options": map[string]any{"width": 8}}), 200, "")
	r = e.Do("GET", "/v1/admin/presets", admin, nil)
	must(t, r, 200, "")
	var names []string
	for _, p := range r.Map(t)["data"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"jpeg-small", "web-thumb"}) {
		t.Fatalf("list %v", names)
	}
	r = e.Do("GET", "/v1/admin/presets/jpeg-small", admin, nil)
	must(t, r, 200, "")
	if w := r.Map(t)["options"].(map[string]any)["width"]; w != 8.0 {
		t.Fatalf("replaced preset's width %v", w)
	}

	// Create with a preset.
	png := testenv.Sample(t, "images/sample.png")
	r = e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "target_format": "jpeg", "preset": "jpeg-small", "input_bytes": len(png)})
	must(t, r, 200, "")
	res := r.Map(t)["job"].(map[string]any)
	if res["target_format"] != "jpeg" {
		t.Fatalf("job from preset: %v", res)
	}
	// target_format stays required (SPEC.md), also beside a preset.
	must(t, e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "preset": "jpeg-small", "input_bytes": 10}), 400, "invalid_request")
	r = e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "target_format": "webp", "preset": "jpeg-small", "input_bytes": 10})
	must(t, r, 400, "invalid_request")
	r = e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "target_format": "jpeg", "preset": "jpeg-small", "input_bytes": 10, "options": map[string]any{"quality": 50, "height": 4}})
	must(t, r, 400, "invalid_request")
	if msg := string(r.Body); !strings.Contains(msg, "quality, height") {
		t.Fatalf("message does not name the options: %s", msg)
	}
	r = e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "png", "target_format": "jpeg", "preset": "nope", "input_bytes": 10})
	must(t, r, 400, "invalid_request")
	if !strings.Contains(string(r.Body), `preset \"nope\" does not exist`) {
		t.Fatalf("unknown preset: %s", r.Body)
	}
	must(t, e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "csv", "target_format": "jpeg", "preset": "jpeg-small", "input_bytes": 10}), 400, "unsupported_format")

	// A presets-only key.
	r = e.Do("POST", "/v1/admin/accounts/"+e.AccountID+"/keys", admin, map[string]any{"presets_only": true})
	must(t, r, 200, "")
	if r.Map(t)["presets_only"] != true {
		t.Fatalf("key %s", r.Body)
	}
	front := r.Map(t)["key"].(string)
	must(t, e.Do("POST", "/v1/admin/accounts/"+e.AccountID+"/keys", admin, map[string]any{"presets_only": "yes"}), 400, "invalid_request")
	must(t, e.Do("POST", "/v1/jobs", front, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10}), 403, "presets_only")
	must(t, e.Do("POST", "/v1/jobs", front, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10, "options": map[string]any{"width": 5}}), 403, "presets_only")
	r = e.Do("POST", "/v1/jobs", front, map[string]any{"input_format": "png", "target_format": "jpeg", "preset": "jpeg-small", "input_bytes": len(png)})
	must(t, r, 200, "")
	id := r.Map(t)["job"].(map[string]any)["id"].(string)
	must(t, e.Upload(r.Map(t)["upload_url"].(string), png), 200, "")
	must(t, e.Start(front, id), 200, "")
	if j := e.WaitFinished(front, id); j.Status != "succeeded" {
		t.Fatalf("preset job %+v", j)
	}

	r = e.Do("DELETE", "/v1/admin/presets/jpeg-small", admin, nil)
	must(t, r, 200, "")
	if r.Map(t)["name"] != "jpeg-small" {
		t.Fatalf("DELETE answered %s", r.Body)
	}
	must(t, e.Do("DELETE", "/v1/admin/presets/jpeg-small", admin, nil), 404, "not_found")
	must(t, e.Do("POST", "/v1/jobs", front, map[string]any{"input_format": "png", "target_format": "jpeg", "preset": "jpeg-small", "input_bytes": 10}), 400, "invalid_request")
}

// TestAPI_Pages: create checks pages where it applies; a job of every page of a PDF as PNG
// succeeds with a zip (application/zip, <id>.zip) that unzip -l lists; a page past the last
// fails the job naming the count.
func TestAPI_Pages(t *testing.T) {
	e := testenv.Start(t)
	pdf := testenv.Sample(t, "documents/sample.pdf")
	create := func(input, target string, opts map[string]any) testenv.Response {
		return e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": input, "target_format": target, "input_bytes": len(pdf), "options": opts})
	}
	for _, bad := range []map[string]any{{"pages": "0"}, {"pages": "3-1"}, {"pages": "1,1"}, {"pages": "x"}, {"pages": "1", "page": 2}, {"pages": ""}} {
		r := create("pdf", "png", bad)
		if bad["pages"] == "" {
			// An empty string is no option at all.
			must(t, r, 200, "")
			continue
		}
		must(t, r, 400, "invalid_request")
	}
	must(t, create("png", "jpeg", map[string]any{"pages": "all"}), 400, "invalid_request")
	must(t, create("markdown", "pdf", map[string]any{"pages": "all"}), 400, "invalid_request")
	must(t, create("markdown", "png", map[string]any{"pages": "all"}), 200, "")

	run := func(target string, opts map[string]any) testenv.Job {
		r := create("pdf", target, opts)
		must(t, r, 200, "")
		m := r.Map(t)
		id := m["job"].(map[string]any)["id"].(string)
		must(t, e.Upload(m["upload_url"].(string), pdf), 200, "")
		must(t, e.Start(e.Key, id), 200, "")
		return e.WaitFinished(e.Key, id)
	}
	j := run("png", map[string]any{"pages": "all", "dpi": 50})
	if j.Status != "succeeded" || j.Output == nil {
		t.Fatalf("pages job %+v", j)
	}
	r := e.Do("GET", j.Output.URL, "", nil)
	must(t, r, 200, "")
	if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
		t.Fatalf("Content-Type %q", ct)
	}
	if _, params, _ := mime.ParseMediaType(r.Header.Get("Content-Disposition")); params["filename"] != j.ID+".zip" {
		t.Fatalf("Content-Disposition %q", r.Header.Get("Content-Disposition"))
	}
	if _, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body))); err != nil {
		t.Fatal(err)
	}
	if unzip, err := exec.LookPath("unzip"); err == nil {
		path := filepath.Join(t.TempDir(), "pages.zip")
		os.WriteFile(path, r.Body, 0o600)
		out, err := exec.Command(unzip, "-l", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := regexp.MustCompile(`page-\d{4}\.png`).FindAllString(string(out), -1); !slices.Equal(got, []string{"page-0001.png", "page-0002.png", "page-0003.png"}) {
			t.Fatalf("unzip -l: %s", out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("unzip is not installed")
	}

	j = run("png", map[string]any{"pages": "2-9"})
	if j.Status != "failed" || j.ErrorCode == nil || *j.ErrorCode != "conversion_failed" || j.ErrorMessage == nil || !strings.Contains(*j.ErrorMessage, "pages: 9 is past the last page (3)") {
		t.Fatalf("past the last page: %+v", j)
	}
}
