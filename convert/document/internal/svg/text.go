package svg

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"codeberg.org/go-pdf/fpdf"
	"github.com/srwiley/oksvg"
	"github.com/srwiley/rasterx"
	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/fonts"
)

// SVG text is laid out here, not by oksvg (which ignores <text>): <text> and <tspan> with x, y
// (the first value of a list), dx, dy, text-anchor, font-size, font-weight, font-style,
// font-family, fill, fill-opacity, opacity, stroke, stroke-width and transforms, inherited
// through groups, from attributes and style="". Characters are drawn per character with the
// face that has them (convert/internal/fonts). Raster output fills the glyph outlines in document order
// with the shapes (svg.go's paint-order marks); PDF output writes the text as PDF text,
// selectable and searchable, drawing in the picture what a later shape may cover.
// What is not handled is reported (text_not_rendered): textPath, vertical writing modes,
// and selectors style sheets beyond css.go's simple ones.

// svgTextSeg is a run of characters drawn with one face, in user units.
type svgTextSeg struct {
	text    string
	face    *fonts.Face
	x, y    float64 // baseline start
	adv     []float64
	size    float64
	m       rasterx.Matrix2D // user units to the SVG's root coordinates
	fill    color.NRGBA
	hasFill bool
	stroke  color.NRGBA
	strokeW float64
	mark    int // paint-order marks (svg.go) before its <text>
}

// svgTextState is the inherited style while reading the tree.
type svgTextState struct {
	m                         rasterx.Matrix2D
	fill, stroke              string
	strokeW                   float64
	size                      float64
	families                  []string
	bold, italic              bool
	anchor                    string
	opacity, fillOp, strokeOp float64
	skip                      bool
}

// svgTextSkipped are elements whose text is never drawn.
var svgTextSkipped = map[string]bool{
	"defs": true, "title": true, "desc": true, "clipPath": true, "mask": true, "symbol": true,
	"pattern": true, "marker": true, "metadata": true, "style": true, "linearGradient": true,
	"radialGradient": true, "filter": true,
}

// svgTextItem is a piece of a text chunk before layout.
type svgTextItem struct {
	dx, dy float64
	text   string
	st     svgTextState
}

