package document

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

// TestSVGCSS_Cascade: <style> rules with type, class, id and comma-list selectors paint
// shapes and text by specificity then order, over presentation attributes and under style="",
// with !important over style="".
func TestSVGCSS_Cascade(t *testing.T) {
	useFontDir(t, "")
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">
<style type="text/css"><![CDATA[
/* comment { rect { fill: #123456 } */
rect { fill: #00ff00 }
.a { fill: #ff0000 }
rect.a.late { fill: #00ffff }
#b { fill: #0000ff }
.c { fill: #ff0000 } .c { fill: #ffff00 }
.d, .e { fill: #ff00ff }
.imp { fill: #808080 !important }
@media print { rect { fill: #ffffff } }
g > rect, rect:hover, [x] { fill: #ffffff }
.t { fill: #0000ff; font-size: 30px }
]]></style>
<rect x="0" y="0" width="10" height="10"/>
<rect x="10" y="0" width="10" height="10" class="a"/>
<rect x="20" y="0" width="10" height="10" class="a" id="b"/>
<rect x="30" y="0" width="10" height="10" class="a" style="fill:#000000"/>
<rect x="40" y="0" width="10" height="10" class="a" fill="#ffffff"/>
<rect x="50" y="0" width="10" height="10" class="c"/>
<rect x="60" y="0" width="10" height="10" class="e"/>
<rect x="70" y="0" width="10" height="10" class="imp" style="fill:#000000"/>
<rect x="80" y="0" width="10" height="10" class="late a"/>
<g><rect x="90" y="0" width="10" height="10"/></g>
<text x="0" y="38" class="t">WWWWWW</text>
</svg>`
	png, err := docConvertData(t, docCatalog(), fmtSVG, "png", []byte(svg), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	img := docDecodePNG(t, png)
	for i, want := range []string{"00ff00", "ff0000", "0000ff", "000000", "ff0000", "ffff00", "ff00ff", "808080", "00ffff", "00ff00"} {
		r, g, b, _ := img.At(i*10+5, 5).RGBA()
		if got := fmt.Sprintf("%02x%02x%02x", r>>8, g>>8, b>>8); got != want {
			t.Errorf("rect %d is #%s, want #%s", i, got, want)
		}
	}
	// The text is blue and 30 px: blue pixels above y=20 (a 16 px default would stay below).
	blue, high := 0, 0
	for y := 12; y < 40; y++ {
		for x := 0; x < 200; x++ {
			r, g, b, a := img.At(x, y).RGBA()
			if a>>8 > 0xc0 && r>>8 < 0x40 && g>>8 < 0x40 && b>>8 > 0xc0 {
				blue++
				if y < 20 {
					high++
				}
			}
		}
	}
	if blue < 100 || high == 0 {
		t.Errorf("%d blue text pixels, %d of them above y=20; want the .t rule's blue 30 px text", blue, high)
	}
}

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
		docFuzzErr(t, "parse", err)
		if err != nil {
			return
		}
		sh.maxInls = svgCSSMaxInlined
		for _, se := range elems {
			style, _, err := sh.style(se)
			docFuzzErr(t, "style", err)
			if err != nil {
				return
			}
			if strings.ContainsAny(style, "{}") {
				t.Fatalf("style %q has braces", style)
			}
		}
	})
}
