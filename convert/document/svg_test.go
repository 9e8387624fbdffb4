package document

import (
	"bytes"
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

// TestSVG_PixelLimit: an SVG whose size passes the pixel limit is refused before drawing.
func TestSVG_PixelLimit(t *testing.T) {
	_, err := docConvertData(t, docCatalog(), fmtSVG, "png", []byte(`<svg width="20000" height="20000"/>`), convert.Options{})
	docWantError(t, err, "over the 100 megapixel limit")
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