// svgLayoutText reads the text of a sanitised SVG. notes are the features it could not draw.
func svgLayoutText(clean []byte) (segs []svgTextSeg, notes []string, missing []rune) {
	d := xml.NewDecoder(bytes.NewReader(clean))
	stack := []svgTextState{{m: rasterx.Identity, fill: "black", stroke: "none", strokeW: 1, size: 16, anchor: "start", opacity: 1, fillOp: 1, strokeOp: 1}}
	var buf sfnt.Buffer
	inText := 0 // depth of the open <text>, 0 when none
	var chunkX, chunkY float64
	var items []svgTextItem
	var pendDX, pendDY float64
	marks := 0 // paint-order marks seen
	lastSpace := true
	noted := map[string]bool{}
	// Text inside <defs> is drawn only through <use>, which oksvg replays as paths: the ids of
	// the elements around such text, and the ids <use> names, are compared at the end.
	var ids []string // id of each open element ("" when none)
	textIDs, used := map[string]bool{}, map[string]bool{}
	note := func(s string) {
		if !noted[s] {
			noted[s] = true
			notes = append(notes, s)
		}
	}
	flush := func() {
		if len(items) > 0 {
			for _, seg := range svgLayoutChunk(&buf, chunkX, chunkY, items, &missing) {
				seg.mark = marks
				segs = append(segs, seg)
			}
		}
		items = nil
	}
	for {
		tok, err := d.Token()
		if err == io.EOF || err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			st := stack[len(stack)-1]
			name := t.Name.Local
			if name == "path" && svgAttr(t, svgMarkAttr) != "" {
				marks++
			}
			ids = append(ids, svgAttr(t, "id"))
			if name == "text" {
				for _, id := range ids {
					textIDs[id] = true
				}
			}
			if name == "use" {
				if target, ok := strings.CutPrefix(strings.TrimSpace(svgAttr(t, "href")), "#"); ok {
					used[target] = true
				}
			}
			if svgTextSkipped[name] {
				st.skip = true
			}
			if !st.skip {
				// display:none and visibility:hidden set skip: nothing to draw, nothing lost.
				svgApplyStyle(&st, t)
			}
			stack = append(stack, st)
			if st.skip {
				continue
			}
			switch name {
			case "text":
				if wm := svgStyleValue(t, "writing-mode"); strings.HasPrefix(wm, "tb") || strings.HasPrefix(wm, "vertical") {
					note("vertical text")
				}
				flush()
				inText = len(stack)
				chunkX, chunkY = svgFirstNumber(svgAttr(t, "x")), svgFirstNumber(svgAttr(t, "y"))
				pendDX, pendDY = svgFirstNumber(svgAttr(t, "dx")), svgFirstNumber(svgAttr(t, "dy"))
				lastSpace = true
			case "tspan":
				if inText == 0 {
					continue
				}
				xs, ys := svgAttr(t, "x"), svgAttr(t, "y")
				if xs != "" || ys != "" {
					// A new absolutely positioned chunk; where the last left off is not
					// known before layout, so an axis not given keeps the chunk's.
					flush()
					if xs != "" {
						chunkX = svgFirstNumber(xs)
					}
					if ys != "" {
						chunkY = svgFirstNumber(ys)
					}
					pendDX, pendDY = 0, 0
				}
				pendDX += svgFirstNumber(svgAttr(t, "dx"))
				pendDY += svgFirstNumber(svgAttr(t, "dy"))
			case "textPath":
				if inText > 0 {
					note("text on a path (textPath)")
					stack[len(stack)-1].skip = true
				}
			}
		case xml.EndElement:
			if t.Name.Local == "text" && len(stack) == inText {
				flush()
				inText = 0
			}
			stack = stack[:len(stack)-1]
			ids = ids[:len(ids)-1]
		case xml.CharData:
			st := stack[len(stack)-1]
			if inText == 0 || st.skip {
				continue
			}
			s := svgCollapseSpace(string(t), lastSpace)
			if s == "" {
				continue
			}
			lastSpace = strings.HasSuffix(s, " ")
			items = append(items, svgTextItem{dx: pendDX, dy: pendDY, text: s, st: st})
			pendDX, pendDY = 0, 0
		}
	}
	flush()
	for id := range used {
		if id != "" && textIDs[id] {
			note("text reused with <use>")
			break
		}
	}
	return segs, notes, missing
}

// svgCollapseSpace applies xml:space="default": newlines go, tabs become spaces, runs of
// spaces become one, and a leading space after a space (or at the start of the text) goes.
func svgCollapseSpace(s string, afterSpace bool) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\n', '\r':
			continue
		case '\t':
			r = ' '
		}
		if r == ' ' && afterSpace {
			continue
		}
		afterSpace = r == ' '
		b.WriteRune(r)
	}
	return b.String()
}

// svgLayoutChunk places one chunk's items from (x, y) and aligns it by the first item's
// text-anchor.
func svgLayoutChunk(buf *sfnt.Buffer, x, y float64, items []svgTextItem, missing *[]rune) []svgTextSeg {
	// A trailing space at the end of a chunk does not count.
	last := &items[len(items)-1]
	last.text = strings.TrimRight(last.text, " ")
	var segs []svgTextSeg
	cx, cy := x, y
	start := len(segs)
	for _, it := range items {
		cx += it.dx
		cy += it.dy
		base := fonts.Pick(it.st.families, it.st.bold, it.st.italic)
		var cur *svgTextSeg
		for _, r := range it.text {
			f := fonts.ForRune(buf, base, r)
			if f == nil {
				f = base
				if len(*missing) < 8 && !slices.Contains(*missing, r) && r != ' ' {
					*missing = append(*missing, r)
				}
			}
			adv := svgAdvance(buf, f, r, it.st.size)
			if cur == nil || cur.face != f {
				segs = append(segs, svgTextSeg{face: f, x: cx, y: cy, size: it.st.size, m: it.st.m, strokeW: it.st.strokeW})
				cur = &segs[len(segs)-1]
				svgSegPaint(cur, it.st)
			}
			cur.text += string(r)
			cur.adv = append(cur.adv, adv)
			cx += adv
		}
	}
	shift := 0.0
	switch items[0].st.anchor {
	case "middle":
		shift = -(cx - x) / 2
	case "end":
		shift = -(cx - x)
	}
	for i := start; i < len(segs); i++ {
		segs[i].x += shift
	}
	return segs
}

