package document

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/convsvc/convsvc/convert"
)

// EPUB output is written here rather than with go-epub: go-epub builds the book in a
// process-wide scratch space (os.TempDir, outside the job's scratch directory, or an in-memory
// file system that is not safe for concurrent use), fetches media from URLs and local paths,
// and logs with the standard logger. This writer streams an EPUB 3 (with an EPUB 2 NCX for
// older readers) straight to the output: one chapter per top-level h1 (or h2), a navigation
// document from the chapters' headings, images only from data: URIs, packaged in the book.

// epubXHTMLKeep are the elements kept in chapters; others are unwrapped (their content kept)
// and htmlDropped ones removed.
var epubXHTMLKeep = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Blockquote: true, atom.Pre: true, atom.Code: true, atom.Em: true, atom.Strong: true,
	atom.B: true, atom.I: true, atom.U: true, atom.S: true, atom.Del: true, atom.Ins: true,
	atom.Sub: true, atom.Sup: true, atom.A: true, atom.Br: true, atom.Hr: true, atom.Img: true,
	atom.Table: true, atom.Caption: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true,
	atom.Tr: true, atom.Th: true, atom.Td: true, atom.Div: true, atom.Span: true,
	atom.Figure: true, atom.Figcaption: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Abbr: true, atom.Cite: true,
	atom.Q: true, atom.Small: true, atom.Mark: true, atom.Kbd: true, atom.Samp: true,
	atom.Var: true, atom.Time: true,
}

// epubImageTypes are the image types EPUB readers must display, by sniffed format.
var epubImageTypes = map[string]struct{ ext, mime string }{
	"png": {"png", "image/png"}, "jpeg": {"jpg", "image/jpeg"}, "gif": {"gif", "image/gif"}, "webp": {"webp", "image/webp"},
}

const epubStyle = `body{font-family:serif;line-height:1.5}
pre{white-space:pre-wrap;font-size:.9em}
table{border-collapse:collapse}th,td{border:1px solid #999;padding:.2em .5em}
blockquote{margin-left:1em;padding-left:.8em;border-left:2px solid #999}
img{max-width:100%}`

// epubChapter is one content document.
type epubChapter struct {
	title string
	body  strings.Builder
}

// epubBook collects a book before it is written.
type epubBook struct {
	ctx      context.Context
	title    string
	lang     string
	chapters []*epubChapter
	images   []epubImage
	ids      map[string]bool
	digest   [32]byte
}

type epubImage struct {
	name, mime string
	data       []byte
}

var (
	xmlNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	langTagRE = regexp.MustCompile(`^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$`)
)

func markdownToEPUB(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, src, err := readMarkdown(ctx, in)
	if err != nil {
		return err
	}
	reportUnfetched(unfetchedMarkdownImages(doc), "Markdown", "EPUB", p)
	body, err := renderMarkdownHTML(doc, src)
	if err != nil {
		return err
	}
	root, err := parseHTMLFragment(string(body))
	if err != nil {
		return err
	}
	return writeEPUB(ctx, out, markdownTitle(doc, src), root, src)
}

func htmlToEPUB(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, src, err := readHTML(ctx, in)
	if err != nil {
		return err
	}
	reportUnfetched(unfetchedHTMLImages(doc), "HTML", "EPUB", p)
	cleanHTML(doc, false)
	return writeEPUB(ctx, out, htmlTitle(doc), doc, src)
}

// findElement returns the first element a in the tree, or nil.
func findElement(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findElement(c, a); f != nil {
			return f
		}
	}
	return nil
}

