package document

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	stdhtml "html"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/bytesize"
)

// DOCX input is read from its parts directly: word/document.xml (or whichever part the package
// relationships name), styles.xml for heading and list styles, numbering.xml for bullets
// versus numbers, the document's relationships for hyperlinks and docProps/core.xml for the
// title. Paragraphs, headings, bold, italic, underline, strikethrough, superscript and
// subscript, hyperlinks, lists, tables (with merged cells) and code are kept; images, text
// boxes' frames, headers, footers, footnotes and comments are not.
//
// Code is what a code style or a monospace font marks: inline code is a run in a character
// style for code (pandoc's VerbatimChar and the token styles based on it, Word's HTML Code) or
// in a monospace font (Consolas, Courier, ...); a code block is a paragraph in a paragraph
// style for code (pandoc's SourceCode, Word's HTML Preformatted, or any style in a monospace
// font) or whose text is all in a monospace font, consecutive ones making one block.

// Bounds on DOCX parts: each is checked against its declared size before it is opened and
// counted while it is decompressed, since the declared size may lie.
const (
	docxMaxDocumentBytes = 32 << 20
	docxMaxPartBytes     = 8 << 20
	docxMaxDepth         = 256 // XML element nesting
)

// The namespaces of WordprocessingML and of markup compatibility (alternative content).
const (
	nsW  = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	nsMC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
)

// docxRun is a stretch of text in one format.
type docxRun struct {
	text                                 string
	bold, italic, underline, strike, sup bool
	sub, mono                            bool
	link                                 string
}

// docxPara is a paragraph: a heading level (0 for none), a list level (-1 for none), and
// whether it is a line (or lines) of a code block.
type docxPara struct {
	heading   int
	listLevel int
	ordered   bool
	numID     string
	runs      []docxRun
	code      bool
	// monoText and plainText: whether the paragraph has text in a monospace font given to
	// the run itself, and text in any other font; only the first makes it a code line.
	monoText, plainText bool
}

// docxCell is a table cell: its blocks, the columns it spans, and whether it continues a
// vertically merged cell above (then it is drawn empty).
type docxCell struct {
	blocks []any // *docxPara or *docxTable
	span   int
	merged bool
}

// docxTable is a table of rows; header rows are marked by the tblHeader property.
type docxTable struct {
	rows   [][]*docxCell
	header []bool
}

// docxDoc is what was read from a DOCX.
type docxDoc struct {
	title  string
	blocks []any
}

// docxStyle is what a paragraph or character style contributes.
type docxStyle struct {
	name, basedOn string
	outline       int // 0-8, or -1
	numID, ilvl   string
	mono          bool // its run properties name a monospace font
	isDefault     bool // the document's default style of its type
}

// docxCodeStyles are the names (lower case) of the styles that mark code whatever their font:
// pandoc's, Word's built-in ones and common custom ones.
var docxCodeStyles = map[string]bool{
	"source code": true, "verbatim char": true, "html preformatted": true, "html code": true,
	"html typewriter": true, "html keyboard": true, "plain text": true, "code": true,
	"code block": true, "inline code": true, "macro text": true,
}

// monoFont reports whether a font name is a monospace font.
func monoFont(name string) bool {
	f := strings.ToLower(name)
	for _, m := range []string{"courier", "consolas", "mono", "menlo", "monaco", "lucida console", "fixedsys", "typewriter", "source code", "fira code", "inconsolata"} {
		if strings.Contains(f, m) {
			return true
		}
	}
	return false
}

// runFont is the font an rFonts element names for Latin text, "" when it names only a theme.
func runFont(se xml.StartElement) string {
	if f := attrOf(se, "ascii"); f != "" {
		return f
	}
	return attrOf(se, "hAnsi")
}

// docxPackage is an open DOCX: its zip entries and parsed auxiliary parts.
type docxPackage struct {
	ctx      context.Context
	zr       *zip.Reader
	files    map[string]*zip.File
	main     string                     // the main document part
	styles   map[string]docxStyle       // paragraph styles by id
	chars    map[string]docxStyle       // character styles by id
	ordered  map[string]map[string]bool // numId -> ilvl -> numbered (not bullets)
	links    map[string]string          // relationship id -> external target
	title    string
	readSize int64
}