// svgSegPaint sets a segment's fill and stroke from the style.
func svgSegPaint(seg *svgTextSeg, st svgTextState) {
	if c, ok := svgPaint(st.fill, st.opacity*st.fillOp); ok {
		seg.fill, seg.hasFill = c, true
	}
	if c, ok := svgPaint(st.stroke, st.opacity*st.strokeOp); ok && st.strokeW > 0 {
		seg.stroke = c
	} else {
		seg.strokeW = 0
	}
}

// svgPaint parses a fill or stroke; gradients and patterns are drawn with black.
func svgPaint(v string, opacity float64) (color.NRGBA, bool) {
	v = strings.TrimSpace(v)
	if v == "" || v == "none" || v == "transparent" {
		return color.NRGBA{}, false
	}
	var c color.Color = color.Black
	if !strings.HasPrefix(v, "url(") {
		pc, err := oksvg.ParseSVGColor(v)
		if err != nil || pc == nil {
			return color.NRGBA{}, false
		}
		c = pc
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = uint8(math.Round(float64(n.A) * max(0, min(1, opacity))))
	return n, n.A > 0
}

// svgAdvance is the advance of r in f at size user units.
func svgAdvance(buf *sfnt.Buffer, f *fonts.Face, r rune, size float64) float64 {
	fnt, err := f.Parse()
	if err != nil {
		return 0
	}
	g, _ := fnt.GlyphIndex(buf, r)
	upem := fnt.UnitsPerEm()
	adv, err := fnt.GlyphAdvance(buf, g, fixed.Int26_6(upem)<<6, font.HintingNone)
	if err != nil {
		return 0
	}
	return float64(adv) / 64 * size / float64(upem)
}

// svgFirstNumber is the first number of a coordinate list (a length in px, pt...), 0 when none.
func svgFirstNumber(s string) float64 {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(f) == 0 {
		return 0
	}
	if v, err := strconv.ParseFloat(f[0], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return v
	}
	if strings.HasPrefix(strings.TrimSpace(f[0]), "-") {
		v, ok := svgLength(strings.TrimPrefix(strings.TrimSpace(f[0]), "-"))
		if ok {
			return -v
		}
		return 0
	}
	v, _ := svgLength(f[0])
	return v
}

// svgStyleValue returns a property from style="" (its last declaration, as in CSS; the
// sanitiser puts style sheet rules first and !important ones last) or, failing that, the
// attribute.
func svgStyleValue(se xml.StartElement, key string) string {
	if style := svgAttr(se, "style"); style != "" {
		found, val := false, ""
		for _, decl := range strings.Split(style, ";") {
			k, v, ok := strings.Cut(decl, ":")
			if ok && strings.TrimSpace(k) == key {
				found, val = true, strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important"))
			}
		}
		if found {
			return val
		}
	}
	return strings.TrimSpace(svgAttr(se, key))
}

// svgApplyStyle applies an element's transform and text properties to the inherited state.
func svgApplyStyle(st *svgTextState, se xml.StartElement) {
	if tr := svgAttr(se, "transform"); tr != "" {
		st.m = st.m.Mult(svgParseTransform(tr))
	}
	if v := svgStyleValue(se, "display"); v == "none" {
		st.skip = true
	}
	if v := svgStyleValue(se, "visibility"); v == "hidden" || v == "collapse" {
		st.skip = true
	}
	if v := svgStyleValue(se, "fill"); v != "" && v != "inherit" {
		st.fill = v
	}
	if v := svgStyleValue(se, "stroke"); v != "" && v != "inherit" {
		st.stroke = v
	}
	if v := svgStyleValue(se, "stroke-width"); v != "" {
		st.strokeW = svgFirstNumber(v)
	}
	num := func(key string, dst *float64) {
		if v := svgStyleValue(se, key); v != "" {
			if f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64); err == nil && !math.IsNaN(f) {
				if strings.HasSuffix(v, "%") {
					f /= 100
				}
				*dst *= max(0, min(1, f))
			}
		}
	}
	num("opacity", &st.opacity)
	fo, so := 1.0, 1.0
	num("fill-opacity", &fo)
	num("stroke-opacity", &so)
	if svgStyleValue(se, "fill-opacity") != "" {
		st.fillOp = fo
	}
	if svgStyleValue(se, "stroke-opacity") != "" {
		st.strokeOp = so
	}
	if v := svgStyleValue(se, "font-size"); v != "" {
		st.size = svgFontSize(v, st.size)
	}
	if v := svgStyleValue(se, "font-family"); v != "" {
		st.families = strings.Split(v, ",")
	}
	if v := svgStyleValue(se, "font-weight"); v != "" {
		switch v {
		case "bold", "bolder":
			st.bold = true
		case "normal", "lighter":
			st.bold = false
		default:
			if n, err := strconv.Atoi(v); err == nil {
				st.bold = n >= 600
			}
		}
	}
	if v := svgStyleValue(se, "font-style"); v != "" {
		st.italic = v == "italic" || v == "oblique"
	}
	if v := svgStyleValue(se, "text-anchor"); v == "start" || v == "middle" || v == "end" {
		st.anchor = v
	}
	if v := svgStyleValue(se, "font"); v != "" {
		// The shorthand: its size (with a unit) and what follows it are the size and families.
		f := strings.Fields(v)
		for i, w := range f {
			if sz, _, _ := strings.Cut(w, "/"); sz != "" && (sz[0] >= '0' && sz[0] <= '9' || sz[0] == '.') {
				st.size = svgFontSize(sz, st.size)
				st.families = strings.Split(strings.Join(f[i+1:], " "), ",")
				break
			}
			switch w {
			case "bold":
				st.bold = true
			case "italic", "oblique":
				st.italic = true
			}
		}
	}
}

