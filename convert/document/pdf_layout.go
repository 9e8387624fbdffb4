package document

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	"github.com/convsvc/convsvc/convert"
	convimage "github.com/convsvc/convsvc/convert/image"
)

// Page geometry and type sizes of PDF documents, in points.
const (
	pdfMargin     = 56.7 // 20 mm
	pdfBodySize   = 10.5
	pdfCodeSize   = 9
	pdfTableSize  = 9.5
	pdfLineFactor = 1.4 // line height over font size
	pdfListIndent = 18
	pdfQuoteInset = 14
	pdfCellPad    = 3
)

// pdfHeadingSizes are the font sizes of heading levels 1 to 6.
var pdfHeadingSizes = [6]float64{20, 16, 13.5, 12, 11, 10.5}

// inlineStyle is how a run of text is drawn.
type inlineStyle struct {
	mono, bold, italic bool
	fallback           uint8 // 1 + index in pdfFallbacks: drawn with that face; 0: the Go fonts
	underline, strike  bool
	size               float64
	color              uint32 // 0xRRGGBB
	link               string // URL the text links to
}

func (s inlineStyle) font() *pdfFont {
	if s.fallback > 0 {
		return pdfFallbacks[s.fallback-1]
	}
	return fontFor(s.mono, s.bold, s.italic)
}

// fpdfStyle is the style string fpdf's SetFont takes.
func (s inlineStyle) fpdfStyle() string {
	st := s.font().style
	if s.underline {
		st += "U"
	}
	if s.strike {
		st += "S"
	}
	return st
}

// word is a unit of line breaking: text without spaces in one style, the width of the space
// that follows it (0 when none does), a forced break after it, or an image on its own line.
type word struct {
	text  string
	st    inlineStyle
	w     float64
	space float64
	br    bool
	img   *pdfImage
}

// pdfImage is an image to place: registered under name, at its natural size in points.
type pdfImage struct {
	name string
	w, h float64
}

// pdfDoc lays out a document on A4 pages. Lines are broken here with the fonts' own metrics
// and drawn with fpdf's Text, so fpdf's flowing-text functions (quadratic in a paragraph's
// length for UTF-8 fonts) are never used.
type pdfDoc struct {
	ctx context.Context
	f   *fpdf.Fpdf
	lim convert.Limits
	mem convert.EmbeddedMemory // the budget each embedded image is decoded under

	pageW, pageH float64
	left, right  float64 // current text column
	y            float64 // top of the next line
	cur          *inlineStyle
	markers      []marker // list markers waiting for the next line drawn
	lastLevel    int      // level of the last bookmark
	images       int
	added        map[*pdfFont]bool          // faces registered with f: only those used are embedded
	glyphs       map[*pdfFont]map[rune]bool // characters drawn with each fallback face instance
	placed       map[rune]uint8             // the fallback face instance of each (fallbackFor)
	releases     []func()                   // memory reserved for the fallback faces
	params       convert.Params
	missing      []rune // characters no embedded face has (the first few)
	err          error
	// consumed, when set, is how much of the input the pages laid out so far hold (a byte
	// offset, a line): the job's progress as each page is laid out (layoutProgress).
	consumed func() (done, total int64)
}

// layoutShare is the share of a document-to-PDF conversion's progress its layout covers; the
// PDF's output (fpdf's Output: font subsetting, page streams compressed, all in memory before
// the first byte leaves) takes the rest and counts nothing. TestLayoutProgress_Share, a 304 KB
// Markdown file of 113 pages, CPU time: parse 5%, layout 45%, output 50% (the parse, before
// the first page, is counted with the layout).
const layoutShare = 0.5

// layoutProgress reports the input the pages laid out hold, as the layout's share of the
// conversion (the document converters to PDF are marked Counts).
func (d *pdfDoc) layoutProgress() {
	if d.consumed == nil {
		return
	}
	if done, total := d.consumed(); total > 0 {
		d.params.ProgressFraction(layoutShare * min(float64(done)/float64(total), 1))
	}
}

// addFont registers a face with the document the first time it is used: parsing and
// embedding all eight would double the cost of a small document. A fallback face's memory
// (pdfFaceMemory), which the input's size does not tell, is reserved from the budget first.
func (d *pdfDoc) addFont(fnt *pdfFont) {
	if !d.added[fnt] {
		if slices.Contains(pdfFallbacks, fnt) {
			d.reserve(pdfFaceMemory(len(fnt.ttf), 0), "embedding the "+fnt.family+" fallback font")
		}
		fnt.addTo(d.f)
		d.added[fnt] = true
	}
}

// reserve takes n bytes from the conversion memory budget until release.
func (d *pdfDoc) reserve(n int64, what string) {
	release, err := d.mem.Reserve(n, what)
	if err != nil {
		d.fail(err)
		return
	}
	d.releases = append(d.releases, release)
}

// release gives back what reserve took; the callers of newPDFDoc defer it.
func (d *pdfDoc) release() {
	for _, r := range d.releases {
		r()
	}
	d.releases = nil
}

// marker is a list marker drawn right-aligned to x on the baseline of the next line.
type marker struct {
	text string
	x    float64
	st   inlineStyle
}