// openDOCX checks that in is a DOCX and reads its auxiliary parts.
func openDOCX(ctx context.Context, in *io.SectionReader) (*docxPackage, error) {
	head := make([]byte, convert.SniffLen)
	n, err := in.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, convert.Errorf(err, "could not read the input")
	}
	if n == 0 {
		return nil, convert.Errorf(nil, "input is empty")
	}
	if id, name := convert.Sniff(head[:n]); id != "zip" {
		if name == "unrecognised data" {
			return nil, convert.Errorf(nil, "input is not a valid DOCX file (unrecognised data)")
		}
		return nil, convert.Errorf(nil, "input is not a valid DOCX file (it looks like %s)", name)
	}
	zr, err := zip.NewReader(in, in.Size())
	if err != nil {
		return nil, convert.Errorf(err, "input is not a valid DOCX file (its ZIP structure is broken: %v)", err)
	}
	p := &docxPackage{ctx: ctx, zr: zr, files: map[string]*zip.File{}, styles: map[string]docxStyle{},
		chars: map[string]docxStyle{}, ordered: map[string]map[string]bool{}, links: map[string]string{}}
	for _, f := range zr.File {
		p.files[strings.TrimPrefix(f.Name, "/")] = f
	}
	p.main = "word/document.xml"
	if target, err := p.officeDocument(); err != nil {
		return nil, err
	} else if target != "" {
		p.main = target
	}
	if p.files[p.main] == nil {
		return nil, convert.Errorf(nil, "input is not a valid DOCX file (%s)", p.describeOther())
	}
	if err := p.readStyles(); err != nil {
		return nil, err
	}
	if err := p.readNumbering(); err != nil {
		return nil, err
	}
	if err := p.readLinks(); err != nil {
		return nil, err
	}
	if err := p.readTitle(); err != nil {
		return nil, err
	}
	return p, nil
}

// describeOther says what a ZIP that has no Word document is.
func (p *docxPackage) describeOther() string {
	switch {
	case p.files["xl/workbook.xml"] != nil:
		return "it looks like an Excel workbook"
	case p.files["ppt/presentation.xml"] != nil:
		return "it looks like a PowerPoint presentation"
	case p.files["content.xml"] != nil && p.files["mimetype"] != nil:
		return "it looks like an OpenDocument file; save it as .docx"
	case p.files["META-INF/container.xml"] != nil:
		return "it looks like an EPUB book"
	}
	return "it is a ZIP archive without word/document.xml"
}

// errPartTooLarge reports a part that expands beyond its bound.
var errPartTooLarge = errors.New("part too large")

// limitedPart reads a zip entry, failing once more than max bytes came out of it.
type limitedPart struct {
	r    io.Reader
	left int64
	name string
	ctx  context.Context
}

func (l *limitedPart) Read(b []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	if l.left <= 0 {
		return 0, errPartTooLarge
	}
	if int64(len(b)) > l.left {
		b = b[:l.left]
	}
	n, err := l.r.Read(b)
	l.left -= int64(n)
	if l.left <= 0 && err == nil {
		// Is there more? One byte tells.
		var one [1]byte
		if m, _ := l.r.Read(one[:]); m > 0 {
			return n, errPartTooLarge
		}
	}
	return n, err
}

// decodePart parses part name as XML with handle called on every token, failing for parts
// over max bytes or nested over docxMaxDepth. A missing part is not an error when optional.
func (p *docxPackage) decodePart(name string, max int64, optional bool, handle func(d *xml.Decoder, tok xml.Token) error) error {
	f := p.files[name]
	if f == nil {
		if optional {
			return nil
		}
		return convert.Errorf(nil, "input is not a valid DOCX file (it has no %s)", name)
	}
	tooLarge := convert.Errorf(errPartTooLarge, "the DOCX part %s expands to more than %s, over the limit", name, bytesize.Format(max))
	if f.UncompressedSize64 > uint64(max) {
		return tooLarge
	}
	rc, err := f.Open()
	if err != nil {
		return convert.Errorf(err, "input is not a valid DOCX file (%s cannot be read: %v)", name, err)
	}
	defer rc.Close()
	lr := &limitedPart{r: rc, left: max, name: name, ctx: p.ctx}
	d := xml.NewDecoder(bufio.NewReaderSize(lr, 64<<10))
	d.Strict = true
	d.CharsetReader = nil // WordprocessingML is UTF-8 or UTF-16 declared; others are refused
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			switch {
			case errors.Is(err, errPartTooLarge):
				return tooLarge
			case errors.Is(err, zip.ErrFormat) || errors.Is(err, zip.ErrChecksum):
				return convert.Errorf(err, "input is not a valid DOCX file (the part %s does not match its ZIP header: it is larger than declared or corrupt)", name)
			case p.ctx.Err() != nil:
				return p.ctx.Err()
			}
			return convert.Errorf(err, "input is not a valid DOCX file (%s is not valid XML: %v)", name, err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > docxMaxDepth {
				return convert.Errorf(errTooDeep, "the DOCX part %s nests elements more than %d deep", name, docxMaxDepth)
			}
		case xml.EndElement:
			depth--
		case xml.Directive:
			// <!DOCTYPE> and <!ENTITY> have no place in OOXML; encoding/xml would not expand
			// them anyway.
			return convert.Errorf(nil, "input is not a valid DOCX file (%s declares a DTD)", name)
		}
		if err := handle(d, tok); err != nil {
			return err
		}
	}
}

