package document

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestSVG_Sizes draws the sample (120x80 CSS pixels, view box 240x160) at its size, by dpi,
// and by width and height with each fit.
func TestSVG_Sizes(t *testing.T) {
	c := docCatalog()
	cases := []struct {
		opts convert.Options
		w, h int
	}{
		{convert.Options{}, 120, 80},
		{convert.Options{DPI: 192}, 240, 160},
		{convert.Options{Width: 60}, 60, 40},
		{convert.Options{Height: 160}, 240, 160},
		{convert.Options{Width: 100, Height: 100}, 100, 66},
		{convert.Options{Width: 100, Height: 100, Fit: convert.FitFill}, 100, 100},
		{convert.Options{Width: 100, Height: 100, Fit: convert.FitCover}, 100, 100},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%+v", tc.opts), func(t *testing.T) {
			out := docMustConvert(t, c, fmtSVG, "png", docPath("sample.svg"), tc.opts)
			img, err := png.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if got := img.Bounds().Size(); got != image.Pt(tc.w, tc.h) {
				t.Fatalf("size %v, want %dx%d", got, tc.w, tc.h)
			}
			// The sky fills the top left corner and the hill the bottom: the view box was
			// mapped onto the whole canvas.
			if r, _, b, a := img.At(1, 1).RGBA(); a == 0 || b <= r {
				t.Errorf("top left is %v, want sky blue", img.At(1, 1))
			}
			if _, g, _, a := img.At(tc.w/2, tc.h-2).RGBA(); a == 0 || g < 0x6000 {
				t.Errorf("bottom middle is %v, want hill green", img.At(tc.w/2, tc.h-2))
			}
		})
	}
}

// TestSVG_IntrinsicSize reads sizes in units, from the view box alone, or neither.
func TestSVG_IntrinsicSize(t *testing.T) {
	cases := []struct {
		svg  string
		w, h float64
	}{
		{`<svg width="1in" height="72pt"/>`, 96, 96},
		{`<svg width="25.4mm" height="2.54cm"/>`, 96, 96},
		{`<svg viewBox="0 0 50 25"/>`, 50, 25},
		{`<svg width="100" viewBox="0 0 50 25"/>`, 100, 50},
		{`<svg width="100%" height="100%" viewBox="0,0,30,20"/>`, 30, 20},
		{`<svg/>`, 300, 150},
	}
	for _, tc := range cases {
		s, err := parseSVG(context.Background(), []byte(tc.svg))
		if err != nil {
			t.Errorf("%s: %v", tc.svg, err)
			continue
		}
		if docDiff(s.info.w, tc.w) > 1e-6 || docDiff(s.info.h, tc.h) > 1e-6 {
			t.Errorf("%s: %gx%g, want %gx%g", tc.svg, s.info.w, s.info.h, tc.w, tc.h)
		}
	}
	_, err := parseSVG(context.Background(), []byte(`<svg width="1e9" height="10"/>`))
	docWantError(t, err, "out of range")
	_, err = docConvertData(t, docCatalog(), fmtSVG, "png", []byte(`<svg width="20000" height="20000"/>`), convert.Options{})
	docWantError(t, err, "over the 100 megapixel limit")
}

