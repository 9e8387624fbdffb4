package cli_test

import (
	"regexp"
	"testing"
)

// TestFormats_ShowsWhatApplies: convsvc formats ID lists, per target, only the options that
// apply to that input: a PNG input has no page, pages or dpi; a PDF input has no image
// transforms.
func TestFormats_ShowsWhatApplies(t *testing.T) {
	for id, want := range map[string]string{
		"png": `(?m)^  gif\s+width, height, fit, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes$`,
		"pdf": `(?m)^  gif\s+width, height, fit, page, pages, dpi, background, max_bytes$`,
	} {
		out, err := run(t, "formats", id)
		if err != nil || !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("formats %s (%v):\n%s\nwant a line matching %s", id, err, out, want)
		}
	}
}