// attrOf returns the value of the attribute with the given local name (any namespace).
func attrOf(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// officeDocument returns the main part named by the package relationships, or "".
func (p *docxPackage) officeDocument() (string, error) {
	var target string
	err := p.decodePart("_rels/.rels", docxMaxPartBytes, true, func(_ *xml.Decoder, tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" &&
			strings.HasSuffix(attrOf(se, "Type"), "/officeDocument") && target == "" {
			target = strings.TrimPrefix(path.Clean("/"+attrOf(se, "Target")), "/")
		}
		return nil
	})
	return target, err
}

// partPath resolves a relationship target relative to the main part's folder.
func (p *docxPackage) partPath(name string) string {
	return path.Join(path.Dir(p.main), name)
}

func (p *docxPackage) readStyles() error {
	var cur *docxStyle
	var id, typ string
	inPPr, inRPr := false, false
	return p.decodePart(p.partPath("styles.xml"), docxMaxPartBytes, true, func(_ *xml.Decoder, tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				if typ = attrOf(t, "type"); typ == "paragraph" || typ == "character" {
					id = attrOf(t, "styleId")
					cur = &docxStyle{outline: -1, isDefault: toggleAttr(attrOf(t, "default"))}
				}
			case "rPr":
				inRPr = true
			case "rFonts":
				if cur != nil && inRPr {
					if f := runFont(t); f != "" {
						cur.mono = monoFont(f)
					}
				}
			case "name":
				if cur != nil {
					cur.name = strings.ToLower(attrOf(t, "val"))
				}
			case "basedOn":
				if cur != nil {
					cur.basedOn = attrOf(t, "val")
				}
			case "pPr":
				inPPr = true
			case "outlineLvl":
				if cur != nil && inPPr {
					if v, err := strconv.Atoi(attrOf(t, "val")); err == nil {
						cur.outline = v
					}
				}
			case "numId":
				if cur != nil && inPPr {
					cur.numID = attrOf(t, "val")
				}
			case "ilvl":
				if cur != nil && inPPr {
					cur.ilvl = attrOf(t, "val")
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "style":
				if cur != nil && typ == "character" {
					p.chars[id] = *cur
				} else if cur != nil {
					p.styles[id] = *cur
				}
				cur = nil
			case "pPr":
				inPPr = false
			case "rPr":
				inRPr = false
			}
		}
		return nil
	})
}

// styleOf resolves a paragraph style through basedOn: heading level (0 for none), list
// numbering it brings, and whether it is a style for code (by its name, or a monospace font
// set on it or on a style it is based on other than the default one).
func (p *docxPackage) styleOf(id string) (heading int, numID, ilvl string, code bool) {
	for range 16 {
		st, ok := p.styles[id]
		if !ok {
			break
		}
		code = code || docxCodeStyles[st.name] || st.mono && !st.isDefault
		if heading == 0 {
			switch {
			case st.name == "title":
				heading = 1
			case strings.HasPrefix(st.name, "heading "):
				if v, err := strconv.Atoi(strings.TrimPrefix(st.name, "heading ")); err == nil && v >= 1 {
					heading = min(v, 6)
				}
			case st.outline >= 0 && st.outline < 9:
				heading = min(st.outline+1, 6)
			}
		}
		if numID == "" {
			numID, ilvl = st.numID, st.ilvl
		}
		id = st.basedOn
	}
	return heading, numID, ilvl, code
}

