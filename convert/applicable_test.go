package convert_test

import (
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestApplicableOptions: of the target's options, page needs a pdf input, dpi pdf or svg,
// pages the catalog's say-so, and the image transforms an image input.
func TestApplicableOptions(t *testing.T) {
	gif := convert.Format{ID: "gif", Category: convert.CategoryImage, Options: []string{"width", "page", "pages", "dpi", "rotate", "background", "max_bytes"}}
	cases := []struct {
		input convert.Format
		pages bool
		want  []string
	}{
		{convert.Format{ID: "png", Category: convert.CategoryImage}, false, []string{"width", "rotate", "background", "max_bytes"}},
		{convert.Format{ID: "svg", Category: convert.CategoryImage}, false, []string{"width", "dpi", "rotate", "background", "max_bytes"}},
		{convert.Format{ID: "pdf", Category: convert.CategoryDocument}, true, []string{"width", "page", "pages", "dpi", "background", "max_bytes"}},
	}
	for _, tc := range cases {
		if got := convert.ApplicableOptions(tc.input, gif, tc.pages); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s to gif: %v, want %v", tc.input.ID, got, tc.want)
		}
	}
	err := convert.Options{Quality: 5}.ValidateConversion(cases[0].input, gif, false)
	if want := "options.quality: not accepted when converting to gif (accepted: width, rotate, background, max_bytes)"; err == nil || err.Error() != want {
		t.Errorf("ValidateConversion: %v, want %s", err, want)
	}
}