// writeEPUB writes the body of doc as an EPUB book; src only seeds its identifier.
func writeEPUB(ctx context.Context, out io.Writer, title string, doc *html.Node, src []byte) error {
	b := &epubBook{ctx: ctx, title: title, lang: "en", ids: map[string]bool{}, digest: sha256.Sum256(src)}
	if h := findElement(doc, atom.Html); h != nil {
		if l := attr(h, "lang"); langTagRE.MatchString(l) && len(l) <= 35 {
			b.lang = l
		}
	}
	body := findElement(doc, atom.Body)
	if body == nil {
		body = doc
	}
	// Chapters start at each top-level heading of the highest level present.
	split := atom.Atom(0)
	for _, a := range []atom.Atom{atom.H1, atom.H2} {
		for c := body.FirstChild; c != nil && split == 0; c = c.NextSibling {
			if c.Type == html.ElementNode && c.DataAtom == a {
				split = a
			}
		}
	}
	var ch *epubChapter
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ch == nil || split != 0 && c.Type == html.ElementNode && c.DataAtom == split && ch.body.Len() > 0 {
			ch = &epubChapter{}
			b.chapters = append(b.chapters, ch)
		}
		if ch.title == "" && c.Type == html.ElementNode && (c.DataAtom == atom.H1 || c.DataAtom == atom.H2 || c.DataAtom == atom.H3) {
			ch.title = strings.Join(strings.Fields(nodeText(c)), " ")
		}
		b.xhtml(&ch.body, c)
	}
	if len(b.chapters) == 0 {
		b.chapters = append(b.chapters, &epubChapter{})
	}
	if b.title == "" {
		b.title = b.chapters[0].title
	}
	if b.title == "" {
		b.title = "Document"
	}
	for i, ch := range b.chapters {
		if ch.title == "" {
			ch.title = b.title
			if len(b.chapters) > 1 {
				ch.title = fmt.Sprintf("%s (%d)", b.title, i+1)
			}
		}
	}
	return b.write(out)
}

// xmlText escapes text for XML, dropping characters XML cannot hold.
func xmlText(s string) string {
	var sb strings.Builder
	xml.EscapeText(&sb, []byte(strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xfffe || r == 0xffff || r >= 0xd800 && r < 0xe000 {
			return -1
		}
		return r
	}, s)))
	return sb.String()
}

// xhtml writes n as XHTML, keeping the elements and attributes that carry content.
func (b *epubBook) xhtml(w *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.WriteString(xmlText(n.Data))
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.xhtml(w, c)
		}
		return
	}
	if htmlDropped[n.DataAtom] {
		return
	}
	if !epubXHTMLKeep[n.DataAtom] {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.xhtml(w, c)
		}
		return
	}
	name := n.DataAtom.String()
	var attrs []string
	add := func(k, v string) { attrs = append(attrs, k+`="`+xmlText(v)+`"`) }
	switch n.DataAtom {
	case atom.Img:
		src := b.image(attr(n, "src"))
		if src == "" {
			if alt := attr(n, "alt"); alt != "" {
				w.WriteString(xmlText(alt))
			}
			return
		}
		add("src", src)
		add("alt", attr(n, "alt"))
	case atom.A:
		if h := safeHref(strings.TrimSpace(attr(n, "href"))); h != "" {
			if strings.HasPrefix(h, "#") {
				// Fragments may point into another chapter: resolved by the reader's search, not here.
				h = ""
			}
			if h != "" {
				add("href", h)
			}
		}
	case atom.Td, atom.Th:
		for _, k := range []string{"colspan", "rowspan"} {
			if v := attr(n, k); v != "" {
				if i, err := strconv.Atoi(v); err == nil && i > 0 && i < 1000 {
					add(k, strconv.Itoa(i))
				}
			}
		}
	case atom.Ol:
		if v, err := strconv.Atoi(attr(n, "start")); err == nil {
			add("start", strconv.Itoa(v))
		}
	}
	if id := attr(n, "id"); id != "" && xmlNameRE.MatchString(id) && !b.ids[id] {
		b.ids[id] = true
		add("id", id)
	}
	w.WriteString("<" + name)
	for _, a := range attrs {
		w.WriteString(" " + a)
	}
	switch n.DataAtom {
	case atom.Br, atom.Hr, atom.Img:
		w.WriteString("/>")
		return
	}
	w.WriteString(">")
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.xhtml(w, c)
	}
	w.WriteString("</" + name + ">")
}