// charCode reports whether a character style marks code: by its name or a monospace font,
// its own or that of a style it is based on.
func (p *docxPackage) charCode(id string) bool {
	for range 16 {
		st, ok := p.chars[id]
		if !ok {
			return false
		}
		if docxCodeStyles[st.name] || st.mono {
			return true
		}
		id = st.basedOn
	}
	return false
}

func (p *docxPackage) readNumbering() error {
	abstract := map[string]map[string]bool{} // abstractNumId -> ilvl -> ordered
	numToAbstract := map[string]string{}
	var absID, lvl, numID string
	err := p.decodePart(p.partPath("numbering.xml"), docxMaxPartBytes, true, func(_ *xml.Decoder, tok xml.Token) error {
		t, ok := tok.(xml.StartElement)
		if !ok {
			return nil
		}
		switch t.Name.Local {
		case "abstractNum":
			absID = attrOf(t, "abstractNumId")
			if abstract[absID] == nil {
				abstract[absID] = map[string]bool{}
			}
		case "lvl":
			lvl = attrOf(t, "ilvl")
		case "numFmt":
			if absID != "" && lvl != "" {
				v := attrOf(t, "val")
				abstract[absID][lvl] = v != "bullet" && v != "none" && v != ""
			}
		case "num":
			numID = attrOf(t, "numId")
			absID = ""
		case "abstractNumId":
			if numID != "" {
				numToAbstract[numID] = attrOf(t, "val")
			}
		}
		return nil
	})
	for num, abs := range numToAbstract {
		p.ordered[num] = abstract[abs]
	}
	return err
}

func (p *docxPackage) readLinks() error {
	rels := path.Join(path.Dir(p.main), "_rels", path.Base(p.main)+".rels")
	return p.decodePart(rels, docxMaxPartBytes, true, func(_ *xml.Decoder, tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" && strings.HasSuffix(attrOf(se, "Type"), "/hyperlink") {
			p.links[attrOf(se, "Id")] = attrOf(se, "Target")
		}
		return nil
	})
}

func (p *docxPackage) readTitle() error {
	inTitle := false
	return p.decodePart("docProps/core.xml", docxMaxPartBytes, true, func(_ *xml.Decoder, tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			inTitle = t.Name.Local == "title"
		case xml.EndElement:
			inTitle = false
		case xml.CharData:
			if inTitle && p.title == "" {
				p.title = strings.TrimSpace(string(t))
			}
		}
		return nil
	})
}

// docxReader holds the state of reading the main part.
type docxReader struct {
	p *docxPackage

	containers []*[]any     // where finished blocks go: the body, then open cells
	tables     []*docxTable // open tables
	paras      []*docxPara  // open paragraphs (text boxes nest them)
	pending    []any        // paragraphs from text boxes, placed after the paragraph holding them

	run       docxRun // properties of the current run
	runFont   bool    // the current run's own properties name a monospace font
	inRunPr   bool
	inText    bool
	skip      int // depth inside skipped elements (deleted text, field codes, fallbacks)
	link      string
	paraStyle struct{ numID, ilvl string }
	trHeader  bool
}

// read reads the main part into blocks.
func (p *docxPackage) read() (*docxDoc, error) {
	doc := &docxDoc{title: p.title}
	r := &docxReader{p: p}
	r.containers = []*[]any{&doc.blocks}
	err := p.decodePart(p.main, docxMaxDocumentBytes, false, r.token)
	if err != nil {
		return nil, err
	}
	return doc, nil
}

func (r *docxReader) add(b any) {
	c := r.containers[len(r.containers)-1]
	*c = append(*c, b)
}