func newPDFDoc(ctx context.Context, p convert.Params, title string) (*pdfDoc, error) {
	for _, fnt := range pdfFonts {
		if err := fnt.load(); err != nil {
			return nil, err
		}
	}
	f := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", SizeStr: "A4"})
	f.SetMargins(pdfMargin, pdfMargin, pdfMargin)
	f.SetAutoPageBreak(false, pdfMargin)
	f.SetCreator("convsvc", true)
	if title != "" {
		f.SetTitle(pdfSafeText(title), true)
	}
	f.SetCreationDate(time.Now().UTC())
	d := &pdfDoc{ctx: ctx, f: f, lim: p.Limits.Normalized(), mem: p.Embedded, lastLevel: -1, added: map[*pdfFont]bool{},
		glyphs: map[*pdfFont]map[rune]bool{}, placed: map[rune]uint8{}, params: p}
	d.pageW, d.pageH = f.GetPageSize()
	d.left, d.right = pdfMargin, d.pageW-pdfMargin
	f.SetFooterFunc(func() {
		d.addFont(fontFor(false, false, false))
		f.SetFont("sans", "", 8)
		f.SetTextColor(0x88, 0x88, 0x88)
		n := strconv.Itoa(f.PageNo())
		f.Text((d.pageW-fontFor(false, false, false).width(n, 8))/2, d.pageH-pdfMargin/2, n)
		d.cur = nil
	})
	d.newPage()
	return d, nil
}

// bottom is the lowest y text may reach.
func (d *pdfDoc) bottom() float64 { return d.pageH - pdfMargin }

func (d *pdfDoc) newPage() {
	if d.f.PageCount() >= MaxPDFPages {
		d.fail(convert.Errorf(nil, "the document would be more than %d pages long", MaxPDFPages))
		return
	}
	d.layoutProgress() // the page before this one is laid out
	d.f.AddPage()
	d.cur = nil
	d.y = pdfMargin
}

// fail records the first error; drawing goes on harmlessly until the caller checks it.
func (d *pdfDoc) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// ensure starts a new page unless h points fit below y.
func (d *pdfDoc) ensure(h float64) {
	if d.y+h > d.bottom() && d.y > pdfMargin {
		d.newPage()
	}
}

func (d *pdfDoc) setStyle(st inlineStyle) {
	if d.cur != nil && *d.cur == st {
		return
	}
	d.addFont(st.font())
	d.f.SetFont(st.font().family, st.fpdfStyle(), st.size)
	d.f.SetTextColor(int(st.color>>16), int(st.color>>8&0xff), int(st.color&0xff))
	d.cur = &st
}

// finish writes the PDF to w.
func (d *pdfDoc) finish(w io.Writer) error {
	if d.err != nil {
		return d.err
	}
	if err := d.f.Error(); err != nil {
		return fmt.Errorf("laying out the PDF: %w", err)
	}
	if err := d.ctx.Err(); err != nil {
		return err
	}
	if d.consumed != nil {
		d.consumed = func() (int64, int64) { return 1, 1 } // every page is laid out
		d.layoutProgress()
	}
	// Subsetting a face (in Output) costs per character it keeps.
	for fnt, set := range d.glyphs {
		if d.added[fnt] {
			d.reserve(pdfFaceMemory(0, len(set)), fmt.Sprintf("embedding %d characters of the %s fallback font", len(set), fnt.family))
		}
	}
	if d.err != nil {
		return d.err
	}
	if err := d.ctx.Err(); err != nil {
		return err
	}
	if len(d.missing) > 0 {
		var q []string
		for _, r := range d.missing {
			q = append(q, fmt.Sprintf("%q (U+%04X)", r, r))
		}
		d.params.Warn(convert.WarnGlyphsMissing, "no embedded font has a glyph for "+strings.Join(q, ", ")+"; drawn as boxes")
	}
	if err := d.f.Output(&convert.ContextWriter{Ctx: d.ctx, W: w}); err != nil {
		return fmt.Errorf("writing the PDF: %w", err)
	}
	return nil
}

