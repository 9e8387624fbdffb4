// Package svg is the document family's SVG reader: it sanitises an SVG (nothing it names is
// fetched or opened), parses it with oksvg, lays out its text itself (text.go, with the faces of
// convert/internal/fonts) and draws it to a raster in any of the image family's formats
// (Rasterize) or to a one-page PDF with its text as PDF text (WritePDF). convert/document
// reads the input, within its size limit, and registers the converters.
package svg

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"codeberg.org/go-pdf/fpdf"
	"github.com/srwiley/oksvg"
	"github.com/srwiley/rasterx"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"golang.org/x/net/html/charset"

	"github.com/convsvc/convsvc/convert"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/fonts"
)

// SVG input is drawn with oksvg and rasterx (paths, basic shapes, fills, strokes, gradients,
// transforms; no filters, masks or embedded images), and its text by text.go. Before
// oksvg sees it the file is re-serialised by svgSanitize, which refuses DTDs that declare entities, drops scripts,
// foreign objects, images and every reference that is not to the file itself (href, xlink:href,
// url(...), @import): nothing an SVG names is ever fetched or opened.

// svgDropped are elements removed with everything inside them.
var svgDropped = map[string]bool{
	"script": true, "foreignobject": true, "image": true, "feimage": true, "iframe": true,
	"audio": true, "video": true, "object": true, "embed": true, "handler": true, "listener": true,
	"animation": true,
}

// Bounds on SVG structure.
const (
	svgMaxDepth    = 256
	svgMaxElements = 500_000
	svgMaxSide     = 1e6 // largest intrinsic width or height, CSS pixels
	svgDefaultDPI  = 96  // an SVG's pixels are CSS pixels
	svgPDFScale    = 2   // SVG is embedded in PDFs at twice its size in pixels
)

// svgInfo is what the root element says about the drawing's size.
type svgInfo struct {
	w, h               float64 // intrinsic size in CSS pixels
	vbX, vbY, vbW, vbH float64
	stretch            bool // preserveAspectRatio="none"
	marks              int  // paint-order marks written, one before each <text> outside <defs>
}

// Paint order: oksvg ignores <text> and returns its shapes as one list, in document order.
// So that text paints between the shapes around it, svgSanitize writes a mark before each
// <text> outside <defs>: an empty path oksvg keeps in its list (found by its impossible miter
// limit; SVG's is at least 1) and svgLayoutText sees (by svgMarkAttr, which is removed from the
// input). parseSVG takes the marks out of oksvg's list, remembering where they were.
const (
	svgMarkAttr  = "convsvc-paint-mark"
	svgMarkMiter = 0.000123
	svgMark      = `<path d="M0 0" fill="none" stroke="none" stroke-miterlimit="0.000123" ` + svgMarkAttr + `="1"/>`
)

var (
	cssURLRE    = regexp.MustCompile(`(?i)url\(\s*['"]?\s*([^)'"]*)['"]?\s*\)`)
	cssImportRE = regexp.MustCompile(`(?i)@import[^;]*;?`)
)

// svgNeutralizeCSS replaces url(...) references to anything but the file itself with none
// and removes @import rules.
func svgNeutralizeCSS(s string) string {
	s = cssImportRE.ReplaceAllString(s, "")
	return cssURLRE.ReplaceAllStringFunc(s, func(m string) string {
		if sub := cssURLRE.FindStringSubmatch(m); len(sub) == 2 && strings.HasPrefix(strings.TrimSpace(sub[1]), "#") {
			return m
		}
		return "none"
	})
}

// svgLength parses an absolute SVG length into CSS pixels; percentages and nonsense are not ok.
func svgLength(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		px     float64
	}{{"px", 1}, {"pt", 96.0 / 72}, {"pc", 16}, {"mm", 96 / 25.4}, {"cm", 96 / 2.54}, {"in", 96}, {"em", 16}, {"ex", 8}}
	f := 1.0
	for _, u := range units {
		if strings.HasSuffix(strings.ToLower(s), u.suffix) {
			s, f = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.px
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, false
	}
	return v * f, true
}