// svgFontSize parses a font size relative to the inherited one.
func svgFontSize(v string, parent float64) float64 {
	v = strings.TrimSpace(v)
	switch v {
	case "xx-small":
		return 9
	case "x-small":
		return 10
	case "small":
		return 13
	case "medium":
		return 16
	case "large":
		return 18
	case "x-large":
		return 24
	case "xx-large":
		return 32
	case "smaller":
		return parent / 1.2
	case "larger":
		return parent * 1.2
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		if f, err := strconv.ParseFloat(p, 64); err == nil && f > 0 {
			return parent * f / 100
		}
		return parent
	}
	if p, ok := strings.CutSuffix(v, "em"); ok && !strings.HasSuffix(p, "r") {
		if f, err := strconv.ParseFloat(p, 64); err == nil && f > 0 {
			return parent * f
		}
		return parent
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e5 {
		return f
	}
	if f, ok := svgLength(v); ok && f < 1e5 {
		return f
	}
	return parent
}

// svgParseTransform parses an SVG transform list; what does not parse is left out.
func svgParseTransform(s string) rasterx.Matrix2D {
	m := rasterx.Identity
	for {
		open := strings.IndexByte(s, '(')
		if open < 0 {
			return m
		}
		end := strings.IndexByte(s[open:], ')')
		if end < 0 {
			return m
		}
		name := strings.TrimSpace(strings.Trim(strings.TrimSpace(s[:open]), ","))
		var v []float64
		for _, f := range strings.FieldsFunc(s[open+1:open+end], func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return m
			}
			v = append(v, x)
		}
		s = s[open+end+1:]
		switch {
		case name == "matrix" && len(v) == 6:
			m = m.Mult(rasterx.Matrix2D{A: v[0], B: v[1], C: v[2], D: v[3], E: v[4], F: v[5]})
		case name == "translate" && len(v) == 1:
			m = m.Translate(v[0], 0)
		case name == "translate" && len(v) == 2:
			m = m.Translate(v[0], v[1])
		case name == "scale" && len(v) == 1:
			m = m.Scale(v[0], v[0])
		case name == "scale" && len(v) == 2:
			m = m.Scale(v[0], v[1])
		case name == "rotate" && len(v) == 1:
			m = m.Rotate(v[0] * math.Pi / 180)
		case name == "rotate" && len(v) == 3:
			m = m.Translate(v[1], v[2]).Rotate(v[0]*math.Pi/180).Translate(-v[1], -v[2])
		case name == "skewX" && len(v) == 1:
			m = m.SkewX(v[0] * math.Pi / 180)
		case name == "skewY" && len(v) == 1:
			m = m.SkewY(v[0] * math.Pi / 180)
		}
	}
}