func docDiff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestSVG_NoExternalReferences converts SVG, HTML, Markdown and DOCX documents that refer
// every way they can to a web server and to a local file: the server must receive no request,
// and no output may mention either.
func TestSVG_NoExternalReferences(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		t.Errorf("request for %s", r.URL)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	file := noOpenFile(t)
	c := docCatalog()
	base := srv.URL + "/x"
	svg := docExternalRefsSVG(base)
	svg = strings.Replace(svg, `file:///etc/passwd`, "file://"+file, 1)
	htmlDoc := docExternalRefsHTML(base, file)
	md := "# Refs\n\n![remote](" + base + "/img.png) ![local](file://" + file + ") [link](" + base + "/page)\n\n<img src=\"" + base + "/raw.png\">\n"
	docx := docGenDOCX(t, strings.Replace(docSampleDocumentXML, `r:id="rId11"`, `r:id="rId12"`, 1), true)
	cases := []struct {
		from, to string
		data     []byte
	}{
		{fmtSVG, "png", []byte(svg)}, {fmtSVG, fmtPDF, []byte(svg)}, {fmtSVG, "jpeg", []byte(svg)},
		{fmtHTML, fmtPDF, []byte(htmlDoc)}, {fmtHTML, fmtEPUB, []byte(htmlDoc)}, {fmtHTML, fmtMarkdown, []byte(htmlDoc)}, {fmtHTML, fmtTXT, []byte(htmlDoc)},
		{fmtMarkdown, fmtPDF, []byte(md)}, {fmtMarkdown, fmtEPUB, []byte(md)}, {fmtMarkdown, fmtHTML, []byte(md)},
		{fmtDOCX, fmtHTML, docx},
	}
	for _, tc := range cases {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			out, err := docConvertData(t, c, tc.from, tc.to, tc.data, convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) == 0 {
				t.Fatal("empty output")
			}
			// Markdown and HTML outputs may keep a remote image as a reference for their
			// reader; nothing else may mention the local file or an image to load.
			bad := []string{file}
			if tc.to != fmtMarkdown && tc.to != fmtHTML {
				bad = append(bad, base+"/img", base+"/raw", base+"/image")
			}
			contents := map[string]string{"output": string(out)}
			if tc.to == fmtEPUB {
				contents = docZipEntries(t, out)
			}
			for name, content := range contents {
				for _, b := range bad {
					if strings.Contains(content, b) {
						t.Errorf("%s refers to %s:\n%s", name, b, content)
					}
				}
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestSVG_Sanitized checks what the sanitiser leaves of the reference-laden SVG.
func TestSVG_Sanitized(t *testing.T) {
	clean, _, err := svgSanitize(context.Background(), []byte(docExternalRefsSVG("http://127.0.0.1:9/x")))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http:", "file:", "script", "image", "foreignObject", "iframe", "@import", "DOCTYPE"} {
		if bytes.Contains(clean, []byte(bad)) {
			t.Errorf("sanitised SVG keeps %q:\n%s", bad, clean)
		}
	}
	for _, keep := range []string{"<rect", "<circle", `fill="#3366cc"`, "stroke:none"} {
		if !bytes.Contains(clean, []byte(keep)) {
			t.Errorf("sanitised SVG lost %q:\n%s", keep, clean)
		}
	}
}

// TestSVG_UseExpansion checks <use> inside <defs> is dropped and expansion is counted.
func TestSVG_UseExpansion(t *testing.T) {
	s, err := parseSVG(context.Background(), []byte(docUseBombSVG))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.icon.SVGPaths); n > 10 {
		t.Errorf("%d paths drawn", n)
	}
	var b strings.Builder
	b.WriteString(`<svg><defs><g id="g">` + strings.Repeat(`<rect width="1" height="1"/>`, 1000) + `</g></defs>`)
	b.WriteString(strings.Repeat(`<use href="#g"/>`, 1000))
	b.WriteString(`</svg>`)
	_, err = parseSVG(context.Background(), []byte(b.String()))
	docWantError(t, err, "once its <use> elements are expanded")
}

// TestSVG_Transparent keeps transparency in formats with alpha and lays it on white in JPEG.
func TestSVG_Transparent(t *testing.T) {
	c := docCatalog()
	svg := []byte(`<svg width="10" height="10"><rect x="5" width="5" height="10" fill="#000"/></svg>`)
	out, err := docConvertData(t, c, fmtSVG, "png", svg, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := img.At(1, 1).RGBA(); a != 0 {
		t.Errorf("left half alpha %d, want transparent", a)
	}
	if got := color.NRGBAModel.Convert(img.At(8, 5)).(color.NRGBA); got != (color.NRGBA{0, 0, 0, 255}) {
		t.Errorf("right half %v, want black", got)
	}
}