func (r *docxReader) token(_ *xml.Decoder, tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		if r.skip > 0 {
			r.skip++
			return nil
		}
		if t.Name.Space == nsMC && t.Name.Local == "Fallback" {
			r.skip = 1
			return nil
		}
		if t.Name.Space != nsW {
			return nil
		}
		switch t.Name.Local {
		case "delText", "instrText", "del", "moveFrom", "commentReference", "footnoteReference", "endnoteReference":
			r.skip = 1
		case "p":
			r.paras = append(r.paras, &docxPara{listLevel: -1})
			r.paraStyle.numID, r.paraStyle.ilvl = "", ""
		case "pStyle":
			if p := r.para(); p != nil {
				h, num, lvl, code := r.p.styleOf(attrOf(t, "val"))
				p.heading, p.code = h, code
				if num != "" && r.paraStyle.numID == "" {
					r.paraStyle.numID, r.paraStyle.ilvl = num, lvl
				}
			}
		case "outlineLvl":
			if p := r.para(); p != nil && !r.inRunPr {
				if v, err := strconv.Atoi(attrOf(t, "val")); err == nil && v >= 0 && v < 9 {
					p.heading = min(v+1, 6)
				}
			}
		case "numId":
			r.paraStyle.numID = attrOf(t, "val")
		case "ilvl":
			r.paraStyle.ilvl = attrOf(t, "val")
		case "r":
			r.run = docxRun{link: r.link}
			r.runFont = false
		case "rStyle":
			if r.inRunPr && r.p.charCode(attrOf(t, "val")) {
				r.run.mono = true
			}
		case "rPr":
			r.inRunPr = true
		case "b":
			r.run.bold = r.inRunPr && toggle(t)
		case "i":
			r.run.italic = r.inRunPr && toggle(t)
		case "u":
			r.run.underline = r.inRunPr && attrOf(t, "val") != "none" && toggle(t)
		case "strike", "dstrike":
			r.run.strike = r.inRunPr && toggle(t)
		case "vertAlign":
			r.run.sup = attrOf(t, "val") == "superscript"
			r.run.sub = attrOf(t, "val") == "subscript"
		case "rFonts":
			if f := runFont(t); f != "" && r.inRunPr {
				r.runFont = monoFont(f)
				r.run.mono = r.runFont
			}
		case "t":
			r.inText = true
		case "tab", "ptab":
			if !r.inRunPr {
				r.text("\t")
			}
		case "br", "cr":
			if attrOf(t, "type") != "page" && attrOf(t, "type") != "column" {
				r.text("\n")
			}
		case "noBreakHyphen":
			r.text("-")
		case "softHyphen":
			r.text("\u00ad")
		case "hyperlink":
			r.link = ""
			if id := attrOf(t, "id"); id != "" {
				r.link = r.p.links[id]
			} else if a := attrOf(t, "anchor"); a != "" {
				r.link = "#" + a
			}
		case "tbl":
			r.tables = append(r.tables, &docxTable{})
		case "tr":
			if tb := r.table(); tb != nil {
				tb.rows = append(tb.rows, nil)
				tb.header = append(tb.header, false)
			}
			r.trHeader = false
		case "tblHeader":
			if tb := r.table(); tb != nil && len(tb.header) > 0 && toggle(t) {
				tb.header[len(tb.header)-1] = true
			}
		case "tc":
			if tb := r.table(); tb != nil && len(tb.rows) > 0 {
				c := &docxCell{span: 1}
				tb.rows[len(tb.rows)-1] = append(tb.rows[len(tb.rows)-1], c)
				r.containers = append(r.containers, &c.blocks)
			}
		case "gridSpan":
			if c := r.cell(); c != nil {
				if v, err := strconv.Atoi(attrOf(t, "val")); err == nil && v > 1 && v <= 64 {
					c.span = v
				}
			}
		case "vMerge":
			if c := r.cell(); c != nil && attrOf(t, "val") != "restart" {
				c.merged = true
			}
		}
	case xml.EndElement:
		if r.skip > 0 {
			r.skip--
			return nil
		}
		if t.Name.Space != nsW {
			return nil
		}
		switch t.Name.Local {
		case "p":
			r.endPara()
		case "rPr":
			r.inRunPr = false
		case "t":
			r.inText = false
		case "hyperlink":
			r.link = ""
		case "tbl":
			if n := len(r.tables); n > 0 {
				tb := r.tables[n-1]
				r.tables = r.tables[:n-1]
				r.add(tb)
			}
		case "tc":
			if len(r.containers) > 1 && len(r.tables) > 0 {
				r.containers = r.containers[:len(r.containers)-1]
			}
		}
	case xml.CharData:
		if r.inText && r.skip == 0 {
			r.text(string(t))
		}
	}
	return nil
}

// toggle reads an on/off property: <w:b/> is on, <w:b w:val="0"/> off.
func toggle(se xml.StartElement) bool {
	switch attrOf(se, "val") {
	case "0", "false", "off":
		return false
	}
	return true
}

