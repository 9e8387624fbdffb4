package svg

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestSVG_CoveredText: only text a later shape may reach is drawn into a PDF's picture.
func TestSVG_CoveredText(t *testing.T) {
	useFontDir(t, "")
	for _, tc := range []struct {
		body string
		want []bool
	}{
		{`<text x="5" y="30">A</text><rect x="0" y="0" width="50" height="50"/>`, []bool{true}},
		{`<rect x="0" y="0" width="50" height="50"/><text x="5" y="30">A</text>`, []bool{false}},
		{`<text x="5" y="30">A</text><rect x="150" y="100" width="10" height="10"/>`, []bool{false}},
		// A stroke reaches past the shape's outline.
		{`<text x="5" y="30">A</text><rect x="30" y="10" width="10" height="10" fill="none" stroke="red" stroke-width="30"/>`, []bool{true}},
		// Nothing painted reaches nothing.
		{`<text x="5" y="30">A</text><rect x="0" y="0" width="50" height="50" fill="none"/>`, []bool{false}},
		{`<text x="5" y="30">A</text><rect x="0" y="0" width="50" height="50"/><text x="5" y="30">B</text>`, []bool{true, false}},
	} {
		svg := `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="120">` + tc.body + `</svg>`
		s, err := parseSVG(context.Background(), []byte(svg))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.coveredText(context.Background(), s.matrix(200, 120, 200, 120, convert.FitFill), 200, 120)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: covered %v, want %v", tc.body, got, tc.want)
		}
	}
}

// TestSVG_PaintMarkForged: an input carrying the paint-order mark's attribute or miter limit
// changes nothing but the order (all text last), and the marks never reach oksvg's paths.
func TestSVG_PaintMarkForged(t *testing.T) {
	useFontDir(t, "")
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60">` +
		`<path d="M0 0" fill="none" stroke="none" stroke-miterlimit="0.000123" ` + svgMarkAttr + `="1"/>` +
		`<text x="5" y="50">A</text><rect width="10" height="10"/></svg>`
	s, err := parseSVG(context.Background(), []byte(svg))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.icon.SVGPaths) != 1 {
		t.Errorf("%d paths, want the rectangle only", len(s.icon.SVGPaths))
	}
	if len(s.textAt) != 1 || s.textAt[0] != 1 {
		t.Errorf("textAt %v, want [1] (after every path)", s.textAt)
	}
	s, err = parseSVG(context.Background(), []byte(strings.Replace(svg, `stroke-miterlimit="0.000123" `+svgMarkAttr+`="1"`, ``, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.textAt) != 1 || s.textAt[0] != 1 {
		t.Errorf("textAt %v, want [1]: the text is after the path and before the rectangle", s.textAt)
	}
}