// svgSanitize re-serialises an SVG with only what oksvg may read, and returns its size.
//
// It reads the file twice. The first pass validates and collects what <use> may refer to:
// oksvg resolves <use> only to groups in <defs> (each starting at an element with an id) and
// replays them recursively, so a <use> inside <defs> could recurse without end or expand
// exponentially. The second pass writes the file without <use> inside <defs>, without <use>
// of anything oksvg cannot resolve, and counting what every <use> expands to.
//
// The first pass also collects the <style> sheets (css.go), which the second applies to
// each element's style="", dropping the <style> elements.
func svgSanitize(ctx context.Context, data []byte) ([]byte, svgInfo, error) {
	var css strings.Builder
	defs, elements, err := svgScan(ctx, data, nil, &css)
	if err != nil {
		return nil, svgInfo{}, err
	}
	sheet, err := parseSVGCSS(svgNeutralizeCSS(css.String()))
	if err != nil {
		return nil, svgInfo{}, err
	}
	sheet.maxInls = len(data) + svgCSSMaxInlined
	var out bytes.Buffer
	out.Grow(len(data))
	w := &svgWriter{out: &out, defs: defs, expanded: elements, sheet: sheet}
	if _, _, err := svgScan(ctx, data, w, nil); err != nil {
		return nil, svgInfo{}, err
	}
	return out.Bytes(), w.info, nil
}

// svgWriter is the second pass of svgSanitize.
type svgWriter struct {
	out      *bytes.Buffer
	defs     map[string]int // def id -> elements in its group
	expanded int            // elements once every <use> is expanded
	info     svgInfo
	stack    []string
	sheet    *svgSheet
}

// svgScan reads an SVG checking its structure; with w nil it returns the <defs> groups and the
// element count and adds the text of its <style> sheets to css, else it writes the sanitised
// file to w.
func svgScan(ctx context.Context, data []byte, w *svgWriter, css *strings.Builder) (map[string]int, int, error) {
	invalid := func(err error, why string, args ...any) error {
		return convert.Errorf(err, "input is not a valid SVG file ("+why+")", args...)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.CharsetReader = charset.NewReaderLabel
	defs := map[string]int{}
	group := ""
	depth, skip, elements := 0, 0, 0
	defsDepth, gradDepth := 0, 0 // depth of the open <defs> and gradient, 0 when none
	styleDepth := 0              // depth of the open CSS <style>, 0 when none
	rootSeen := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) && strings.Contains(se.Msg, "entity") {
				return nil, 0, invalid(err, "it uses an entity that is not defined: %v", se.Msg)
			}
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			return nil, 0, invalid(err, "%v", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			if bytes.Contains(bytes.ToUpper(t), []byte("ENTITY")) {
				return nil, 0, convert.Errorf(nil, "the SVG declares XML entities in a DTD, which are not allowed")
			}
		case xml.StartElement:
			if elements++; elements > svgMaxElements {
				return nil, 0, convert.Errorf(nil, "the SVG has more than %d elements", svgMaxElements)
			}
			if depth++; depth > svgMaxDepth {
				return nil, 0, convert.Errorf(errTooDeep, "the SVG nests elements more than %d deep", svgMaxDepth)
			}
			if elements%4096 == 0 && ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			name := t.Name.Local
			if skip > 0 || svgDropped[strings.ToLower(name)] || name == "use" && defsDepth > 0 || name == "style" && w != nil {
				skip++
				continue
			}
			if name == "style" && styleDepth == 0 {
				if typ := strings.ToLower(strings.TrimSpace(svgAttr(t, "type"))); typ == "" || typ == "text/css" {
					styleDepth = depth
				}
			}
			if !rootSeen {
				if name != "svg" {
					return nil, 0, invalid(nil, "its root element is <%s>, not <svg>", name)
				}
				rootSeen = true
			}
			switch {
			case name == "defs" && defsDepth == 0:
				defsDepth = depth
			case name == "linearGradient" || name == "radialGradient":
				if gradDepth == 0 {
					gradDepth = depth
				}
			case defsDepth > 0 && gradDepth == 0:
				if id := svgAttr(t, "id"); id != "" {
					group = id
				}
				if group != "" {
					defs[group]++
				}
			}
			if w == nil {
				continue
			}
			if name == "use" {
				target, ok := strings.CutPrefix(strings.TrimSpace(svgAttr(t, "href")), "#")
				n, known := w.defs[target]
				if !ok || !known {
					skip++
					continue
				}
				if w.expanded += n; w.expanded > svgMaxElements {
					return nil, 0, convert.Errorf(nil, "the SVG has more than %d elements once its <use> elements are expanded", svgMaxElements)
				}
			}
			if len(w.stack) == 0 {
				info, err := svgRootInfo(t)
				if err != nil {
					return nil, 0, err
				}
				w.info = info
				fmt.Fprintf(w.out, `<svg viewBox="%g %g %g %g"`, info.vbX, info.vbY, info.vbW, info.vbH)
				if info.stretch {
					w.out.WriteString(` preserveAspectRatio="none"`)
				}
				attrs, err := w.styled(t)
				if err != nil {
					return nil, 0, err
				}
				writeSVGAttrs(w.out, attrs, map[string]bool{"viewBox": true, "width": true, "height": true, "preserveAspectRatio": true})
			} else {
				if name == "text" && defsDepth == 0 {
					w.out.WriteString(svgMark)
					w.info.marks++
				}
				attrs, err := w.styled(t)
				if err != nil {
					return nil, 0, err
				}
				w.out.WriteString("<" + name)
				writeSVGAttrs(w.out, attrs, nil)
			}
			w.out.WriteString(">")
			w.stack = append(w.stack, name)
		case xml.EndElement:
			if depth == defsDepth {
				defsDepth, group = 0, ""
			}
			if depth == gradDepth {
				gradDepth = 0
			}
			if depth == styleDepth {
				styleDepth = 0
			}
			depth--
			if skip > 0 {
				skip--
				continue
			}
			if w != nil && len(w.stack) > 0 {
				w.out.WriteString("</" + w.stack[len(w.stack)-1] + ">")
				w.stack = w.stack[:len(w.stack)-1]
			}
		case xml.CharData:
			if w == nil && css != nil && skip == 0 && styleDepth > 0 {
				if css.Len()+len(t) > svgCSSMaxBytes {
					return nil, 0, convert.Errorf(nil, "the SVG's style sheets are larger than %d KiB", svgCSSMaxBytes>>10)
				}
				css.Write(t)
				css.WriteByte('\n')
			}
			if w == nil || skip > 0 || len(w.stack) == 0 {
				continue
			}
			s := string(t)
			if w.stack[len(w.stack)-1] == "style" {
				s = svgNeutralizeCSS(s)
			}
			xml.EscapeText(w.out, []byte(s))
		}
	}
	if !rootSeen {
		return nil, 0, invalid(nil, "it has no <svg> element")
	}
	return defs, elements, nil
}

