package document

import (
	"bytes"
	"fmt"
	"math"
	"sync"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"

	"github.com/convsvc/convsvc/convert/internal/fonts"
)

// PDF output embeds the Go fonts (BSD licence, shipped with golang.org/x/image) as UTF-8
// TrueType, subset to the characters used. They cover Latin, Greek and Cyrillic (WGL4);
// characters they lack are drawn with the embedded CJK face (a subset of Droid Sans Fallback,
// convert/internal/fonts) when it has them, and reported (glyphs_missing) when no face has them.

// pdfFont is one face of the embedded fonts, with its advance widths in thousandths of an em
// as fpdf computes them, so that lines measured here are the lines fpdf draws.
type pdfFont struct {
	family, style string // fpdf's family ("sans", "mono") and style ("", "B", "I", "BI")
	ttf           []byte
	base          *pdfFont // for a second instance of a fallback face: the face it repeats

	once    sync.Once
	widths  []uint16 // by rune, for the Basic Multilingual Plane
	missing uint16   // width of characters the font lacks
	has     []bool   // by rune: the font has a glyph
	err     error
}

var pdfFonts = [8]*pdfFont{
	{family: "sans", style: "", ttf: goregular.TTF},
	{family: "sans", style: "B", ttf: gobold.TTF},
	{family: "sans", style: "I", ttf: goitalic.TTF},
	{family: "sans", style: "BI", ttf: gobolditalic.TTF},
	{family: "mono", style: "", ttf: gomono.TTF},
	{family: "mono", style: "B", ttf: gomonobold.TTF},
	{family: "mono", style: "I", ttf: gomonoitalic.TTF},
	{family: "mono", style: "BI", ttf: gomonobolditalic.TTF},
}

// pdfFallbacks are the embedded faces (convert/internal/fonts) for characters the Go fonts lack: the
// first pdfFallbackFaces are tried in order (CJK ideographs and kana, then Hangul); each is
// followed, pdfFallbackFaces further on, by a second fpdf instance of the same face (see
// pdfMaxRun).
var pdfFallbacks = func() []*pdfFont {
	faces := []*pdfFont{
		{family: "cjk", style: "", ttf: fonts.CJK.TTF()},
		{family: "hangul", style: "", ttf: fonts.Hangul.TTF()},
	}
	for _, f := range faces[:len(faces):len(faces)] {
		faces = append(faces, &pdfFont{family: f.family + "2", style: f.style, ttf: f.ttf, base: f})
	}
	return faces
}()

// pdfFallbackFaces is how many distinct faces pdfFallbacks holds (the rest are second instances).
const pdfFallbackFaces = 2

// The PDF embedding bounds and helpers, in convert/internal/fonts, by the names the layout uses.
const (
	// pdfMaxRun is fonts.MaxRun: the most consecutive code points one fpdf font instance draws.
	pdfMaxRun = fonts.MaxRun
	// MaxPDFFallbackChars is the most distinct characters a generated PDF may draw with the
	// embedded CJK and Hangul faces together; more fails the conversion before the PDF is written.
	MaxPDFFallbackChars = fonts.MaxFallbackChars
)

var (
	pdfFaceMemory = fonts.FaceMemory
	pdfSafeText   = fonts.SafeText
	pdfRunWith    = fonts.RunWith
)

// fontFor returns the face for a style.
func fontFor(mono, bold, italic bool) *pdfFont {
	i := 0
	if mono {
		i += 4
	}
	if bold {
		i++
	}
	if italic {
		i += 2
	}
	return pdfFonts[i]
}

// load reads the font's metrics once per process.
func (f *pdfFont) load() error {
	f.once.Do(func() {
		if f.base != nil {
			f.err = f.base.load()
			f.widths, f.missing, f.has = f.base.widths, f.base.missing, f.base.has
			return
		}
		fnt, err := sfnt.Parse(f.ttf)
		if err != nil {
			f.err = fmt.Errorf("parsing embedded font: %w", err)
			return
		}
		var buf sfnt.Buffer
		upem := float64(fnt.UnitsPerEm())
		ppem := fixed.Int26_6(fnt.UnitsPerEm()) << 6
		width := func(g sfnt.GlyphIndex) uint16 {
			adv, err := fnt.GlyphAdvance(&buf, g, ppem, font.HintingNone)
			if err != nil {
				return 0
			}
			return uint16(math.Round(float64(adv) / 64 * 1000 / upem))
		}
		f.missing = width(0)
		f.widths = make([]uint16, 0x10000)
		f.has = make([]bool, 0x10000)
		for r := range 0x10000 {
			g, err := fnt.GlyphIndex(&buf, rune(r))
			if err != nil || g == 0 {
				f.widths[r] = f.missing
				continue
			}
			f.widths[r] = width(g)
			f.has[r] = true
		}
	})
	return f.err
}

// width returns the advance of s at size points.
func (f *pdfFont) width(s string, size float64) float64 {
	w := 0
	for _, r := range s {
		if r < 0x10000 {
			w += int(f.widths[r])
		} else {
			w += int(f.missing)
		}
	}
	return float64(w) * size / 1000
}

// runeWidth returns the advance of r at size points.
func (f *pdfFont) runeWidth(r rune, size float64) float64 {
	if r >= 0 && r < 0x10000 {
		return float64(f.widths[r]) * size / 1000
	}
	return float64(f.missing) * size / 1000
}

// hasGlyph reports whether the font draws r.
func (f *pdfFont) hasGlyph(r rune) bool { return r >= 0 && r < 0x10000 && f.has[r] }

// addTo registers the face with a document. fpdf writes into the font bytes it is given while
// subsetting (found by the race detector when two PDFs were made at once), so every document
// gets its own copy.
func (f *pdfFont) addTo(pdf *fpdf.Fpdf) {
	pdf.AddUTF8FontFromBytes(f.family, f.style, bytes.Clone(f.ttf))
}