// toggleAttr reads an on/off attribute that is off when absent, as w:default.
func toggleAttr(v string) bool {
	return v == "1" || v == "true" || v == "on"
}

func (r *docxReader) para() *docxPara {
	if n := len(r.paras); n > 0 {
		return r.paras[n-1]
	}
	return nil
}

func (r *docxReader) table() *docxTable {
	if n := len(r.tables); n > 0 {
		return r.tables[n-1]
	}
	return nil
}

// cell returns the open cell of the innermost table.
func (r *docxReader) cell() *docxCell {
	tb := r.table()
	if tb == nil || len(tb.rows) == 0 {
		return nil
	}
	row := tb.rows[len(tb.rows)-1]
	if len(row) == 0 {
		return nil
	}
	return row[len(row)-1]
}

// text appends text to the open paragraph in the current run's format.
func (r *docxReader) text(s string) {
	p := r.para()
	if p == nil {
		return
	}
	r.noteFont(p, s)
	if n := len(p.runs); n > 0 {
		last := &p.runs[n-1]
		run := r.run
		run.text = last.text
		if *last == run {
			last.text += s
			return
		}
	}
	run := r.run
	run.text = s
	p.runs = append(p.runs, run)
}

// noteFont records whether text s of the current run is in a monospace font of its own.
func (r *docxReader) noteFont(p *docxPara, s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	if r.runFont {
		p.monoText = true
	} else {
		p.plainText = true
	}
}

func (r *docxReader) endPara() {
	n := len(r.paras)
	if n == 0 {
		return
	}
	p := r.paras[n-1]
	r.paras = r.paras[:n-1]
	if r.paraStyle.numID != "" && r.paraStyle.numID != "0" && p.heading == 0 {
		lvl, _ := strconv.Atoi(r.paraStyle.ilvl)
		p.listLevel = min(max(lvl, 0), 8)
		p.numID = r.paraStyle.numID
		p.ordered = r.p.ordered[p.numID][strconv.Itoa(lvl)]
	}
	// A paragraph all in a monospace font is a line of code, as Word users write code.
	p.code = (p.code || p.monoText && !p.plainText) && p.heading == 0 && p.listLevel < 0
	if n > 1 {
		// A text box inside a paragraph: its paragraphs follow the one holding it.
		r.pending = append(r.pending, p)
		return
	}
	r.add(p)
	for _, q := range r.pending {
		r.add(q)
	}
	r.pending = r.pending[:0]
}

// docxHTML writes blocks as HTML.
type docxHTML struct {
	b     strings.Builder
	lists []docxListLevel
}

type docxListLevel struct {
	level   int
	ordered bool
}

func (h *docxHTML) closeLists(above int) {
	for len(h.lists) > 0 && h.lists[len(h.lists)-1].level > above {
		l := h.lists[len(h.lists)-1]
		h.lists = h.lists[:len(h.lists)-1]
		h.b.WriteString("</li>")
		h.b.WriteString(map[bool]string{true: "</ol>\n", false: "</ul>\n"}[l.ordered])
	}
}

func (h *docxHTML) blocks(blocks []any) {
	for i := 0; i < len(blocks); i++ {
		switch b := blocks[i].(type) {
		case *docxPara:
			if b.listLevel >= 0 {
				h.listItem(b)
				continue
			}
			h.closeLists(-1)
			if b.code {
				// Consecutive code paragraphs are one block, a line or more each.
				var lines []string
				for ; i < len(blocks); i++ {
					p, ok := blocks[i].(*docxPara)
					if !ok || !p.code {
						break
					}
					lines = append(lines, runsText(p.runs))
				}
				i--
				h.codeBlock(strings.Join(lines, "\n"))
				continue
			}
			h.para(b)
		case *docxTable:
			h.closeLists(-1)
			h.table(b)
		}
	}
	h.closeLists(-1)
}

func (h *docxHTML) listItem(p *docxPara) {
	h.closeLists(p.listLevel)
	if n := len(h.lists); n > 0 && h.lists[n-1].level == p.listLevel {
		if h.lists[n-1].ordered == p.ordered {
			h.b.WriteString("</li>\n")
		} else {
			h.closeLists(p.listLevel - 1)
		}
	}
	if n := len(h.lists); n == 0 || h.lists[n-1].level < p.listLevel {
		h.lists = append(h.lists, docxListLevel{level: p.listLevel, ordered: p.ordered})
		h.b.WriteString(map[bool]string{true: "<ol>\n", false: "<ul>\n"}[p.ordered])
	}
	h.b.WriteString("<li>")
	h.runs(p.runs)
}

