package svg

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// TestSVGCSS_Sanitized: the <style> element is gone from what oksvg reads, its rules are in
// style="" before the element's own, and a url() to elsewhere in a rule is neutralised.
func TestSVGCSS_Sanitized(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><style>.a{fill:url(http://example.com/x.svg#g);stroke:#ff0000}</style>` +
		`<rect class="a" style="stroke:#00ff00" width="5" height="5"/></svg>`
	clean, _, err := svgSanitize(context.Background(), []byte(svg))
	if err != nil {
		t.Fatal(err)
	}
	got := string(clean)
	if strings.Contains(got, "<style") || strings.Contains(got, "example.com") {
		t.Errorf("sanitised SVG %s keeps the <style> element or its reference", got)
	}
	if !strings.Contains(got, `style="fill:none;stroke:#ff0000;stroke:#00ff00;"`) {
		t.Errorf("sanitised SVG %s: want the rule's declarations before the element's own", got)
	}
}

// TestSVGCSS_Limits: style sheets past the bounds are refused with an *Error, quickly.
func TestSVGCSS_Limits(t *testing.T) {
	doc := func(css, body string) []byte {
		return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><style>` + css + `</style>` + body + `</svg>`)
	}
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"size", doc(strings.Repeat("/* padding */", svgCSSMaxBytes/10), ""), "larger than"},
		{"selectors", doc(many(svgCSSMaxSelectors+1, func(i int) string { return fmt.Sprintf(".c%d{fill:red}", i) }), ""), "selectors"},
		{"work", doc(many(svgCSSMaxSelectors, func(i int) string { return fmt.Sprintf(".a.b%d{fill:red}", i) }), many(3000, func(int) string { return `<g class="a"/>` })), "too complex"},
		{"inlined", doc("*{fill:red;"+strings.Repeat("x-padding:1;", 2000)+"}", many(500, func(int) string { return "<g/>" })), "would add more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := parseSVG(context.Background(), tc.data)
			var ce *convert.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want an *Error saying %q", err, tc.want)
			}
			t.Logf("refused in %v", time.Since(start))
		})
	}
}

// TestSVGCSS_Selectors: what parses as a simple selector, and its specificity.
func TestSVGCSS_Selectors(t *testing.T) {
	for _, tc := range []struct {
		sel  string
		ok   bool
		spec int
	}{
		{"rect", true, 1}, {"*", true, 0}, {".a", true, 1 << 8}, {"#b", true, 1 << 16},
		{"rect.a.b#c", true, 1<<16 | 2<<8 | 1}, {"#a#b", false, 0}, {"g rect", false, 0},
		{"g>rect", false, 0}, {"a:hover", false, 0}, {"[x]", false, 0}, {".", false, 0}, {"", false, 0},
	} {
		r, ok := svgParseSelector(tc.sel)
		if ok != tc.ok || ok && r.spec != tc.spec {
			t.Errorf("%q: ok %v spec %#x, want %v %#x", tc.sel, ok, r.spec, tc.ok, tc.spec)
		}
	}
}

// FuzzSVGCSS feeds arbitrary style sheets to the CSS parser and applies them to a few
// elements: no panic, only *Errors, and what is written into style="" reads back as
// declarations without a rule's braces.
func FuzzSVGCSS(f *testing.F) {
	for _, s := range []string{
		"rect{fill:red} .a{fill:#00f !important} #b{stroke:blue;stroke-width:2px}",
		"@media print{rect{fill:red}} @import url(x.css); g>rect{fill:red}",
		"/* open comment", "a{", "}}}{{{", ".a,.b,,#c{opacity:0.5}", "*{transform:rotate(45deg)}",
	} {
		f.Add(s)
	}
	elems := []xml.StartElement{
		{Name: xml.Name{Local: "rect"}},
		{Name: xml.Name{Local: "rect"}, Attr: []xml.Attr{{Name: xml.Name{Local: "class"}, Value: "a b"}, {Name: xml.Name{Local: "id"}, Value: "b"}}},
		{Name: xml.Name{Local: "text"}, Attr: []xml.Attr{{Name: xml.Name{Local: "style"}, Value: "fill:red;font-size:3px !important"}}},
	}
	f.Fuzz(func(t *testing.T, css string) {
		sh, err := parseSVGCSS(css)
		fuzzErr(t, "parse", err)
		if err != nil {
			return
		}
		sh.maxInls = svgCSSMaxInlined
		for _, se := range elems {
			style, _, err := sh.style(se)
			fuzzErr(t, "style", err)
			if err != nil {
				return
			}
			if strings.ContainsAny(style, "{}") {
				t.Fatalf("style %q has braces", style)
			}
		}
	})
}
