package fonts

import (
	"bytes"
	"io"

	"codeberg.org/go-pdf/fpdf"
)

// What embedding these faces in a PDF made with fpdf costs and allows: shared by
// convert/document's layout and its SVG pages.

// MaxRun is the most consecutive code points one fpdf font instance may draw in a document.
// fpdf (v0.12.0, generateCIDFontMap) builds a font's width table in time cubic in the length
// of each run of consecutive characters used: a run of 1000 ideographs cost 0.5 s of CPU, 2000
// 3.8 s, 20 000 more than 10 minutes, and Output cannot be interrupted. A character that would
// make a run of its face longer goes to the face's second instance, whose runs (by how
// characters are placed: convert/document's pdfDoc.place) are at most 2 long. Ordinary text rarely has runs longer
// than a few characters: 3755 common ideographs (GB2312 level 1) need no second instance.
const MaxRun = 64

// MaxFallbackChars is the most distinct characters a generated PDF may draw with the
// embedded CJK and Hangul faces together (real Chinese and Japanese documents use 2000 to 5000);
// more fails the conversion before the PDF is written.
const MaxFallbackChars = 12_000

// FaceMemory is what embedding a TrueType face of ttfSize bytes, glyphs of its characters
// kept, adds to making a PDF: fpdf parses the whole face when it is added (about 6 bytes
// allocated per byte of font, and 4.4 MB of tables whatever its size) and subsets it when the
// PDF is written (about 3.5 KB per character kept). Measured by TestPDF_FaceMemoryCharged: the
// embedded CJK face (2.8 MB) adds 20.7 MB to a small document, the Hangul face (1.3 MB)
// 11.9 MB, both 33 MB.
func FaceMemory(ttfSize, glyphs int) int64 {
	if ttfSize == 0 {
		return 4096 * int64(glyphs)
	}
	return 6<<20 + 6*int64(ttfSize) + 4096*int64(glyphs)
}

// RunWith is how long the run of consecutive characters in set that r joins would be,
// counting at most MaxRun+1.
func RunWith(set map[rune]bool, r rune) int {
	n := 1
	for k := r - 1; set[k] && n <= MaxRun; k-- {
		n++
	}
	for k := r + 1; set[k] && n <= MaxRun; k++ {
		n++
	}
	return n
}

// SafeText replaces what fpdf cannot write: control characters, and characters outside the
// Basic Multilingual Plane (fpdf's UTF-8 fonts stop there), which become U+FFFD.
func SafeText(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r >= 0x10000 || r >= 0x7f && r < 0xa0 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r == '\t':
			out = append(out, ' ')
		case r < 0x20 || r >= 0x7f && r < 0xa0:
		case r >= 0x10000:
			out = append(out, '\ufffd')
		default:
			out = append(out, r)
		}
	}
	return string(out)
}

// PDFOK reports whether fpdf can embed the face: TrueType outlines, and a trial document with
// it succeeds (fpdf's errors are sticky and it panics on some fonts, so a font it cannot read
// would fail the whole PDF).
// The trial runs once per face.
func (f *Face) PDFOK() bool {
	f.pdfOnce.Do(func() {
		defer func() {
			if recover() != nil { // fpdf panics on some malformed fonts
				f.pdfGood = false
			}
		}()
		if len(f.ttf) < 4 || string(f.ttf[:4]) != "\x00\x01\x00\x00" && string(f.ttf[:4]) != "true" {
			return
		}
		pdf := fpdf.New("P", "pt", "A4", "")
		pdf.AddUTF8FontFromBytes("trial", "", bytes.Clone(f.ttf))
		pdf.AddPage()
		pdf.SetFont("trial", "", 12)
		pdf.Text(10, 10, "a")
		f.pdfGood = pdf.Output(io.Discard) == nil
	})
	return f.pdfGood
}