func (h *docxHTML) para(p *docxPara) {
	if isBlankRuns(p.runs) {
		return
	}
	tag := "p"
	if p.heading > 0 {
		tag = "h" + strconv.Itoa(p.heading)
	}
	h.b.WriteString("<" + tag + ">")
	h.runs(p.runs)
	h.b.WriteString("</" + tag + ">\n")
}

// codeBlock writes lines of code as they are: the runs' styles (the bold and colours of
// highlighted tokens) are not part of the code.
func (h *docxHTML) codeBlock(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	h.b.WriteString("<pre><code>" + stdhtml.EscapeString(text) + "</code></pre>\n")
}

func isBlankRuns(runs []docxRun) bool {
	for _, r := range runs {
		if strings.TrimSpace(r.text) != "" {
			return false
		}
	}
	return true
}

// safeHref returns a link target fit for output: web, mail and in-document links.
func safeHref(link string) string {
	if strings.HasPrefix(link, "#") || linkable(link) {
		return link
	}
	return ""
}

func (h *docxHTML) runs(runs []docxRun) {
	for i := 0; i < len(runs); {
		// Consecutive runs with one link share the <a>.
		link := safeHref(runs[i].link)
		if link != "" {
			h.b.WriteString(`<a href="` + stdhtml.EscapeString(link) + `">`)
		}
		for ; i < len(runs) && safeHref(runs[i].link) == link; i++ {
			h.run(runs[i])
		}
		if link != "" {
			h.b.WriteString("</a>")
		}
	}
}

func (h *docxHTML) run(r docxRun) {
	var open, close []string
	wrap := func(on bool, tag string) {
		if on {
			open = append(open, "<"+tag+">")
			close = append([]string{"</" + tag + ">"}, close...)
		}
	}
	wrap(r.bold, "strong")
	wrap(r.italic, "em")
	wrap(r.underline, "u")
	wrap(r.strike, "s")
	wrap(r.sup, "sup")
	wrap(r.sub, "sub")
	wrap(r.mono, "code")
	text := stdhtml.EscapeString(strings.ReplaceAll(r.text, "\t", " "))
	text = strings.ReplaceAll(text, "\n", "<br>\n")
	if strings.TrimSpace(r.text) == "" {
		h.b.WriteString(text)
		return
	}
	h.b.WriteString(strings.Join(open, "") + text + strings.Join(close, ""))
}

func (h *docxHTML) table(t *docxTable) {
	h.b.WriteString("<table>\n")
	for i, row := range t.rows {
		cellTag := "td"
		if i == 0 || t.header[i] {
			cellTag = "th"
		}
		h.b.WriteString("<tr>")
		for _, c := range row {
			h.b.WriteString("<" + cellTag)
			if c.span > 1 {
				h.b.WriteString(` colspan="` + strconv.Itoa(c.span) + `"`)
			}
			h.b.WriteString(">")
			if !c.merged {
				h.cell(c.blocks)
			}
			h.b.WriteString("</" + cellTag + ">")
		}
		h.b.WriteString("</tr>\n")
	}
	h.b.WriteString("</table>\n")
}

// cell writes a cell's paragraphs separated by line breaks, nested tables as tables.
func (h *docxHTML) cell(blocks []any) {
	first := true
	for _, b := range blocks {
		switch b := b.(type) {
		case *docxPara:
			if isBlankRuns(b.runs) {
				continue
			}
			if !first {
				h.b.WriteString("<br>")
			}
			if b.code {
				h.b.WriteString("<code>" + strings.ReplaceAll(stdhtml.EscapeString(runsText(b.runs)), "\n", "<br>") + "</code>")
			} else {
				h.runs(b.runs)
			}
			first = false
		case *docxTable:
			h.table(b)
			first = false
		}
	}
}

// docxTitle is the document's title property, or its first heading.
func (d *docxDoc) docTitle() string {
	if d.title != "" {
		return d.title
	}
	for _, b := range d.blocks {
		if p, ok := b.(*docxPara); ok && p.heading > 0 {
			return strings.TrimSpace(runsText(p.runs))
		}
	}
	return ""
}