// svgTextDrawer fills (and strokes) the glyph outlines of text segments onto a scanner's image.
type svgTextDrawer struct {
	filler  *rasterx.Filler
	stroker *rasterx.Stroker
	buf     sfnt.Buffer
}

func newSVGTextDrawer(w, h int, scanner rasterx.Scanner) *svgTextDrawer {
	return &svgTextDrawer{filler: rasterx.NewFiller(w, h, scanner), stroker: rasterx.NewStroker(w, h, scanner)}
}

// svgTraceText adds the glyph outlines of seg to a, with m mapping the SVG's root coordinates
// to pixels.
func svgTraceText(buf *sfnt.Buffer, seg svgTextSeg, m rasterx.Matrix2D, a rasterx.Adder) error {
	fnt, err := seg.face.Parse()
	if err != nil {
		return err
	}
	mt := m.Mult(seg.m)
	k := seg.size / float64(fnt.UnitsPerEm()) / 64
	x := seg.x
	i := 0
	for _, r := range seg.text {
		g, _ := fnt.GlyphIndex(buf, r)
		outline, err := fnt.LoadGlyph(buf, g, fixed.Int26_6(fnt.UnitsPerEm())<<6, nil)
		if err == nil {
			pt := func(p fixed.Point26_6) fixed.Point26_6 {
				px, py := mt.Transform(x+float64(p.X)*k, seg.y+float64(p.Y)*k)
				return fixed.Point26_6{X: fixed.Int26_6(px * 64), Y: fixed.Int26_6(py * 64)}
			}
			open := false
			for _, s := range outline {
				switch s.Op {
				case sfnt.SegmentOpMoveTo:
					if open {
						a.Stop(true)
					}
					a.Start(pt(s.Args[0]))
					open = true
				case sfnt.SegmentOpLineTo:
					a.Line(pt(s.Args[0]))
				case sfnt.SegmentOpQuadTo:
					a.QuadBezier(pt(s.Args[0]), pt(s.Args[1]))
				case sfnt.SegmentOpCubeTo:
					a.CubeBezier(pt(s.Args[0]), pt(s.Args[1]), pt(s.Args[2]))
				}
			}
			if open {
				a.Stop(true)
			}
		}
		x += seg.adv[i]
		i++
	}
	return nil
}

// svgStrokeScale is how much m scales the segment's lengths.
func svgStrokeScale(seg svgTextSeg, m rasterx.Matrix2D) float64 {
	mt := m.Mult(seg.m)
	return math.Sqrt(math.Abs(mt.A*mt.D - mt.B*mt.C))
}

// draw paints one segment; m maps the SVG's root coordinates to pixels. Each segment is one
// fill (and one stroke): the scanner's cost is per draw, over the whole canvas, not per glyph.
func (d *svgTextDrawer) draw(seg svgTextSeg, m rasterx.Matrix2D) error {
	if seg.hasFill {
		d.filler.Clear()
		d.filler.SetColor(seg.fill)
		if err := svgTraceText(&d.buf, seg, m, d.filler); err != nil {
			return err
		}
		d.filler.Draw()
	}
	if seg.strokeW > 0 {
		d.stroker.Clear()
		d.stroker.SetStroke(fixed.Int26_6(seg.strokeW*svgStrokeScale(seg, m)*64), 4<<6, rasterx.ButtCap, nil, rasterx.FlatGap, rasterx.Miter)
		d.stroker.SetColor(seg.stroke)
		if err := svgTraceText(&d.buf, seg, m, d.stroker); err != nil {
			return err
		}
		d.stroker.Draw()
	}
	return nil
}

