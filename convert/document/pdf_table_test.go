package document

import (
	"regexp"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// pdfWordsMD is tables whose words a PDF must keep whole: a column as wide as its one word
// (which rounding once cut to "Apple" / "s"), a column sized from a narrower header, a wide
// table that is shrunk to fit, and a long URL that must wrap at its punctuation.
const pdfWordsMD = `| Fruit | Qty |
|---|---|
| Apples | 3 |
| Pears | 12 |

| F | Qty |
|---|---|
| Apples | 3 |

| Fruit | Count | Price | Origin | Notes | Colour | Season |
|---|---|---|---|---|---|---|
| Apples | 3 | 1.20 | Normandy | crisp and sweet varieties | red | autumn |

| Alpha | Beta | Gamma | Delta | Epsilon | Zeta | Eta | Theta |
|---|---|---|---|---|---|---|---|
| Strawberries | Blackcurrants | Elderberries | Gooseberries | Huckleberries | Boysenberries | Cloudberries | Lingonberries |

| Key | URL |
|---|---|
| a | https://example.com/a/very/long/path/that/goes/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on?x=1&y=2 |
`

// pdfText is the text of every page of a PDF, as PDFium extracts it.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	return strings.Join(docReadPDF(t, pdf).text, "\n")
}

// TestPDFTable_WordsWhole: Markdown tables in a PDF never cut a word that fits the page: every
// column is at least as wide as its widest word, and a table too wide for that is set smaller.
func TestPDFTable_WordsWhole(t *testing.T) {
	out, err := docConvertData(t, docCatalog(), fmtMarkdown, fmtPDF, []byte(pdfWordsMD), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := pdfText(t, out)
	words := regexp.MustCompile(`[A-Za-z]{3,}`).FindAllString(strings.Split(pdfWordsMD, "| Key")[0], -1)
	for _, w := range words {
		if !regexp.MustCompile(`\b` + w + `\b`).MatchString(text) {
			t.Errorf("the PDF's text lacks %q whole:\n%s", w, text)
		}
	}
	// The URL is wider than the page: it wraps after its "?", keeping both parts whole.
	for _, part := range []string{"https://example.com/a/very/long/path/", "x=1&y=2"} {
		if !strings.Contains(text, part) {
			t.Errorf("the PDF's text lacks %q:\n%s", part, text)
		}
	}
}

// TestTableWidths: when the columns' widest words cannot all fit, the narrow columns keep
// their width and only the widest are narrowed, to one common width filling the room.
func TestTableWidths(t *testing.T) {
	got := tableWidths([]float64{20, 300, 30, 250}, 400)
	want := []float64{20, 175, 30, 175}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("tableWidths = %v, want %v", got, want)
		}
	}
	if got := tableWidths([]float64{100, 100}, 250); got[0] != 100 || got[1] != 100 {
		t.Errorf("widths that fit changed: %v", got)
	}
}

// TestBreakAfter: a word wider than its line is cut between the parts of a URL, path or
// compact JSON, never inside a number or a name.
func TestBreakAfter(t *testing.T) {
	for _, tc := range []struct {
		s    string
		at   int
		want bool
	}{
		{"a/b", 2, true},
		{"a?x=1", 2, true},
		{`{"port":8080}`, 8, true}, // after ':'
		{`{"port":8080}`, 10, false},
		{"8,080", 2, false},
		{"4.5", 2, false},
		{"12:30", 3, false},
		{"http://x", 5, false},
		{"a,b", 2, true},
		{"max_connections", 4, false},
		{"well-known", 5, true},
		{"-5", 1, false},
		{"2026-12-02", 5, false},
		{"f(x)", 1, true},
		{"a//b", 2, false},
	} {
		if got := breakAfter([]rune(tc.s), tc.at); got != tc.want {
			t.Errorf("breakAfter(%q, %d) = %v, want %v", tc.s, tc.at, got, tc.want)
		}
	}
}

// TestPDFTable_HeaderWithFirstRow: wherever a page ends, a table's header row is never alone
// at its foot (it goes with the first row's first line; on a next page it is repeated above
// the rows that continue there), and a heading stays with the header.
func TestPDFTable_HeaderWithFirstRow(t *testing.T) {
	c := docCatalog()
	// Code lines (11.7 pt each) and a paragraph (21 pt) move the heading down the page in
	// steps finer than the room the header and first row need.
	for filler := 64; filler < 100; filler++ {
		if raceShort() && filler%5 != 0 {
			continue // -race -short: every fifth page break (both parities); the plain step takes all 36
		}
		md := strings.Repeat("Filler line.\n\n", 40+filler%2) + "```\n" + strings.Repeat("code\n", filler/2) + "```\n\n" +
			"# Section\n\n| Hkey | Hvalue |\n|---|---|\n| alpha | 1 |\n| beta | 2 |\n"
		out, err := docConvertData(t, c, fmtMarkdown, fmtPDF, []byte(md), convert.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, page := range docReadPDF(t, out).text {
			if strings.Contains(page, "Hkey") && !strings.Contains(page, "alpha") && !strings.Contains(page, "beta") ||
				strings.Contains(page, "Section") && !strings.Contains(page, "Hkey") {
				t.Errorf("%d filler lines: page %d has the heading or header without what follows:\n%s", filler, i+1, page)
			}
		}
	}
}