// words splits text into words of one style, attaching spaces to the word before them.
// Runs of spaces, tabs and newlines count as one space. Characters the style's face lacks and
// the CJK face has are drawn with the CJK face, as words of their own without space between.
func (d *pdfDoc) words(ws []word, text string, st inlineStyle) []word {
	text = pdfSafeText(text)
	fnt := st.font()
	space := fnt.width(" ", st.size)
	add := func(w string) {
		start, fb := 0, uint8(0)
		for i, r := range w {
			need := d.fallbackFor(fnt, r)
			if i > 0 && need != fb {
				ws = d.piece(ws, w[start:i], st, fb)
				start = i
			}
			fb = need
		}
		ws = d.piece(ws, w[start:], st, fb)
	}
	start := -1
	for i, r := range text {
		if r == ' ' || r == '\n' || r == '\r' {
			if start >= 0 {
				add(text[start:i])
				start = -1
			}
			if n := len(ws); n > 0 && ws[n-1].space == 0 && !ws[n-1].br && ws[n-1].img == nil {
				ws[n-1].space = space
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		add(text[start:])
	}
	return ws
}

// piece appends one word drawn with st's face, or fallback face fb when fb > 0.
func (d *pdfDoc) piece(ws []word, text string, st inlineStyle, fb uint8) []word {
	st.fallback = fb
	return append(ws, word{text: text, st: st, w: st.font().width(text, st.size)})
}

// fallbackFor returns which fallback face draws r (1 + index in pdfFallbacks), 0 when the
// Go face does or none does; it notes characters no face has.
func (d *pdfDoc) fallbackFor(fnt *pdfFont, r rune) uint8 {
	if fnt.hasGlyph(r) || r < 0x20 {
		return 0
	}
	if fb, ok := d.placed[r]; ok {
		return fb
	}
	for i, f := range pdfFallbacks[:pdfFallbackFaces] {
		if err := f.load(); err != nil {
			d.fail(err)
			return 0
		}
		if f.hasGlyph(r) {
			return d.place(i, r)
		}
	}
	if len(d.missing) < 8 && !slices.Contains(d.missing, r) {
		d.missing = append(d.missing, r)
	}
	return 0
}

// place chooses the instance of fallback face i that draws r, the first time r is drawn: the
// face's first instance unless r would make a run of consecutive characters in it longer than
// pdfMaxRun, the second otherwise. A character goes to the second instance only when a
// neighbour is in the first, so the second's runs are at most 2 long. Over
// MaxPDFFallbackChars distinct characters, the conversion fails.
func (d *pdfDoc) place(i int, r rune) uint8 {
	if len(d.placed) >= MaxPDFFallbackChars {
		d.fail(convert.Errorf(nil, "the document uses more than %d distinct characters that need the embedded CJK or Hangul fonts, more than a PDF made here may embed", MaxPDFFallbackChars))
		return 0
	}
	j := i
	if pdfRunWith(d.glyphs[pdfFallbacks[i]], r) > pdfMaxRun {
		j = i + pdfFallbackFaces
	}
	f := pdfFallbacks[j]
	if err := f.load(); err != nil {
		d.fail(err)
		return 0
	}
	set := d.glyphs[f]
	if set == nil {
		set = map[rune]bool{}
		d.glyphs[f] = set
	}
	set[r] = true
	d.placed[r] = uint8(j + 1)
	return uint8(j + 1)
}

// pdfFit is how far a width may pass the room it is measured against and still fit: widths
// are sums of floating-point advances, so a word measured into a column of its own width may
// exceed it by a rounding error, which must not break it.
const pdfFit = 1e-3

// breakLines fills lines of width avail greedily. A word wider than a line is cut (cutWord);
// images stand on lines of their own.
func breakLines(ws []word, avail float64) [][]word {
	avail += pdfFit
	var lines [][]word
	var line []word
	x := 0.0
	flush := func() {
		if len(line) > 0 {
			line[len(line)-1].space = 0
		}
		lines = append(lines, line)
		line, x = nil, 0
	}
	for _, w := range ws {
		if w.img != nil {
			if len(line) > 0 {
				flush()
			}
			lines = append(lines, []word{w})
			continue
		}
		if len(line) > 0 && x+w.w > avail {
			flush()
		}
		for w.w > avail && len([]rune(w.text)) > 1 {
			head, tail := cutWord(w, avail-x)
			if head.text == "" {
				if len(line) == 0 {
					break
				}
				flush()
				continue
			}
			line = append(line, head)
			flush()
			w = tail
		}
		line = append(line, w)
		x += w.w + w.space
		if w.br {
			flush()
		}
	}
	if len(line) > 0 {
		flush()
	}
	return lines
}

// cutWord splits w where its first part still fits in avail (at least one character): after
// the last punctuation that ends a part of a token (breakAfter) when one fits, so a long URL,
// path or compact JSON wraps between its parts, else between characters.
func cutWord(w word, avail float64) (head, tail word) {
	fnt := w.st.font()
	runes := []rune(w.text)
	x := 0.0
	n := 0
	for n < len(runes) {
		cw := fnt.width(string(runes[n]), w.st.size)
		if x+cw > avail && n > 0 {
			break
		}
		if x+cw > avail {
			return word{}, w
		}
		x += cw
		n++
	}
	for b := n; b > 0 && n < len(runes); b-- {
		if breakAfter(runes, b) {
			n = b
			x = fnt.width(string(runes[:n]), w.st.size)
			break
		}
	}
	head = w
	head.text, head.w, head.space, head.br = string(runes[:n]), x, 0, false
	tail = w
	tail.text = string(runes[n:])
	tail.w = fnt.width(tail.text, w.st.size)
	return head, tail
}

// breakAfter reports whether a line may break between runes[b-1] and runes[b], a boundary
// between the parts of a URL, path, list or compact JSON: after / \ ; & ? = | and closing
// brackets, after , and : (not inside a number such as "8,080" or "12:30", nor in "://"),
// after a hyphen between letters, and before an opening bracket. Never between two equal
// punctuation marks, and never inside a word, number or name ("4.5", "max_connections").
func breakAfter(runes []rune, b int) bool {
	if b <= 0 || b >= len(runes) {
		return false
	}
	prev, next := runes[b-1], runes[b]
	if prev == next {
		return false
	}
	digit := func(r rune) bool { return r >= '0' && r <= '9' }
	switch prev {
	case '/', '\\', ';', '&', '?', '=', '|', ')', ']', '}':
		return true
	case ',', ':':
		return next != '/' && !(b >= 2 && digit(runes[b-2]) && digit(next))
	case '-':
		return b >= 2 && unicode.IsLetter(runes[b-2]) && unicode.IsLetter(next)
	}
	switch next {
	case '(', '[', '{':
		return prev != '(' && prev != '[' && prev != '{'
	}
	return false
}

// lineHeight is the height of a line holding ws with the given minimum font size.
func lineHeight(ws []word, size float64) float64 {
	for _, w := range ws {
		size = max(size, w.st.size)
	}
	return size * pdfLineFactor
}

// drawLine draws one line's words from x with the line's top at y; align is "L", "C" or "R"
// within width.
func (d *pdfDoc) drawLine(ws []word, x, y, lh, width float64, align string) {
	if len(ws) == 1 && ws[0].img != nil {
		return
	}
	total := 0.0
	for _, w := range ws {
		total += w.w + w.space
	}
	switch align {
	case "R":
		x += width - total
	case "C":
		x += (width - total) / 2
	}
	size := 0.0
	for _, w := range ws {
		size = max(size, w.st.size)
	}
	baseline := y + (lh-size)/2 + size*0.8
	for _, m := range d.markers {
		d.setStyle(m.st)
		d.f.Text(m.x-m.st.font().width(m.text, m.st.size), baseline, m.text)
	}
	d.markers = d.markers[:0]
	// Runs of words in one style are drawn by one Text call.
	for i := 0; i < len(ws); {
		j := i
		var b strings.Builder
		width := 0.0
		for ; j < len(ws) && ws[j].st == ws[i].st && ws[j].img == nil; j++ {
			b.WriteString(ws[j].text)
			width += ws[j].w
			if ws[j].space > 0 && ws[j].st.fallback > 0 {
				// A fallback face's space may be wider than the text's own: the run
				// ends, and the gap is the Go font's space.
				j++
				break
			}
			if ws[j].space > 0 && j+1 < len(ws) && ws[j+1].st == ws[i].st {
				b.WriteByte(' ')
				width += ws[j].space
			}
		}
		if j == i {
			j++
			continue
		}
		st := ws[i].st
		d.setStyle(st)
		d.f.Text(x, baseline, b.String())
		if st.link != "" {
			d.f.LinkString(x, y, width, lh, st.link)
		}
		x += width + ws[j-1].space
		i = j
	}
}

// paragraph lays out words in the current column, each line lh or taller.
func (d *pdfDoc) paragraph(ws []word, size float64, align string) {
	for i, line := range breakLines(ws, d.right-d.left) {
		if i%64 == 0 && d.ctx.Err() != nil {
			d.fail(d.ctx.Err())
			return
		}
		if len(line) == 1 && line[0].img != nil {
			d.drawImage(line[0].img)
			continue
		}
		lh := lineHeight(line, size)
		d.ensure(lh)
		d.drawLine(line, d.left, d.y, lh, d.right-d.left, align)
		d.y += lh
	}
}

// drawImage places an image at its natural size, shrunk to the column and the page.
func (d *pdfDoc) drawImage(img *pdfImage) {
	w, h := img.w, img.h
	if avail := d.right - d.left; w > avail {
		w, h = avail, h*avail/w
	}
	if maxH := d.bottom() - pdfMargin; h > maxH {
		w, h = w*maxH/h, maxH
	}
	d.ensure(h)
	d.flushMarkers(d.y + pdfBodySize)
	d.f.ImageOptions(img.name, d.left, d.y, w, h, false, fpdf.ImageOptions{}, 0, "")
	d.y += h + 4
}

// flushMarkers draws list markers still waiting, on the given baseline.
func (d *pdfDoc) flushMarkers(baseline float64) {
	for _, m := range d.markers {
		d.setStyle(m.st)
		d.f.Text(m.x-m.st.font().width(m.text, m.st.size), baseline, m.text)
	}
	d.markers = d.markers[:0]
}

// rule draws a horizontal line across the column.
func (d *pdfDoc) rule() {
	d.ensure(12)
	d.f.SetDrawColor(0xbb, 0xbb, 0xbb)
	d.f.SetLineWidth(0.75)
	d.f.Line(d.left, d.y+6, d.right, d.y+6)
	d.y += 12
}

// heading draws a heading and adds it to the PDF outline.
func (d *pdfDoc) heading(ws []word, level int, title string) {
	size := pdfHeadingSizes[min(max(level, 1), 6)-1]
	if d.y > pdfMargin {
		d.y += size * 0.8
	}
	// Keep the heading with three lines of what follows: two of text, or a table's header
	// and first row.
	d.ensure(size*pdfLineFactor + 3*pdfBodySize*pdfLineFactor)
	if title = strings.TrimSpace(title); title != "" {
		lvl := min(level-1, d.lastLevel+1)
		d.setStyle(ws0Style(ws, size))
		d.f.Bookmark(pdfSafeText(title), lvl, d.y)
		d.lastLevel = lvl
	}
	d.paragraph(ws, size, "L")
	d.y += size * 0.35
}

func ws0Style(ws []word, size float64) inlineStyle {
	if len(ws) > 0 {
		return ws[0].st
	}
	return inlineStyle{bold: true, size: size}
}

// codeBlock draws preformatted lines in monospace on a grey ground, wrapping long lines.
func (d *pdfDoc) codeBlock(text string) {
	st := inlineStyle{mono: true, size: pdfCodeSize, color: 0x222222}
	lh := pdfCodeSize * 1.3
	const pad = 4
	text = strings.TrimRight(strings.ReplaceAll(text, "\t", "    "), "\n")
	avail := d.right - d.left - 2*pad
	lines := strings.Split(text, "\n")
	d.ensure(lh + 2*pad)
	d.y += pad
	for i, l := range lines {
		if i%256 == 0 && d.ctx.Err() != nil {
			d.fail(d.ctx.Err())
			return
		}
		for _, ws := range d.preLines(pdfSafeText(l), st, avail) {
			if d.y+lh > d.bottom() {
				d.newPage()
			}
			d.f.SetFillColor(0xf3, 0xf3, 0xf3)
			d.f.Rect(d.left, d.y-pad/2, d.right-d.left, lh+pad, "F")
			if len(ws) > 0 {
				d.drawLine(ws, d.left+pad, d.y, lh, avail, "L")
			} else {
				d.flushMarkers(d.y + lh*0.8)
			}
			d.y += lh
		}
	}
	d.y += pad + pdfBodySize*0.6
}

// preLines splits a preformatted line into lines no wider than avail (at least one character
// each), cutting between characters. Each line is a list of pieces drawn with st's face or,
// for characters it lacks, the fallback face that has them (as body text is); an empty line is
// one line without pieces.
func (d *pdfDoc) preLines(line string, st inlineStyle, avail float64) [][]word {
	fnt := st.font()
	var lines [][]word
	var cur []word
	var b strings.Builder
	x, pieceW := 0.0, 0.0
	fb := uint8(0)
	flush := func() {
		if b.Len() > 0 {
			ps := st
			ps.fallback = fb
			cur = append(cur, word{text: b.String(), st: ps, w: pieceW})
			b.Reset()
			pieceW = 0
		}
	}
	for _, r := range line {
		need := d.fallbackFor(fnt, r)
		f := fnt
		if need > 0 {
			f = pdfFallbacks[need-1]
		}
		w := f.runeWidth(r, st.size)
		if x > 0 && x+w > avail+1e-6 {
			flush()
			lines = append(lines, cur)
			cur, x = nil, 0
		}
		if need != fb {
			flush()
			fb = need
		}
		b.WriteRune(r)
		pieceW += w
		x += w
	}
	flush()
	return append(lines, cur)
}

// tableCell is a laid-out cell: its words and alignment.
type tableCell struct {
	ws    []word
	align string
}

// pdfMinTableSize is the smallest font a wide table is shrunk to.
const pdfMinTableSize = 6

// table draws rows of cells with a border, the first row as a header when header is set,
// repeated at the top of every page the table continues on. Columns share the width by
// their content, each at least as wide as its widest word (a run of pieces without a space)
// so no word is cut; a table whose widest words do not fit side by side is set in a smaller
// font (down to pdfMinTableSize), and if they still do not, the widest columns are narrowed
// to a common width (tableWidths) and only their words wider than it are cut. Rows taller
// than a page are split. build lays out the cells at a font size.
func (d *pdfDoc) table(build func(size float64) [][]tableCell, header bool) {
	size := float64(pdfTableSize)
	rows := build(size)
	ncols := 0
	for _, r := range rows {
		ncols = max(ncols, len(r))
	}
	if ncols == 0 {
		return
	}
	avail := d.right - d.left
	var natural, minimum []float64
	var sumNat, sumMin float64
	measure := func() {
		natural, minimum = make([]float64, ncols), make([]float64, ncols)
		sumNat, sumMin = 0, 0
		for _, r := range rows {
			for c, cell := range r {
				line, longest, tok := 0.0, 0.0, 0.0
				for _, w := range cell.ws {
					line += w.w + w.space
					tok += w.w
					if w.space > 0 || w.br {
						longest, tok = max(longest, tok), 0
					}
					if w.br {
						natural[c] = max(natural[c], line+2*pdfCellPad)
						line = 0
					}
				}
				longest = max(longest, tok)
				natural[c] = max(natural[c], line+2*pdfCellPad)
				// A word wider than the whole width is cut whatever the columns do.
				minimum[c] = max(minimum[c], min(longest, avail-2*pdfCellPad)+2*pdfCellPad)
			}
		}
		for c := range ncols {
			sumNat += natural[c]
			sumMin += minimum[c]
		}
	}
	measure()
	if pads := 2 * pdfCellPad * float64(ncols); sumMin > avail+pdfFit {
		// The words scale with the font and the padding does not.
		k := 0.0
		if avail > pads {
			k = (avail - pads) / (sumMin - pads)
		}
		size = max(pdfMinTableSize, size*k)
		rows = build(size)
		measure()
	}
	widths := make([]float64, ncols)
	switch {
	case sumNat <= avail+pdfFit:
		copy(widths, natural)
	case sumMin >= avail-pdfFit:
		widths = tableWidths(minimum, avail)
	default:
		extra := avail - sumMin
		for c := range ncols {
			widths[c] = minimum[c] + extra*(natural[c]-minimum[c])/(sumNat-sumMin)
		}
	}

	lh := size * pdfLineFactor
	type laidRow struct {
		lines [][][]word // by cell
		n     int        // lines in the tallest cell
	}
	layout := func(r []tableCell) laidRow {
		lr := laidRow{lines: make([][][]word, ncols)}
		for c := range ncols {
			if c < len(r) {
				lr.lines[c] = breakLines(r[c].ws, max(widths[c]-2*pdfCellPad, 1))
			}
			lr.n = max(lr.n, len(lr.lines[c]), 1)
		}
		return lr
	}
	var head laidRow
	if header && len(rows) > 0 {
		head = layout(rows[0])
	}
	drawRow := func(r []tableCell, lr laidRow, from, n int, isHeader bool) {
		h := float64(n)*lh + 2*pdfCellPad
		x := d.left
		for c := range ncols {
			if isHeader {
				d.f.SetFillColor(0xee, 0xee, 0xee)
				d.f.Rect(x, d.y, widths[c], h, "F")
			}
			d.f.SetDrawColor(0x99, 0x99, 0x99)
			d.f.SetLineWidth(0.5)
			d.f.Rect(x, d.y, widths[c], h, "D")
			align := "L"
			if c < len(r) {
				align = r[c].align
			}
			for k := from; k < from+n && k < len(lr.lines[c]); k++ {
				d.drawLine(lr.lines[c][k], x+pdfCellPad, d.y+pdfCellPad+float64(k-from)*lh, lh, widths[c]-2*pdfCellPad, align)
			}
			x += widths[c]
		}
		d.y += h
	}
	d.flushMarkers(d.y + size)
	for i, r := range rows {
		if d.ctx.Err() != nil {
			d.fail(d.ctx.Err())
			return
		}
		isHeader := header && i == 0
		lr := head
		if !isHeader {
			lr = layout(r)
		}
		fresh := d.y <= pdfMargin
		if isHeader && len(rows) > 1 && !fresh {
			// The header goes with the first line of the first row, not alone at a page's foot.
			if d.y+float64(lr.n+1)*lh+4*pdfCellPad > d.bottom() {
				d.newPage()
				fresh = true
			}
		}
		for from := 0; from < lr.n && d.err == nil; {
			fit := int((d.bottom() - d.y - 2*pdfCellPad) / lh)
			if fit < min(lr.n-from, 3) && !fresh {
				d.newPage()
				if header && !isHeader {
					drawRow(rows[0], head, 0, head.n, true)
				}
				fresh = true
				continue
			}
			n := max(1, min(fit, lr.n-from))
			drawRow(r, lr, from, n, isHeader)
			from += n
			fresh = false
		}
	}
	d.y += pdfBodySize * 0.6
}

// tableWidths fits columns whose minimum widths add up to more than avail: the narrow ones
// keep their width, the widest are narrowed to one common width (the largest that makes the
// sum avail), so words are cut only in the columns that cannot hold them. Within pdfFit of
// avail, the minimums are kept as they are.
func tableWidths(minimum []float64, avail float64) []float64 {
	widths := slices.Clone(minimum)
	sum := 0.0
	for _, m := range minimum {
		sum += m
	}
	if sum <= avail+pdfFit {
		return widths
	}
	sorted := slices.Clone(minimum)
	slices.Sort(sorted)
	// The cap is between sorted[i-1] and sorted[i]: the i narrowest keep their width.
	kept := 0.0
	capW := avail / float64(len(sorted))
	for i, m := range sorted {
		c := (avail - kept) / float64(len(sorted)-i)
		if m >= c {
			capW = c
			break
		}
		kept += m
	}
	for i := range widths {
		widths[i] = min(widths[i], capW)
	}
	return widths
}

// quoteBar draws the bar beside a block quote from (page, y) to the current position.
func (d *pdfDoc) quoteBar(x float64, page int, y float64) {
	last := d.f.PageNo()
	d.f.SetDrawColor(0xbb, 0xbb, 0xbb)
	d.f.SetLineWidth(2)
	for p := page; p <= last; p++ {
		d.f.SetPage(p)
		top, bot := pdfMargin, d.bottom()
		if p == page {
			top = y
		}
		if p == last {
			bot = d.y
		}
		if bot > top {
			d.f.Line(x, top, x, bot)
		}
	}
	d.f.SetPage(last)
}

// addImageData registers an image given as a data: URI and returns it, or nil when the URI
// is not an image this package reads, is over the pixel limit or is broken: a document's
// images never fail its conversion.
func (d *pdfDoc) addImageData(uri string) *pdfImage {
	data, ok := decodeDataURI(uri)
	if !ok {
		return nil
	}
	return d.addImageBytes(data)
}

// addImageBytes registers an encoded image: JPEG as it is, anything else this package decodes
// as an 8-bit PNG (fpdf reads neither 16-bit nor interlaced PNG).
func (d *pdfDoc) addImageBytes(data []byte) *pdfImage {
	id, _ := convert.Sniff(data[:min(len(data), convert.SniffLen)])
	codec := convimage.CodecByID(id)
	if codec == nil || codec.Decode == nil {
		return nil
	}
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	cfg, err := convimage.ReadHeader(d.ctx, in, codec, d.lim)
	if err != nil {
		return nil
	}
	opts := fpdf.ImageOptions{ImageType: "PNG"}
	var enc []byte
	if id == "jpeg" && cfg.ColorModel != color.CMYKModel {
		enc, opts.ImageType = data, "JPG"
	} else {
		// The same pixel limit (ReadHeader above) and memory budget as a direct conversion of
		// the image to PDF (rasterToPDF), checked from the header before anything is decoded.
		// An image over either is left out: a document's images never fail its conversion.
		release, err := d.mem.Reserve(embeddedImageEstimate(codec, cfg, len(data)),
			fmt.Sprintf("decoding this embedded %dx%d %s", cfg.Width, cfg.Height, codec.Name))
		if err != nil {
			return nil
		}
		defer release()
		img, err := convimage.DecodePixels(d.ctx, in, codec, cfg)
		if err != nil {
			return nil
		}
		if enc, err = encodePDFPNG(img); err != nil {
			return nil
		}
	}
	d.images++
	name := "img" + strconv.Itoa(d.images)
	info := d.f.RegisterImageOptionsReader(name, opts, bytes.NewReader(enc))
	if info == nil || d.f.Err() {
		d.f.ClearError()
		return nil
	}
	return &pdfImage{name: name, w: float64(cfg.Width) * 0.75, h: float64(cfg.Height) * 0.75}
}

// embeddedImageEstimate is the memory an embedded image takes to decode and re-encode for a
// PDF, estimated as rasterToPDF does for the image on its own.
func embeddedImageEstimate(codec *convimage.Codec, cfg image.Config, size int) int64 {
	return 2*int64(size) + int64(float64(cfg.Width)*float64(cfg.Height)*(codec.DecodeCost+12))
}

// encodePDFPNG encodes img as a non-interlaced 8-bit PNG, the kind fpdf embeds.
func encodePDFPNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: convimage.PNGBuffers}
	if err := enc.Encode(&buf, convimage.To8Bit(img)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeDataURI returns the bytes of a base64 or percent-encoded data: URI.
func decodeDataURI(uri string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(uri, "data:")
	if !ok {
		return nil, false
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, false
	}
	if strings.HasSuffix(strings.ToLower(meta), ";base64") {
		payload = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, payload)
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			if data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "=")); err != nil {
				return nil, false
			}
		}
		return data, true
	}
	s, err := url.PathUnescape(payload)
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}