// svgBoundsAdder is a rasterx.Adder keeping the bounding box of the points (control points
// included) it is given.
type svgBoundsAdder struct{ svgBoundsScanner }

func (b *svgBoundsAdder) QuadBezier(p, q fixed.Point26_6)    { b.add(p); b.add(q) }
func (b *svgBoundsAdder) CubeBezier(p, q, r fixed.Point26_6) { b.add(p); b.add(q); b.add(r) }
func (b *svgBoundsAdder) Stop(bool)                          {}

// svgTextBounds is the box, in pixels, a segment may paint, m mapping the SVG's root
// coordinates to pixels; empty when it paints nothing.
func svgTextBounds(buf *sfnt.Buffer, seg svgTextSeg, m rasterx.Matrix2D) (fixed.Rectangle26_6, error) {
	if !seg.hasFill && seg.strokeW <= 0 {
		return fixed.Rectangle26_6{}, nil
	}
	var b svgBoundsAdder
	if err := svgTraceText(buf, seg, m, &b); err != nil {
		return fixed.Rectangle26_6{}, err
	}
	if b.box.Empty() {
		return b.box, nil
	}
	// The stroke's miters reach at most 4 half-widths out (the miter limit is 4).
	if seg.strokeW > 0 {
		out := fixed.Int26_6(min(1e6, 2*seg.strokeW*svgStrokeScale(seg, m)+1) * 64)
		b.box.Min.X, b.box.Min.Y = b.box.Min.X-out, b.box.Min.Y-out
		b.box.Max.X, b.box.Max.Y = b.box.Max.X+out, b.box.Max.Y+out
	}
	return b.box, nil
}

// warnText reports what SVG text could not be drawn and characters no font has.
func warnSVGText(p convert.Params, s *svgDrawing) {
	for _, n := range s.textNotes {
		p.Warn(convert.WarnTextNotRendered, "the SVG's "+n+" is not drawn")
	}
	if s.missing != "" {
		p.Warn(convert.WarnGlyphsMissing, "no font has a glyph for "+s.missing+"; drawn as boxes")
	}
}

// svgPDFFace is how one face of an SVG's text is embedded in a PDF: the characters each of
// its two fpdf instances draws (see fonts.MaxRun: a character that would make a run of consecutive
// characters in the first instance longer goes to the second).
type svgPDFFace struct {
	first, second map[rune]bool
}

// svgPDFRune is what r becomes in the PDF's text (fonts.SafeText), ok false when it is dropped.
func svgPDFRune(r rune) (rune, bool) {
	for _, d := range fonts.SafeText(string(r)) {
		return d, true
	}
	return 0, false
}

// pdfFaces plans the faces of the text pdfText writes (the Go font for those fpdf cannot
// embed), in the order it writes them. More than fonts.MaxFallbackChars distinct characters
// fail, before anything costly.
func (s *svgDrawing) pdfFaces() (map[*fonts.Face]*svgPDFFace, error) {
	faces := map[*fonts.Face]*svgPDFFace{}
	n := 0
	for _, seg := range s.text {
		if !seg.hasFill && seg.strokeW == 0 {
			continue
		}
		face := seg.face
		if !face.PDFOK() {
			face = fonts.Sans[0]
		}
		pf := faces[face]
		if pf == nil {
			pf = &svgPDFFace{first: map[rune]bool{}, second: map[rune]bool{}}
			faces[face] = pf
		}
		for _, r := range seg.text {
			r, ok := svgPDFRune(r)
			if !ok || pf.first[r] || pf.second[r] {
				continue
			}
			if n++; n > fonts.MaxFallbackChars {
				return nil, convert.Errorf(nil, "the SVG's text uses more than %d distinct characters, more than a PDF made here may embed", fonts.MaxFallbackChars)
			}
			if fonts.RunWith(pf.first, r) > fonts.MaxRun {
				pf.second[r] = true
			} else {
				pf.first[r] = true
			}
		}
	}
	return faces, nil
}

