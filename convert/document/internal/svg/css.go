package svg

import (
	"encoding/xml"
	"slices"
	"strconv"
	"strings"

	"github.com/srwiley/oksvg"

	"github.com/convsvc/convsvc/convert"
)

// SVG style sheets: the rules of <style> elements (type text/css or none) with simple
// selectors (a type or *, .classes, an #id, and comma lists of those) are applied by the
// sanitiser, which writes what they set into each element's style="" before the element's own
// declarations, so that presentation attributes < style sheet < style attribute, and
// !important declarations last. Among rules, the more specific wins, then the later.
// Selectors with combinators, attribute selectors, pseudo-classes and at-rules (@media...) are
// ignored. The <style> elements themselves are then dropped, so oksvg's own class handling
// (class selectors in <defs> only, over the style attribute) never applies.

// Bounds on style sheets: a hostile sheet must not cost more than the file it came in.
const (
	svgCSSMaxBytes     = 1 << 20    // all <style> text of one SVG
	svgCSSMaxSelectors = 10_000     // selectors, counting each of a comma list
	svgCSSMaxWork      = 20_000_000 // selector tests over the whole file
	svgCSSMaxClasses   = 64         // classes of one element looked up
	svgCSSMaxInlined   = 1 << 20    // bytes written into style="" beyond the input's size
)

// svgDecl is one CSS declaration.
type svgDecl struct {
	prop, value string
	important   bool
}

// svgRule is one simple selector and the declarations of its rule.
type svgRule struct {
	typ, id string // "" when none
	classes []string
	spec    int // specificity: ids, classes, types in bytes
	order   int
	decls   []svgDecl
}

// svgSheet is the style sheets of one SVG, indexed by the most specific part of each selector.
type svgSheet struct {
	rules                  []svgRule
	byID, byClass, byType  map[string][]int
	universal              []int
	work, inlined, maxInls int
}

// parseSVGCSS parses style sheet text (url() and @import already neutralised).
func parseSVGCSS(src string) (*svgSheet, error) {
	if len(src) > svgCSSMaxBytes {
		return nil, convert.Errorf(nil, "the SVG's style sheets are larger than %d KiB", svgCSSMaxBytes>>10)
	}
	sh := &svgSheet{byID: map[string][]int{}, byClass: map[string][]int{}, byType: map[string][]int{}}
	src = svgCSSStripComments(src)
	for i := 0; i < len(src); {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ';' || c == '}' {
			i++
			continue
		}
		if c == '@' {
			// An at-rule: to its semicolon, or its whole block.
			semi, open := strings.IndexByte(src[i:], ';'), strings.IndexByte(src[i:], '{')
			if open < 0 || semi >= 0 && semi < open {
				if semi < 0 {
					break
				}
				i += semi + 1
				continue
			}
			i = svgCSSBlockEnd(src, i+open)
			continue
		}
		open := strings.IndexByte(src[i:], '{')
		if open < 0 {
			break
		}
		selectors := src[i : i+open]
		end := svgCSSBlockEnd(src, i+open)
		body := src[i+open+1 : max(i+open+1, end-1)]
		i = end
		if strings.ContainsRune(body, '{') {
			continue // a nested block: not a style rule this reads
		}
		decls := svgParseDecls(body, true)
		if len(decls) == 0 {
			continue
		}
		for _, s := range strings.Split(selectors, ",") {
			r, ok := svgParseSelector(s)
			if !ok {
				continue
			}
			if len(sh.rules) >= svgCSSMaxSelectors {
				return nil, convert.Errorf(nil, "the SVG's style sheets have more than %d selectors", svgCSSMaxSelectors)
			}
			r.order, r.decls = len(sh.rules), decls
			n := len(sh.rules)
			sh.rules = append(sh.rules, r)
			switch {
			case r.id != "":
				sh.byID[r.id] = append(sh.byID[r.id], n)
			case len(r.classes) > 0:
				sh.byClass[r.classes[0]] = append(sh.byClass[r.classes[0]], n)
			case r.typ != "":
				sh.byType[r.typ] = append(sh.byType[r.typ], n)
			default:
				sh.universal = append(sh.universal, n)
			}
		}
	}
	return sh, nil
}

// svgCSSStripComments removes /* comments */ and the <!-- --> markers.
func svgCSSStripComments(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "/*")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		j := strings.Index(s[i+2:], "*/")
		if j < 0 {
			break
		}
		s = s[i+2+j+2:]
	}
	return strings.NewReplacer("<!--", " ", "-->", " ").Replace(b.String())
}

// svgCSSBlockEnd returns the index just past the '}' that closes the block opened at open.
func svgCSSBlockEnd(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// svgCSSIdent reports whether c may be in a CSS identifier (escapes are not read).
func svgCSSIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80
}