// mdPDF lays out a parsed Markdown document on a pdfDoc.
type mdPDF struct {
	*pdfDoc
	src []byte
	at  int // the source offset of the furthest block begun: the input its pages consumed
}

// countSource makes the source offset of the blocks laid out the document's progress.
func (m *mdPDF) countSource() {
	m.consumed = func() (int64, int64) { return int64(m.at), int64(len(m.src)) }
}

// begin notes that the layout has reached block n: its first line's offset in the source
// (of its first descendant with lines, for lists and quotes).
func (m *mdPDF) begin(n ast.Node) {
	for c := n; c != nil; c = c.FirstChild() {
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			m.at = max(m.at, c.Lines().At(0).Start)
			return
		}
	}
}

// markdownPDF writes a parsed Markdown document as a PDF.
func markdownPDF(ctx context.Context, w io.Writer, doc ast.Node, src []byte, p convert.Params) error {
	d, err := newPDFDoc(ctx, p, markdownTitle(doc, src))
	if err != nil {
		return err
	}
	defer d.release()
	m := &mdPDF{pdfDoc: d, src: src}
	m.countSource()
	m.blocks(doc)
	return d.finish(w)
}

var bodyStyle = inlineStyle{size: pdfBodySize, color: 0x222222}

func (m *mdPDF) blocks(n ast.Node) {
	for c := n.FirstChild(); c != nil && m.err == nil; c = c.NextSibling() {
		if err := m.ctx.Err(); err != nil {
			m.fail(err)
			return
		}
		m.block(c)
	}
}

