package document

import (
	"image"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// svgOrderDoc is a 120x60 SVG: big black "HH" text and an opaque red rectangle over all of it,
// in the order given, with extra between them.
func svgOrderDoc(textFirst bool, extra string) []byte {
	text := `<text x="5" y="50" font-size="60" font-weight="bold" fill="#000000">HH</text>`
	rect := `<rect x="0" y="0" width="120" height="60" fill="#ff0000"/>`
	body := rect + extra + text
	if textFirst {
		body = text + extra + rect
	}
	return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60">` + body + `</svg>`)
}

// svgOrderCount counts dark (text) and red (rectangle) pixels.
func svgOrderCount(img image.Image) (dark, red int) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			switch {
			case a>>8 > 0xc0 && r>>8 < 0x40 && g>>8 < 0x40 && bl>>8 < 0x40:
				dark++
			case a>>8 > 0xc0 && r>>8 > 0xc0 && g>>8 < 0x40 && bl>>8 < 0x40:
				red++
			}
		}
	}
	return dark, red
}

// TestSVG_PaintOrder: text and shapes paint in document order in PNG and in PDF (rendered
// back with PDFium): an opaque rectangle after the text hides it, one before it does not; the
// same through groups and <use>. The PDF keeps the hidden text as (invisible) text.
func TestSVG_PaintOrder(t *testing.T) {
	useFontDir(t, "")
	c := docCatalog()
	for _, tc := range []struct {
		name      string
		textFirst bool
		extra     string
		wrap      func(string) string
	}{
		{name: "text then rect", textFirst: true},
		{name: "rect then text", textFirst: false},
		{name: "text then rect in groups", textFirst: true, wrap: func(s string) string {
			s = strings.Replace(s, `<text`, `<g><g><text`, 1)
			s = strings.Replace(s, `</text>`, `</text></g></g>`, 1)
			s = strings.Replace(s, `<rect`, `<g transform="translate(0 0)"><rect`, 1)
			return strings.Replace(s, `fill="#ff0000"/>`, `fill="#ff0000"/></g>`, 1)
		}},
		{name: "text then use of a rect", textFirst: true, wrap: func(s string) string {
			s = strings.Replace(s, `<rect`, `<defs><g id="cover"><rect`, 1)
			return strings.Replace(s, `fill="#ff0000"/>`, `fill="#ff0000"/></g></defs><use href="#cover"/>`, 1)
		}},
		{name: "rect, text, small circle elsewhere", textFirst: false, extra: ``, wrap: func(s string) string {
			return strings.Replace(s, `</svg>`, `<circle cx="115" cy="5" r="2" fill="#00ff00"/></svg>`, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(svgOrderDoc(tc.textFirst, tc.extra))
			if tc.wrap != nil {
				svg = tc.wrap(svg)
			}
			png, err := docConvertData(t, c, fmtSVG, "png", []byte(svg), convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			dark, red := svgOrderCount(docDecodePNG(t, png))
			check := func(what string, dark, red, total int) {
				t.Helper()
				if tc.textFirst {
					if dark != 0 || red < total*95/100 {
						t.Errorf("%s: %d dark and %d red pixels of %d; the rectangle painted after the text must hide it", what, dark, red, total)
					}
				} else if dark < total/20 || red < total/4 {
					t.Errorf("%s: %d dark and %d red pixels of %d; the text painted after the rectangle must show on it", what, dark, red, total)
				}
			}
			check("PNG", dark, red, 120*60)
			pdf, err := docConvertData(t, c, fmtSVG, fmtPDF, []byte(svg), convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if text := strings.Join(docReadPDF(t, pdf).text, " "); !strings.Contains(text, "HH") {
				t.Errorf("the PDF's text %q lacks HH", text)
			}
			back, err := docConvertData(t, c, fmtPDF, "png", pdf, convert.Options{DPI: 72})
			if err != nil {
				t.Fatal(err)
			}
			img := docDecodePNG(t, back)
			dark, red = svgOrderCount(img)
			check("PDF", dark, red, img.Bounds().Dx()*img.Bounds().Dy())
		})
	}
}