// svgParseSelector parses one compound selector: a type or *, then .classes and an #id.
func svgParseSelector(s string) (svgRule, bool) {
	s = strings.TrimSpace(s)
	var r svgRule
	ident := func(i int) (string, int) {
		j := i
		for j < len(s) && svgCSSIdent(s[j]) {
			j++
		}
		return s[i:j], j
	}
	i := 0
	switch {
	case s == "":
		return r, false
	case s[0] == '*':
		i = 1
	case svgCSSIdent(s[0]):
		r.typ, i = ident(0)
	}
	for i < len(s) {
		var name string
		switch s[i] {
		case '.':
			name, i = ident(i + 1)
			if name == "" {
				return r, false
			}
			r.classes = append(r.classes, name)
		case '#':
			name, i = ident(i + 1)
			if name == "" || r.id != "" && r.id != name {
				return r, false
			}
			r.id = name
		default:
			return r, false // a combinator, attribute selector or pseudo-class
		}
	}
	ids, types := 0, 0
	if r.id != "" {
		ids = 1
	}
	if r.typ != "" {
		types = 1
	}
	r.spec = ids<<16 | min(len(r.classes), 255)<<8 | types
	return r, true
}

// svgParseDecls parses "prop: value; ..." declarations. From a style sheet (sheet), only
// values oksvg reads without failing the whole file are kept, and no transform.
func svgParseDecls(s string, sheet bool) []svgDecl {
	var out []svgDecl
	for _, d := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(d, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		imp := false
		if i := strings.LastIndexByte(v, '!'); i >= 0 && strings.EqualFold(strings.TrimSpace(v[i+1:]), "important") {
			v, imp = strings.TrimSpace(v[:i]), true
		}
		if k == "" || v == "" || strings.ContainsAny(k, " \t\r\n\f{}") {
			continue
		}
		if sheet && !svgDeclOK(k, v) {
			continue
		}
		out = append(out, svgDecl{prop: k, value: v, important: imp})
	}
	return out
}

// svgDeclOK reports whether oksvg reads a style sheet's value without an error (which would
// fail the whole file): colours for fill and stroke, numbers for the numeric properties.
func svgDeclOK(k, v string) bool {
	num := func(s string) bool {
		for _, u := range []string{"cm", "mm", "px", "pt"} {
			if before, ok := strings.CutSuffix(s, u); ok {
				s = before
				break
			}
		}
		_, err := strconv.ParseFloat(s, 64)
		return err == nil
	}
	switch k {
	case "transform":
		return false
	case "fill", "stroke":
		_, err := oksvg.ParseSVGColor(v)
		return err == nil
	case "opacity", "fill-opacity", "stroke-opacity", "stroke-miterlimit", "stroke-width", "stroke-dashoffset":
		return num(v)
	case "stroke-dasharray":
		if v == "none" {
			return true
		}
		for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			if !num(strings.TrimSpace(f)) {
				return false
			}
		}
		return true
	}
	return true
}

// style returns the element's style="" with the sheet's matching declarations applied, and
// whether it differs from the attribute (absent: "").
func (sh *svgSheet) style(se xml.StartElement) (string, bool, error) {
	own := svgAttr(se, "style")
	if sh == nil || len(sh.rules) == 0 {
		return own, false, nil
	}
	name, id := se.Name.Local, strings.TrimSpace(svgAttr(se, "id"))
	classes := strings.Fields(svgAttr(se, "class"))
	if len(classes) > svgCSSMaxClasses {
		classes = classes[:svgCSSMaxClasses]
	}
	var matched []int
	try := func(cands []int) error {
		for _, n := range cands {
			r := &sh.rules[n]
			if sh.work += 1 + len(r.classes); sh.work > svgCSSMaxWork {
				return convert.Errorf(nil, "the SVG's style sheets are too complex to apply (over %d selector tests)", svgCSSMaxWork)
			}
			if r.typ != "" && r.typ != name || r.id != "" && r.id != id {
				continue
			}
			all := true
			for _, c := range r.classes {
				if !slices.Contains(classes, c) {
					all = false
					break
				}
			}
			if all {
				matched = append(matched, n)
			}
		}
		return nil
	}
	if err := try(sh.universal); err != nil {
		return "", false, err
	}
	if err := try(sh.byType[name]); err != nil {
		return "", false, err
	}
	if id != "" {
		if err := try(sh.byID[id]); err != nil {
			return "", false, err
		}
	}
	for i, c := range classes {
		if !slices.Contains(classes[:i], c) {
			if err := try(sh.byClass[c]); err != nil {
				return "", false, err
			}
		}
	}
	if len(matched) == 0 {
		return own, false, nil
	}
	slices.SortFunc(matched, func(a, b int) int {
		if d := sh.rules[a].spec - sh.rules[b].spec; d != 0 {
			return d
		}
		return sh.rules[a].order - sh.rules[b].order
	})
	inline := svgParseDecls(own, false)
	var b strings.Builder
	write := func(d svgDecl) {
		b.WriteString(d.prop)
		b.WriteByte(':')
		b.WriteString(d.value)
		b.WriteByte(';')
	}
	for _, important := range []bool{false, true} {
		for _, n := range matched {
			for _, d := range sh.rules[n].decls {
				if d.important == important {
					write(d)
				}
			}
		}
		for _, d := range inline {
			if d.important == important {
				write(d)
			}
		}
	}
	if sh.inlined += b.Len(); sh.inlined > sh.maxInls {
		return "", false, convert.Errorf(nil, "the SVG's style sheets would add more than %d KiB to it", sh.maxInls>>10)
	}
	return b.String(), true, nil
}