func (m *mdPDF) block(n ast.Node) {
	m.begin(n)
	switch n := n.(type) {
	case *ast.Heading:
		size := pdfHeadingSizes[min(max(n.Level, 1), 6)-1]
		st := inlineStyle{bold: true, size: size, color: 0x111111}
		m.heading(m.inline(nil, n, st), n.Level, mdInlineText(n, m.src))
	case *ast.Paragraph:
		m.paragraph(m.inline(nil, n, bodyStyle), pdfBodySize, "L")
		m.y += pdfBodySize * 0.6
	case *ast.TextBlock:
		m.paragraph(m.inline(nil, n, bodyStyle), pdfBodySize, "L")
		if n.NextSibling() != nil {
			m.y += pdfBodySize * 0.3
		}
	case *ast.ThematicBreak:
		m.rule()
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(m.src))
		}
		m.codeBlock(b.String())
	case *ast.Blockquote:
		left, page, y := m.left, m.f.PageNo(), m.y
		m.left += m.indent(pdfQuoteInset)
		m.blocks(n)
		m.quoteBar(left+3, page, y)
		m.left = left
	case *ast.List:
		num := n.Start
		for item := n.FirstChild(); item != nil && m.err == nil; item = item.NextSibling() {
			text := "•"
			if n.IsOrdered() {
				text = strconv.Itoa(num) + "."
				num++
			}
			left := m.left
			m.left += m.indent(pdfListIndent)
			m.markers = append(m.markers, marker{text: text, x: m.left - 5, st: bodyStyle})
			if item.FirstChild() == nil {
				m.ensure(pdfBodySize * pdfLineFactor)
				m.flushMarkers(m.y + pdfBodySize*1.1)
				m.y += pdfBodySize * pdfLineFactor
			}
			m.blocks(item)
			m.left = left
			if !n.IsTight {
				m.y += pdfBodySize * 0.3
			}
		}
		if _, nested := n.Parent().(*ast.ListItem); !nested {
			m.y += pdfBodySize * 0.6
		}
	case *east.Table:
		_, header := n.FirstChild().(*east.TableHeader)
		m.table(func(size float64) [][]tableCell {
			var rows [][]tableCell
			for r := n.FirstChild(); r != nil; r = r.NextSibling() {
				_, isHeader := r.(*east.TableHeader)
				st := inlineStyle{size: size, color: 0x222222, bold: isHeader}
				var row []tableCell
				for c := r.FirstChild(); c != nil; c = c.NextSibling() {
					align := "L"
					if tc, ok := c.(*east.TableCell); ok {
						switch tc.Alignment {
						case east.AlignCenter:
							align = "C"
						case east.AlignRight:
							align = "R"
						}
					}
					row = append(row, tableCell{ws: m.inline(nil, c, st), align: align})
				}
				rows = append(rows, row)
			}
			return rows
		}, header)
	case *ast.HTMLBlock:
		// Raw HTML is omitted, as in HTML output.
	default:
		m.blocks(n)
	}
}