// styled returns the element's attributes with its style="" (last) carrying what the style
// sheets set, when they set anything.
func (w *svgWriter) styled(se xml.StartElement) ([]xml.Attr, error) {
	style, changed, err := w.sheet.style(se)
	if err != nil || !changed {
		return se.Attr, err
	}
	attrs := make([]xml.Attr, 0, len(se.Attr)+1)
	for _, a := range se.Attr {
		if a.Name.Local != "style" {
			attrs = append(attrs, a)
		}
	}
	return append(attrs, xml.Attr{Name: xml.Name{Local: "style"}, Value: style}), nil
}

// svgAttr returns the value of the attribute with local name key, whatever its namespace
// (href and xlink:href alike).
func svgAttr(se xml.StartElement, key string) string {
	for _, a := range se.Attr {
		if a.Name.Local == key {
			return a.Value
		}
	}
	return ""
}

// svgRootInfo reads the intrinsic size and view box from the root element. A missing view box
// is the size; a missing size is the view box's; neither is 300x150, as in browsers.
func svgRootInfo(se xml.StartElement) (svgInfo, error) {
	info := svgInfo{}
	var width, height, viewBox, par string
	for _, a := range se.Attr {
		switch a.Name.Local {
		case "width":
			width = a.Value
		case "height":
			height = a.Value
		case "viewBox":
			viewBox = a.Value
		case "preserveAspectRatio":
			par = a.Value
		}
	}
	hasVB := false
	if f := strings.FieldsFunc(viewBox, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }); len(f) == 4 {
		var v [4]float64
		ok := true
		for i := range f {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				ok = false
			}
			v[i] = x
		}
		if ok && v[2] > 0 && v[3] > 0 {
			info.vbX, info.vbY, info.vbW, info.vbH, hasVB = v[0], v[1], v[2], v[3], true
		}
	}
	w, okW := svgLength(width)
	h, okH := svgLength(height)
	switch {
	case okW && okH:
	case hasVB && okW:
		h = w * info.vbH / info.vbW
	case hasVB && okH:
		w = h * info.vbW / info.vbH
	case hasVB:
		w, h = info.vbW, info.vbH
	default:
		w, h = 300, 150
	}
	if !hasVB {
		info.vbW, info.vbH = w, h
	}
	if !(w > 0 && h > 0) || w > svgMaxSide || h > svgMaxSide {
		return info, convert.Errorf(nil, "the SVG's size %gx%g is out of range", w, h)
	}
	info.w, info.h = w, h
	info.stretch = strings.TrimSpace(par) == "none"
	return info, nil
}

