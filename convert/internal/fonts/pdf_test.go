package fonts

import "testing"

// TestFace_PDFOK: the embedded faces can be embedded in PDFs; CFF outlines and bytes that
// are no font cannot, and are replaced rather than failing the PDF.
func TestFace_PDFOK(t *testing.T) {
	for _, f := range []*Face{Sans[0], Sans[3], Mono[0], CJK, Hangul} {
		if !f.PDFOK() {
			t.Errorf("embedded face %q refused", f.family)
		}
	}
	for _, ttf := range [][]byte{[]byte("OTTO\x00\x01rest"), append([]byte{0, 1, 0, 0}, make([]byte, 64)...)} {
		if (&Face{ttf: ttf}).PDFOK() {
			t.Errorf("%q accepted", ttf[:6])
		}
	}
}