// pdfMinColumn is the narrowest the text column gets by indentation.
const pdfMinColumn = 200

// indent returns how far to indent by want: less once the column is down to pdfMinColumn.
func (d *pdfDoc) indent(want float64) float64 {
	return max(0, min(want, d.right-d.left-pdfMinColumn))
}

// linkable reports whether a link target is one a PDF reader may open: web and mail links.
func linkable(dest string) bool {
	u, err := url.Parse(dest)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
		return true
	}
	return false
}

// inline appends the words of n's inline content in style st.
func (m *mdPDF) inline(ws []word, n ast.Node, st inlineStyle) []word {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			var s string
			if c.IsRaw() {
				s = string(c.Value(m.src))
			} else {
				s = mdTextValue(c.Value(m.src))
			}
			ws = m.words(ws, s, st)
			if c.SoftLineBreak() && len(ws) > 0 && ws[len(ws)-1].space == 0 {
				ws[len(ws)-1].space = st.font().width(" ", st.size)
			}
			if c.HardLineBreak() {
				if len(ws) == 0 {
					ws = append(ws, word{st: st})
				}
				ws[len(ws)-1].br = true
			}
		case *ast.String:
			ws = m.words(ws, string(c.Value), st)
		case *ast.CodeSpan:
			cs := st
			cs.mono, cs.size, cs.color = true, st.size*0.92, 0x8b1a1a
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if s, ok := t.(*ast.Text); ok {
					b.Write(s.Value(m.src))
				} else if s, ok := t.(*ast.String); ok {
					b.Write(s.Value)
				}
			}
			ws = m.words(ws, b.String(), cs)
		case *ast.Emphasis:
			es := st
			if c.Level >= 2 {
				es.bold = true
			} else {
				es.italic = true
			}
			ws = m.inline(ws, c, es)
		case *east.Strikethrough:
			ss := st
			ss.strike = true
			ws = m.inline(ws, c, ss)
		case *ast.Link:
			ws = m.inline(ws, c, linkStyle(st, string(c.Destination)))
		case *ast.AutoLink:
			dest := string(c.URL(m.src))
			ws = m.words(ws, string(c.Label(m.src)), linkStyle(st, dest))
		case *ast.Image:
			if img := m.addImageData(string(c.Destination)); img != nil {
				ws = append(ws, word{img: img, st: st})
				continue
			}
			alt := st
			alt.italic, alt.color = true, 0x666666
			ws = m.inline(ws, c, alt)
		case *east.TaskCheckBox:
			box := "☐ "
			if c.IsChecked {
				box = "☑ "
			}
			if !st.font().hasGlyph([]rune(box)[0]) {
				box = map[bool]string{true: "[x] ", false: "[ ] "}[c.IsChecked]
			}
			ws = m.words(ws, box, st)
		case *ast.RawHTML:
			// omitted, as in HTML output
		default:
			ws = m.inline(ws, c, st)
		}
	}
	return ws
}

// linkStyle is st for the text of a link to dest: blue and underlined when a reader may open it.
func linkStyle(st inlineStyle, dest string) inlineStyle {
	if !linkable(dest) {
		return st
	}
	st.link, st.color, st.underline = dest, 0x1a4fb0, true
	return st
}