// writeSVGAttrs writes attributes by local name, dropping event handlers, namespace
// declarations, duplicates and references that leave the file.
func writeSVGAttrs(out *bytes.Buffer, attrs []xml.Attr, except map[string]bool) {
	seen := map[string]bool{}
	for _, a := range attrs {
		k := a.Name.Local
		switch {
		case a.Name.Space == "xmlns" || k == "xmlns" || except[k] || seen[k] || k == svgMarkAttr:
			continue
		case strings.HasPrefix(strings.ToLower(k), "on"):
			continue
		case k == "href" || k == "src":
			if !strings.HasPrefix(strings.TrimSpace(a.Value), "#") {
				continue
			}
		}
		seen[k] = true
		v := a.Value
		if strings.Contains(strings.ToLower(v), "url(") || strings.Contains(strings.ToLower(v), "@import") {
			v = svgNeutralizeCSS(v)
		}
		out.WriteString(" " + k + `="`)
		xml.EscapeText(out, []byte(v))
		out.WriteString(`"`)
	}
}

// svgDrawing is a parsed, sanitised SVG.
type svgDrawing struct {
	icon      *oksvg.SvgIcon
	info      svgInfo
	text      []svgTextSeg
	textAt    []int    // for each text segment, how many of icon's paths paint before it
	textNotes []string // text features not drawn
	missing   string   // characters no font has, quoted
}

// Size returns the SVG's intrinsic size in CSS pixels (96 per inch): its width and height, else
// what its view box gives, else 300x150 as in browsers.
func Size(ctx context.Context, data []byte) (w, h float64, err error) {
	s, err := parseSVG(ctx, data)
	if err != nil {
		return 0, 0, err
	}
	return s.info.w, s.info.h, nil
}

// parseSVG sanitises and parses SVG bytes.
func parseSVG(ctx context.Context, data []byte) (*svgDrawing, error) {
	clean, info, err := svgSanitize(ctx, data)
	if err != nil {
		return nil, err
	}
	var icon *oksvg.SvgIcon
	err = convimage.GuardCodec("SVG parser", func() (err error) {
		icon, err = oksvg.ReadIconStream(bytes.NewReader(clean), oksvg.IgnoreErrorMode)
		return err
	})
	if err != nil {
		return nil, convert.Errorf(err, "input is not a valid SVG file (%v)", err)
	}
	// The paint-order marks: out of the paths, remembering how many paths precede each.
	var before []int
	paths := icon.SVGPaths[:0]
	for _, sp := range icon.SVGPaths {
		if sp.MiterLimit == svgMarkMiter && len(sp.Path) > 0 && sp.Path[0] == fixed.Int26_6(rasterx.PathMoveTo) {
			before = append(before, len(paths))
			continue
		}
		paths = append(paths, sp)
	}
	icon.SVGPaths = paths
	// A dash pattern shorter than a pixel would split a long path into millions of dashes.
	for i := range icon.SVGPaths {
		sum := 0.0
		for _, v := range icon.SVGPaths[i].Dash {
			sum += math.Abs(v)
		}
		if len(icon.SVGPaths[i].Dash) > 0 && !(sum >= 1) {
			icon.SVGPaths[i].Dash = nil
		}
	}
	text, notes, missing := svgLayoutText(clean)
	// Each segment paints after the paths before its mark; should the marks not be what was
	// written (an input forging one), all text paints last, as if after every path.
	textAt := make([]int, len(text))
	for i, seg := range text {
		textAt[i] = len(paths)
		if len(before) == info.marks && seg.mark >= 1 && seg.mark <= len(before) {
			textAt[i] = before[seg.mark-1]
		}
	}
	var quoted []string
	for _, r := range missing {
		quoted = append(quoted, fmt.Sprintf("%q (U+%04X)", r, r))
	}
	return &svgDrawing{icon: icon, info: info, text: text, textAt: textAt, textNotes: notes, missing: strings.Join(quoted, ", ")}, nil
}

