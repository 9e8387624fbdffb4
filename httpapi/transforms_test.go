package httpapi_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestAPI_SameFormatJobs: an image format is its own target; with no option that changes the
// output, create is 400 unsupported_format (SPEC: the target must differ from the input) naming
// the options that would; with one, the job runs.
func TestAPI_SameFormatJobs(t *testing.T) {
	e := testenv.Start(t)
	r := e.Do("GET", "/v1/formats/jpeg", "", nil)
	must(t, r, 200, "")
	detail := r.Map(t)
	if !slices.Contains(toStrings(detail["targets"]), "jpeg") || !slices.Contains(toStrings(detail["sources"]), "jpeg") {
		t.Fatalf("jpeg targets %v sources %v, want jpeg among both", detail["targets"], detail["sources"])
	}

	r = e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "jpeg", "target_format": "jpeg", "input_bytes": 10})
	must(t, r, 400, "unsupported_format")
	if want := "converting jpeg to jpeg changes nothing without an option; set one of: quality, width, height, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes"; !strings.Contains(string(r.Body), want) {
		t.Errorf("create without options: %s, want %q", r.Body, want)
	}

	var src bytes.Buffer
	m := image.NewRGBA(image.Rect(0, 0, 64, 32))
	jpeg.Encode(&src, m, nil)
	job, _ := convertWithOptions(t, e, "jpeg", "jpeg", map[string]any{"rotate": 90}, src.Bytes())
	if job.Status != client.StatusSucceeded || job.Output == nil {
		t.Fatalf("jpeg to jpeg rotated: %+v", job)
	}
	resp, err := http.Get(job.Output.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cfg, err := jpeg.DecodeConfig(resp.Body)
	if err != nil || cfg.Width != 32 || cfg.Height != 64 {
		t.Fatalf("output %dx%d, %v; want 32x64", cfg.Width, cfg.Height, err)
	}

	// max_bytes below any output: the job fails conversion_failed, saying why.
	job, _ = convertWithOptions(t, e, "jpeg", "png", map[string]any{"max_bytes": 10}, src.Bytes())
	if job.Status != client.StatusFailed || job.ErrorCode == nil || *job.ErrorCode != client.CodeConversionFailed ||
		job.ErrorMessage == nil || !strings.Contains(*job.ErrorMessage, "does not fit max_bytes 10") ||
		job.ErrorReason == nil || *job.ErrorReason != "output_too_large" {
		t.Fatalf("max_bytes 10: %+v", job)
	}
	// A crop outside the picture is known only once it is read: a job error naming its size.
	job, _ = convertWithOptions(t, e, "jpeg", "png", map[string]any{"crop": map[string]int{"left": 60, "top": 0, "width": 10, "height": 10}}, src.Bytes())
	if job.Status != client.StatusFailed || job.ErrorMessage == nil || !strings.Contains(*job.ErrorMessage, "64x32") {
		t.Fatalf("crop outside: %+v", job)
	}
}
