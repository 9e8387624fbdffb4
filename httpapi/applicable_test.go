package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestCreate_AcceptedListsWhatApplies: create's refusal of an option the target does not take
// stays 400 invalid_request, and its "accepted" list names only the options that apply to that
// input: no page, pages or dpi for a PNG input, no image transforms for a PDF input.
func TestCreate_AcceptedListsWhatApplies(t *testing.T) {
	e := testenv.Start(t)
	cases := []struct{ input, target, want string }{
		{"png", "gif", "options.quality: not accepted when converting to gif (accepted: width, height, fit, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes)"},
		{"pdf", "gif", "options.quality: not accepted when converting to gif (accepted: width, height, fit, page, pages, dpi, background, max_bytes)"},
	}
	for _, tc := range cases {
		r := e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": tc.input, "target_format": tc.target, "input_bytes": 10,
			"options": map[string]any{"quality": 50}})
		must(t, r, 400, "invalid_request")
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Error.Message != tc.want {
			t.Errorf("%s to %s: %v %s\nwant message %q", tc.input, tc.target, err, r.Body, tc.want)
		}
	}
}