// matrix maps the SVG's root coordinates onto a w x h canvas: its view box mapped into its
// intrinsic box (iw x ih) as preserveAspectRatio says, and that box scaled to the canvas as
// fit says.
func (s *svgDrawing) matrix(iw, ih, w, h float64, fit string) rasterx.Matrix2D {
	in := s.info
	// View box to intrinsic box.
	sx, sy := iw/in.vbW, ih/in.vbH
	ox, oy := 0.0, 0.0
	if !in.stretch {
		sc := min(sx, sy)
		ox, oy = (iw-in.vbW*sc)/2, (ih-in.vbH*sc)/2
		sx, sy = sc, sc
	}
	// Intrinsic box to canvas.
	cx, cy := w/iw, h/ih
	tx, ty := 0.0, 0.0
	switch fit {
	case convert.FitFill:
	case convert.FitCover:
		c := max(cx, cy)
		tx, ty = (w-iw*c)/2, (h-ih*c)/2
		cx, cy = c, c
	default:
		c := min(cx, cy)
		tx, ty = (w-iw*c)/2, (h-ih*c)/2
		cx, cy = c, c
	}
	return rasterx.Identity.Translate(tx, ty).Scale(cx, cy).Translate(ox, oy).Scale(sx, sy).Translate(-in.vbX, -in.vbY)
}