// pdfText writes the text segments as PDF text over a pw x ph point page. Each segment is
// written in its own coordinate system (cm), so transforms, rotation and skew are kept. Faces
// fpdf cannot embed (OpenType with CFF outlines) are replaced by the Go font of the same style.
// Segments drawn in the picture (drawn[i]) are written invisible, to be selected and searched.
// faces is what pdfFaces planned.
func (s *svgDrawing) pdfText(f *fpdf.Fpdf, pw, ph float64, drawn []bool, faces map[*fonts.Face]*svgPDFFace) {
	if len(s.text) == 0 {
		return
	}
	root := s.matrix(s.info.w, s.info.h, pw, ph, convert.FitFill)
	names := map[*fonts.Face]string{}
	for i, seg := range s.text {
		if !seg.hasFill && seg.strokeW == 0 {
			continue
		}
		face := seg.face
		if !face.PDFOK() {
			face = fonts.Sans[0]
		}
		name, ok := names[face]
		if !ok {
			name = fmt.Sprintf("svgf%d", len(names))
			names[face] = name
			f.AddUTF8FontFromBytes(name, "", bytes.Clone(face.TTF()))
			if pf := faces[face]; pf != nil && len(pf.second) > 0 {
				f.AddUTF8FontFromBytes(name+"b", "", bytes.Clone(face.TTF()))
			}
		}
		m := root.Mult(seg.m)
		f.TransformBegin()
		f.Transform(fpdf.TransformMatrix{A: m.A, B: -m.B, C: -m.C, D: m.D, E: m.E, F: ph - m.F})
		f.SetFont(name, "", seg.size)
		mode := 0
		switch {
		case seg.hasFill && seg.strokeW > 0:
			mode = 2
		case seg.strokeW > 0:
			mode = 1
		}
		if i < len(drawn) && drawn[i] {
			mode = 3
		}
		alpha := 1.0
		if seg.hasFill {
			f.SetTextColor(int(seg.fill.R), int(seg.fill.G), int(seg.fill.B))
			alpha = float64(seg.fill.A) / 255
		}
		if seg.strokeW > 0 {
			f.SetDrawColor(int(seg.stroke.R), int(seg.stroke.G), int(seg.stroke.B))
			f.SetLineWidth(seg.strokeW)
			if !seg.hasFill {
				alpha = float64(seg.stroke.A) / 255
			}
		}
		f.SetTextRenderingMode(mode)
		if alpha < 1 && mode != 3 {
			f.SetAlpha(alpha, "Normal")
		}
		// fpdf's Text takes y down from the page top: local (x, y) in SVG units is PDF (x, -y).
		if pf := faces[face]; pf == nil || len(pf.second) == 0 {
			f.Text(seg.x, ph+seg.y, fonts.SafeText(seg.text))
		} else {
			svgPDFPieces(f, seg, ph, pf, name)
		}
		if alpha < 1 && mode != 3 {
			f.SetAlpha(1, "Normal")
		}
		f.SetTextRenderingMode(0)
		f.TransformEnd()
	}
}

// svgPDFPieces writes a segment whose face has two fpdf instances (name and name+"b") as
// pieces of one instance each, each at its place in the segment.
func svgPDFPieces(f *fpdf.Fpdf, seg svgTextSeg, ph float64, pf *svgPDFFace, name string) {
	var piece []rune
	x, at, second := seg.x, seg.x, false
	flush := func() {
		if len(piece) > 0 {
			font := name
			if second {
				font += "b"
			}
			f.SetFont(font, "", seg.size)
			f.Text(at, ph+seg.y, string(piece))
			piece = piece[:0]
		}
	}
	i := 0
	for _, r := range seg.text {
		if d, ok := svgPDFRune(r); ok {
			if pf.second[d] != second {
				flush()
				second = pf.second[d]
			}
			if len(piece) == 0 {
				at = x
			}
			piece = append(piece, d)
		}
		if i < len(seg.adv) {
			x += seg.adv[i]
		}
		i++
	}
	flush()
}