// image packages a data: URI image and returns its path in the book, or "".
func (b *epubBook) image(src string) string {
	data, ok := decodeDataURI(strings.TrimSpace(src))
	if !ok {
		return ""
	}
	id, _ := convert.Sniff(data[:min(len(data), convert.SniffLen)])
	t, ok := epubImageTypes[id]
	if !ok {
		return ""
	}
	name := fmt.Sprintf("images/img-%03d.%s", len(b.images)+1, t.ext)
	b.images = append(b.images, epubImage{name: name, mime: t.mime, data: data})
	return name
}

// write writes the book's files; mimetype comes first and uncompressed, as EPUB requires.
func (b *epubBook) write(out io.Writer) error {
	now := time.Now().UTC().Truncate(time.Second)
	zw := zip.NewWriter(&convert.ContextWriter{Ctx: b.ctx, W: out})
	file := func(name string, store bool, content string) error {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now}
		if store {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, content)
		return err
	}
	d := b.digest
	uid := fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", d[0:4], d[4:6], append([]byte{0x50 | d[6]&0x0f}, d[7]), append([]byte{0x80 | d[8]&0x3f}, d[9]), d[10:16])
	title := xmlText(b.title)

	if err := file("mimetype", true, "application/epub+zip"); err != nil {
		return err
	}
	if err := file("META-INF/container.xml", false, `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
`); err != nil {
		return err
	}

	var manifest, spine, nav, ncx strings.Builder
	for i, ch := range b.chapters {
		name := fmt.Sprintf("chapter-%03d.xhtml", i+1)
		fmt.Fprintf(&manifest, "    <item id=\"c%03d\" href=\"%s\" media-type=\"application/xhtml+xml\"/>\n", i+1, name)
		fmt.Fprintf(&spine, "    <itemref idref=\"c%03d\"/>\n", i+1)
		fmt.Fprintf(&nav, "      <li><a href=\"%s\">%s</a></li>\n", name, xmlText(ch.title))
		fmt.Fprintf(&ncx, "    <navPoint id=\"n%03d\" playOrder=\"%d\"><navLabel><text>%s</text></navLabel><content src=\"%s\"/></navPoint>\n",
			i+1, i+1, xmlText(ch.title), name)
		doc := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="%[1]s" xml:lang="%[1]s">
<head>
<meta charset="utf-8"/>
<title>%[2]s</title>
<link rel="stylesheet" type="text/css" href="style.css"/>
</head>
<body>
%[3]s
</body>
</html>
`, xmlText(b.lang), xmlText(ch.title), ch.body.String())
		if err := file("OEBPS/"+name, false, doc); err != nil {
			return err
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
	}
	for i, img := range b.images {
		fmt.Fprintf(&manifest, "    <item id=\"img%03d\" href=\"%s\" media-type=\"%s\"/>\n", i+1, img.name, img.mime)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "OEBPS/" + img.name, Method: zip.Store, Modified: now})
		if err != nil {
			return err
		}
		if _, err := w.Write(img.data); err != nil {
			return err
		}
	}
	if err := file("OEBPS/style.css", false, epubStyle); err != nil {
		return err
	}
	if err := file("OEBPS/nav.xhtml", false, fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="%[1]s" xml:lang="%[1]s">
<head>
<meta charset="utf-8"/>
<title>%[2]s</title>
</head>
<body>
  <nav epub:type="toc" id="toc">
    <h1>%[2]s</h1>
    <ol>
%[3]s    </ol>
  </nav>
</body>
</html>
`, xmlText(b.lang), title, nav.String())); err != nil {
		return err
	}
	if err := file("OEBPS/toc.ncx", false, fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <head><meta name="dtb:uid" content="%s"/></head>
  <docTitle><text>%s</text></docTitle>
  <navMap>
%s  </navMap>
</ncx>
`, uid, title, ncx.String())); err != nil {
		return err
	}
	if err := file("OEBPS/content.opf", false, fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid" xml:lang="%s">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">%s</dc:identifier>
    <dc:title>%s</dc:title>
    <dc:language>%s</dc:language>
    <meta property="dcterms:modified">%s</meta>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
%s  </manifest>
  <spine toc="ncx">
%s  </spine>
</package>
`, xmlText(b.lang), uid, title, xmlText(b.lang), now.Format(time.RFC3339), manifest.String(), spine.String())); err != nil {
		return err
	}
	return zw.Close()
}