// render draws the SVG on a transparent w x h canvas: its view box mapped into its intrinsic
// box (iw x ih) as preserveAspectRatio says, and that box scaled to the canvas as fit says.
// Shapes and the text segments text says to draw (none when nil) paint in document order.
func (s *svgDrawing) render(ctx context.Context, iw, ih float64, w, h int, fit string, text func(seg int) bool) (*image.RGBA, error) {
	m := s.matrix(iw, ih, float64(w), float64(h), fit)

	img := image.NewRGBA(image.Rect(0, 0, w, h))
	scanner := rasterx.NewScannerGV(w, h, img, img.Bounds())
	dasher := rasterx.NewDasher(w, h, scanner)
	err := convimage.GuardCodec("SVG renderer", func() error {
		td := newSVGTextDrawer(w, h, scanner)
		seg := 0
		// Text segments are in document order, as their textAt.
		drawText := func(upTo int) error {
			for ; seg < len(s.text) && s.textAt[seg] <= upTo; seg++ {
				if text == nil || !text(seg) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := td.draw(s.text[seg], m); err != nil {
					return err
				}
			}
			return nil
		}
		// Every path: one path can cost tens of milliseconds (the rasterizer walks the whole
		// canvas it covers), so a check every few dozen kept a cancelled render going for seconds.
		for i := range s.icon.SVGPaths {
			if err := drawText(i); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			s.icon.SVGPaths[i].DrawTransformed(dasher, 1, m)
		}
		return drawText(math.MaxInt)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, convert.Errorf(err, "the SVG could not be drawn")
	}
	return img, nil
}

// coveredText reports, for each text segment, whether a shape painted after it may cover it
// on a w x h canvas the root coordinates are mapped onto by m: the bounding boxes, in pixels,
// of the segment's glyphs and of the later shape's fill and stroke intersect.
func (s *svgDrawing) coveredText(ctx context.Context, m rasterx.Matrix2D, w, h int) ([]bool, error) {
	covered := make([]bool, len(s.text))
	if len(s.text) == 0 {
		return covered, nil
	}
	// later[i] is the union of the boxes of paths i and after.
	later := make([]fixed.Rectangle26_6, len(s.icon.SVGPaths)+1)
	var bs svgBoundsScanner
	dasher := rasterx.NewDasher(w, h, &bs)
	err := convimage.GuardCodec("SVG renderer", func() error {
		for i := len(s.icon.SVGPaths) - 1; i >= 0; i-- {
			if err := ctx.Err(); err != nil {
				return err
			}
			bs.box = fixed.Rectangle26_6{}
			s.icon.SVGPaths[i].DrawTransformed(dasher, 1, m)
			later[i] = later[i+1].Union(bs.box)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, convert.Errorf(err, "the SVG could not be drawn")
	}
	var buf sfnt.Buffer
	for i, seg := range s.text {
		box, err := svgTextBounds(&buf, seg, m)
		if err != nil {
			return nil, err
		}
		covered[i] = !box.Intersect(later[s.textAt[i]]).Empty()
	}
	return covered, nil
}

// svgBoundsScanner is a rasterx.Scanner that draws nothing and keeps the bounding box of
// the edges it is given.
type svgBoundsScanner struct {
	box fixed.Rectangle26_6
}

func (b *svgBoundsScanner) add(p fixed.Point26_6) {
	r := fixed.Rectangle26_6{Min: p, Max: fixed.Point26_6{X: p.X + 1, Y: p.Y + 1}}
	b.box = b.box.Union(r)
}

func (b *svgBoundsScanner) Start(a fixed.Point26_6)            { b.add(a) }
func (b *svgBoundsScanner) Line(a fixed.Point26_6)             { b.add(a) }
func (b *svgBoundsScanner) Draw()                              {}
func (b *svgBoundsScanner) GetPathExtent() fixed.Rectangle26_6 { return b.box }
func (b *svgBoundsScanner) SetBounds(w, h int)                 {}
func (b *svgBoundsScanner) SetColor(color any)                 {}
func (b *svgBoundsScanner) SetWinding(useNonZeroWinding bool)  {}
func (b *svgBoundsScanner) Clear()                             {}
func (b *svgBoundsScanner) SetClip(rect image.Rectangle)       {}

// pdfFontMemory is what embedding the faces of the text (a CJK font from the font directory
// may be tens of megabytes) adds to making the PDF, as fonts.FaceMemory counts it: the faces
// pdfText embeds (pdfFaces), the Go font for those fpdf cannot, each fpdf instance of a face.
func pdfFontMemory(faces map[*fonts.Face]*svgPDFFace) int64 {
	var n int64
	for face, pf := range faces {
		n += fonts.FaceMemory(len(face.TTF()), len(pf.first))
		if len(pf.second) > 0 {
			n += fonts.FaceMemory(len(face.TTF()), len(pf.second))
		}
	}
	return n
}

// Rasterize draws the SVG data at its own size (CSS pixels, scaled by dpi/96 when the dpi
// option is set) or at the width and height asked for, and writes it to out in dst's format,
// its memory reserved from c's budget. Text it cannot draw and characters no font has are
// reported as warnings through p.
func Rasterize(ctx context.Context, c *convert.Catalog, data []byte, dst *convimage.Codec, out io.Writer, p convert.Params) error {
	lim := p.Limits.Normalized()
	s, err := parseSVG(ctx, data)
	if err != nil {
		return err
	}
	dpi := p.Options.DPI
	if dpi == 0 {
		dpi = svgDefaultDPI
	}
	iw, ih := s.info.w*float64(dpi)/svgDefaultDPI, s.info.h*float64(dpi)/svgDefaultDPI
	if iw > math.MaxInt32/2 || ih > math.MaxInt32/2 {
		return convert.Errorf(nil, "the SVG at %d dpi would be %.0fx%.0f pixels, over the %s megapixel limit", dpi, iw, ih, convimage.Megapixels(float64(lim.MaxPixels)))
	}
	bw, bh := max(1, int(math.Ceil(iw-1e-9))), max(1, int(math.Ceil(ih-1e-9)))
	opts := p.Options
	if dst.FitMaxSide && opts.Width == 0 && opts.Height == 0 && (bw > dst.MaxSide || bh > dst.MaxSide) {
		opts.Width, opts.Height, opts.Fit = dst.MaxSide, dst.MaxSide, convert.FitContain
	}
	w, h, _ := convimage.ResizeBox(bw, bh, opts)
	if err := convimage.CheckPixels(w, h, lim); err != nil {
		return err
	}
	if dst.MaxSide > 0 && (w > dst.MaxSide || h > dst.MaxSide) {
		return convert.Errorf(nil, "%s images are at most %dx%d pixels and this SVG would be %dx%d; set a width and height",
			dst.Name, dst.MaxSide, dst.MaxSide, w, h)
	}
	est := int64(float64(convimage.BaseConversionMemory+dst.FixedCost) + float64(w)*float64(h)*(4+dst.EncodeCost) + 4*float64(len(data)))
	if err := c.AcquireMemory(ctx, est, fmt.Sprintf("drawing this SVG at %dx%d as %s", w, h, dst.Name)); err != nil {
		return err
	}
	defer c.ReleaseMemory(est)
	img, err := s.render(ctx, float64(bw), float64(bh), w, h, opts.Fit, func(int) bool { return true })
	if err != nil {
		return err
	}
	warnSVGText(p, s)
	return dst.Encode(ctx, out, img, opts)
}

// WritePDF writes the SVG data to out as a PDF of one page of its own size: drawn at twice
// its resolution (or less when that would pass the pixel limit) and embedded as a lossless PNG,
// with its text as PDF text: on top, or invisible over its drawing where a later shape may
// cover it. Its memory is reserved from c's budget; warnings go through p as Rasterize's do.
func WritePDF(ctx context.Context, c *convert.Catalog, data []byte, out io.Writer, p convert.Params) error {
	lim := p.Limits.Normalized()
	s, err := parseSVG(ctx, data)
	if err != nil {
		return err
	}
	scale := float64(svgPDFScale)
	if px := s.info.w * s.info.h * scale * scale; px > float64(lim.MaxPixels) {
		scale = math.Sqrt(float64(lim.MaxPixels) / (s.info.w * s.info.h))
	}
	w, h := max(1, int(s.info.w*scale)), max(1, int(s.info.h*scale))
	if err := convimage.CheckPixels(w, h, lim); err != nil {
		return err
	}
	faces, err := s.pdfFaces()
	if err != nil {
		return err
	}
	est := int64(float64(convimage.BaseConversionMemory)+float64(w)*float64(h)*20+4*float64(len(data))) + pdfFontMemory(faces)
	if err := c.AcquireMemory(ctx, est, fmt.Sprintf("drawing this SVG at %dx%d for a PDF", w, h)); err != nil {
		return err
	}
	defer c.ReleaseMemory(est)
	// Text that a later shape may cover is drawn in the picture, in its place, and written
	// as invisible PDF text (selectable and searchable); the rest is PDF text on top.
	covered, err := s.coveredText(ctx, s.matrix(float64(w), float64(h), float64(w), float64(h), convert.FitFill), w, h)
	if err != nil {
		return err
	}
	img, err := s.render(ctx, float64(w), float64(h), w, h, convert.FitFill, func(i int) bool { return covered[i] })
	if err != nil {
		return err
	}
	drawing, err := encodePNG(img)
	if err != nil {
		return fmt.Errorf("encoding the drawing: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pw, ph := s.info.w*0.75, s.info.h*0.75
	if k := maxPageSide / max(pw, ph); k < 1 {
		pw, ph = pw*k, ph*k
	}
	f := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", Size: fpdf.SizeType{Wd: pw, Ht: ph}})
	f.SetMargins(0, 0, 0)
	f.SetAutoPageBreak(false, 0)
	f.SetCreator("convsvc", true)
	if len(s.icon.Titles) > 0 {
		f.SetTitle(fonts.SafeText(strings.TrimSpace(s.icon.Titles[0])), true)
	}
	f.AddPage()
	opts := fpdf.ImageOptions{ImageType: "PNG"}
	f.RegisterImageOptionsReader("drawing", opts, bytes.NewReader(drawing))
	f.ImageOptions("drawing", 0, 0, pw, ph, false, opts, 0, "")
	s.pdfText(f, pw, ph, covered, faces)
	warnSVGText(p, s)
	if err := f.Error(); err != nil {
		return fmt.Errorf("writing the PDF: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.Output(&convert.ContextWriter{Ctx: ctx, W: out})
}

// maxPageSide is the largest page side, in points, that PDF readers are required to handle
// (200 inches), as for convert/document's raster pages.
const maxPageSide = 14400

// encodePNG encodes img as the 8-bit PNG a PDF embeds, fast rather than small, as
// convert/document does for its raster pages.
func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: convimage.PNGBuffers}
	if err := enc.Encode(&buf, convimage.To8Bit(img)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// errTooDeep is the cause of SVGs refused for their nesting.
var errTooDeep = errors.New("nesting too deep")
