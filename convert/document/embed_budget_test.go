package document

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// solidPNG is a w x h PNG of one colour: a few KB however many pixels it declares.
func solidPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pdfImages counts the image XObjects of a PDF written by this package (uncompressed
// dictionaries).
func pdfImages(pdf []byte) int { return bytes.Count(pdf, []byte("/Subtype /Image")) }

// TestEmbeddedImage_Budget: an image embedded in a document (a data: URI in Markdown or HTML)
// is decoded under the same memory budget as the image converted on its own. A small PNG
// declaring 3000x3000 pixels (an estimated 153 MB to decode and re-encode) is refused by a
// 64 MiB budget on the direct path; embedded, it is left out of the PDF under that budget
// (before anything is decoded) and embedded under a 1 GiB one. The reservation is given back.
func TestEmbeddedImage_Budget(t *testing.T) {
	img := solidPNG(t, 3000, 3000)
	if len(img) > 64<<10 {
		t.Fatalf("the crafted PNG is %d bytes, want a small file", len(img))
	}
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	small := testCatalog(convert.Limits{MaxConversionMemory: 64 << 20})
	large := testCatalog(convert.Limits{MaxConversionMemory: 1 << 30})

	// The direct path refuses it under the small budget.
	if _, err := docConvertData(t, small, "png", "pdf", img, convert.Options{}); err == nil || !strings.Contains(err.Error(), "over the 64.0 MiB conversion memory budget") {
		t.Fatalf("png -> pdf under 64 MiB: err = %v, want the budget's refusal", err)
	}

	for _, tc := range []struct{ name, from, doc string }{
		{"markdown data: URI", "markdown", "# Title\n\n![picture](" + uri + ")\n\nText after.\n"},
		{"html data: URI", "html", "<html><body><h1>Title</h1><p><img alt=picture src=\"" + uri + "\"></p><p>Text after.</p></body></html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := docConvertData(t, large, tc.from, "pdf", []byte(tc.doc), convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n := pdfImages(out); n != 1 {
				t.Fatalf("under 1 GiB: %d images in the PDF, want the embedded one", n)
			}
			out, err = docConvertData(t, small, tc.from, "pdf", []byte(tc.doc), convert.Options{})
			if err != nil {
				t.Fatalf("under 64 MiB: %v; want the document converted without its image", err)
			}
			if n := pdfImages(out); n != 0 {
				t.Errorf("under 64 MiB: %d images in the PDF, want the image refused by the budget", n)
			}
			if !bytes.Contains(out, []byte("%PDF-")) {
				t.Error("output is not a PDF")
			}
			for _, c := range []*convert.Catalog{small, large} {
				if held, waiting := c.MemoryUse(); held != 0 || waiting != 0 {
					t.Errorf("budget after the conversions: %d bytes held, %d waiting; want all given back", held, waiting)
				}
			}
		})
	}
}

// TestEmbeddedImage_NotDecoded: the other embedding paths never decode an embedded image in
// the process, so a small PNG declaring 10000x10000 pixels (over a 64 MiB budget and at the
// pixel limit) costs them nothing: Markdown -> EPUB packages its bytes as they are, and an SVG
// <image> is removed before the SVG is parsed. Both convert under a 64 MiB budget, the budget
// given back.
func TestEmbeddedImage_NotDecoded(t *testing.T) {
	if raceShort() {
		t.Skip("-race -short: encoding the 100-megapixel PNG is most of it; the plain step runs it, TestEmbeddedImage_Budget runs here")
	}
	img := solidPNG(t, 10000, 10000)
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	c := testCatalog(convert.Limits{MaxConversionMemory: 64 << 20})

	out, err := docConvertData(t, c, "markdown", "epub", []byte("# Title\n\n![picture]("+uri+")\n"), convert.Options{})
	if err != nil {
		t.Fatalf("markdown -> epub: %v", err)
	}
	if !bytes.Contains(out, []byte("images/img-001.png")) {
		t.Error("the EPUB does not package the image")
	}

	svg := `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="64">` +
		`<rect width="64" height="64" fill="#0a0"/><image width="64" height="64" href="` + uri + `" xlink:href="` + uri + `"/></svg>`
	out, err = docConvertData(t, c, "svg", "png", []byte(svg), convert.Options{})
	if err != nil {
		t.Fatalf("svg -> png: %v", err)
	}
	got, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if b := got.Bounds(); b.Dx() != 64 || b.Dy() != 64 {
		t.Errorf("svg -> png is %v, want the 64x64 drawing", b)
	}
	if r, g, _, _ := got.At(32, 32).RGBA(); r>>8 != 0 || g>>8 != 0xaa {
		t.Errorf("pixel = %v, want the green rect (the image removed)", got.At(32, 32))
	}
	if held, waiting := c.MemoryUse(); held != 0 || waiting != 0 {
		t.Errorf("budget after the conversions: %d bytes held, %d waiting", held, waiting)
	}
}