func runsText(runs []docxRun) string {
	var b strings.Builder
	for _, r := range runs {
		b.WriteString(r.text)
	}
	return b.String()
}

// readDOCX reads a DOCX input.
func readDOCX(ctx context.Context, in *io.SectionReader) (*docxDoc, error) {
	p, err := openDOCX(ctx, in)
	if err != nil {
		return nil, err
	}
	return p.read()
}

// docxBodyHTML renders a read document's body as an HTML fragment.
func docxBodyHTML(d *docxDoc) string {
	var h docxHTML
	h.blocks(d.blocks)
	return h.b.String()
}

func docxToHTML(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	d, err := readDOCX(ctx, in)
	if err != nil {
		return err
	}
	reportDOCXImages(in, "HTML", p)
	return writeHTMLPage(out, d.docTitle(), []byte(docxBodyHTML(d)))
}

func docxToMarkdown(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	d, err := readDOCX(ctx, in)
	if err != nil {
		return err
	}
	reportDOCXImages(in, "Markdown", p)
	doc, err := parseHTMLFragment(docxBodyHTML(d))
	if err != nil {
		return err
	}
	md, err := htmlToMarkdownBytes(ctx, doc)
	if err != nil {
		return err
	}
	md = append([]byte(strings.TrimRight(string(md), "\n")), '\n')
	_, err = out.Write(md)
	return err
}

func docxToText(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	d, err := readDOCX(ctx, in)
	if err != nil {
		return err
	}
	reportDOCXImages(in, "plain text", p)
	w := &mdTextWriter{ctx: ctx, w: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)}
	docxText(w, d.blocks, "")
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// docxText writes blocks as plain text the way Markdown is: headings underlined, list items
// with markers indented by level, tables aligned.
func docxText(w *mdTextWriter, blocks []any, prefix string) {
	counters := map[string][]int{}
	prevList := ""
	prevCode := false // the block before was a code paragraph
	for _, b := range blocks {
		if w.err = w.ctx.Err(); w.err != nil {
			return
		}
		afterCode := prevCode
		prevCode = false
		switch b := b.(type) {
		case *docxPara:
			text := strings.ReplaceAll(runsText(b.runs), "\t", " ")
			if b.listLevel >= 0 && prevList != "" && b.numID != prevList {
				w.blank = true // another list
			}
			prevList = ""
			if b.listLevel >= 0 {
				prevList = b.numID
			}
			switch {
			case b.listLevel >= 0:
				c := counters[b.numID]
				for len(c) <= b.listLevel {
					c = append(c, 0)
				}
				c = c[:b.listLevel+1]
				c[b.listLevel]++
				counters[b.numID] = c
				marker := "- "
				if b.ordered {
					marker = strconv.Itoa(c[b.listLevel]) + ". "
				}
				indent := strings.Repeat("  ", b.listLevel)
				w.lines(prefix+indent+marker, prefix+indent+strings.Repeat(" ", len(marker)), text)
			case b.code:
				// Indented as Markdown's code blocks are in text, consecutive lines together.
				w.blank = !afterCode
				w.lines(prefix+"    ", prefix+"    ", strings.TrimRight(runsText(b.runs), "\n"))
				w.blank = true
				prevCode = true
			case strings.TrimSpace(text) == "":
				continue
			default:
				w.blank = true
				w.lines(prefix, prefix, text)
				if b.heading == 1 || b.heading == 2 {
					u := map[bool]string{true: "=", false: "-"}[b.heading == 1]
					w.line(prefix, strings.Repeat(u, max(3, utf8.RuneCountInString(strings.TrimSpace(text)))))
				}
				w.blank = true
			}
		case *docxTable:
			prevList = ""
			var rows [][]string
			for _, row := range b.rows {
				var cells []string
				for _, c := range row {
					var parts []string
					if !c.merged {
						for _, cb := range c.blocks {
							if p, ok := cb.(*docxPara); ok && !isBlankRuns(p.runs) {
								parts = append(parts, strings.TrimSpace(strings.ReplaceAll(runsText(p.runs), "\n", " ")))
							}
						}
					}
					cells = append(cells, strings.Join(parts, " / "))
					for range c.span - 1 {
						cells = append(cells, "")
					}
				}
				rows = append(rows, cells)
			}
			w.blank = true
			writeTextTable(w, prefix, prefix, rows, true)
			w.blank = true
		}
	}
}
