package document

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/convsvc/convsvc/convert"
)

// htmlMarkdown converts HTML to CommonMark with GitHub tables and strikethrough, which the
// library's default drops. It is safe for concurrent use, and made at first use rather than
// at package initialisation, so a process that converts no HTML pays nothing for it.
var htmlMarkdown = sync.OnceValue(func() *converter.Converter {
	c := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
		strikethrough.NewStrikethroughPlugin(),
	))
	// The library never looks at the context it is given: a renderer that runs first for every
	// node (and a check between the pre-render pass and rendering) stops an abandoned
	// conversion, unwinding with errHTMLStopped, which htmlToMarkdownBytes recovers.
	c.Register.Renderer(func(ctx converter.Context, _ converter.Writer, _ *html.Node) converter.RenderStatus {
		if ctx.Err() != nil {
			panic(errHTMLStopped)
		}
		return converter.RenderTryNext
	}, 0)
	c.Register.PreRenderer(func(ctx converter.Context, _ *html.Node) {
		if ctx.Err() != nil {
			panic(errHTMLStopped)
		}
	}, converter.PriorityLate+100)
	return c
})

// errHTMLStopped unwinds an HTML-to-Markdown conversion whose context ended.
var errHTMLStopped = errors.New("html to markdown: context ended")

// htmlDropped are elements removed with everything inside before an HTML input is converted:
// active content, embedded documents and references to other resources. Nothing they point
// to is ever fetched; removing them keeps their text and URLs out of the output too.
var htmlDropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Iframe: true, atom.Frame: true, atom.Frameset: true, atom.Object: true, atom.Embed: true,
	atom.Applet: true, atom.Link: true, atom.Base: true, atom.Meta: true, atom.Audio: true,
	atom.Video: true, atom.Source: true, atom.Track: true, atom.Canvas: true, atom.Svg: true,
	atom.Math: true, atom.Select: true, atom.Button: true, atom.Input: true, atom.Textarea: true,
	atom.Dialog: true, atom.Picture: true,
}

// readHTML reads an HTML input and parses it as a browser would; x/net/html refuses documents
// nesting elements more than 512 deep, which keeps every later recursive walk shallow.
func readHTML(ctx context.Context, in *io.SectionReader) (*html.Node, []byte, error) {
	src, err := readTextInput(ctx, in, fmtHTML, MaxMarkupBytes)
	if err != nil {
		return nil, nil, err
	}
	// The parser reads in small pieces, so a reader that fails once ctx is done stops a long parse.
	doc, err := html.Parse(&convert.ContextReader{Ctx: ctx, R: bytes.NewReader(src)})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, convert.Errorf(err, "input is not a valid HTML file (%v)", err)
	}
	return doc, src, nil
}

// parseHTMLFragment parses HTML this package wrote into a document.
func parseHTMLFragment(s string) (*html.Node, error) {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return nil, convert.Errorf(err, "the document could not be converted")
	}
	return doc, nil
}

// cleanHTML removes htmlDropped elements and, unless keepWebImages is set, images whose
// source is not a data: URI, so that no converter ever sees a reference it could be tempted
// to load. With keepWebImages (HTML to Markdown, where an image reference is content for the
// reader) images on the web or at relative paths stay as references; file: and other schemes
// go. Links to scripts and documents (scriptLink) lose their target and keep their text.
func cleanHTML(n *html.Node, keepWebImages bool) {
	var next *html.Node
	for c := n.FirstChild; c != nil; c = next {
		next = c.NextSibling
		if c.Type == html.ElementNode {
			if htmlDropped[c.DataAtom] || c.DataAtom == atom.Img && !keepImage(attr(c, "src"), keepWebImages) {
				if c.DataAtom == atom.Img && attr(c, "alt") != "" {
					n.InsertBefore(&html.Node{Type: html.TextNode, Data: attr(c, "alt")}, c)
				}
				n.RemoveChild(c)
				continue
			}
			if c.DataAtom == atom.Img {
				// Keep only what the image is: its source and description.
				var keep []html.Attribute
				for _, a := range c.Attr {
					if a.Key == "src" || a.Key == "alt" || a.Key == "title" {
						keep = append(keep, a)
					}
				}
				c.Attr = keep
			}
		}
		cleanHTML(c, keepWebImages)
	}
	if n.Parent == nil {
		dropScriptLinks(n)
	}
}

// keepImage reports whether an image source stays: data: URIs always, web and relative
// references when web is set.
func keepImage(src string, web bool) bool {
	src = strings.TrimSpace(src)
	if strings.HasPrefix(src, "data:") {
		return true
	}
	if !web || src == "" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "":
		return true
	}
	return false
}

// attr returns the value of n's attribute key, or "".
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

// htmlTitle returns the document's <title>, or the text of its first heading.
func htmlTitle(doc *html.Node) string {
	var title, heading string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if title != "" {
			return
		}
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Title:
				title = strings.Join(strings.Fields(nodeText(n)), " ")
				return
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				if heading == "" {
					heading = strings.Join(strings.Fields(nodeText(n)), " ")
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if title == "" {
		title = heading
	}
	return title
}

// nodeText returns the text inside n.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// htmlToMarkdownBytes converts a parsed and cleaned document to Markdown.
func htmlToMarkdownBytes(ctx context.Context, doc *html.Node) ([]byte, error) {
	md, err := convertHTMLNode(ctx, doc)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, convert.Errorf(err, "the HTML could not be converted to Markdown")
	}
	return md, nil
}

// convertHTMLNode runs htmlMarkdown on doc, returning ctx's error when the context ended
// during the conversion.
func convertHTMLNode(ctx context.Context, doc *html.Node) (md []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != errHTMLStopped { //nolint:errorlint // the sentinel itself is what was panicked
				panic(r)
			}
			md, err = nil, ctx.Err()
		}
	}()
	return htmlMarkdown().ConvertNode(doc, converter.WithContext(ctx))
}

func htmlToMarkdown(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
	doc, _, err := readHTML(ctx, in)
	if err != nil {
		return err
	}
	cleanHTML(doc, true)
	md, err := htmlToMarkdownBytes(ctx, doc)
	if err != nil {
		return err
	}
	md = append(bytes.TrimRight(md, "\n"), '\n')
	_, err = out.Write(md)
	return err
}

// htmlToText writes HTML as plain text through Markdown, so that lists keep their markers
// and tables their columns.
func htmlToText(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, _, err := readHTML(ctx, in)
	if err != nil {
		return err
	}
	reportHTMLTextLosses(doc, p)
	cleanHTML(doc, false)
	md, err := htmlToMarkdownBytes(ctx, doc)
	if err != nil {
		return err
	}
	tree, err := parseMarkdown(ctx, md)
	if err != nil {
		return err
	}
	return writeMarkdownText(ctx, out, tree, md)
}

// htmlToPDF lays out HTML through Markdown: the same layout as Markdown documents, with
// headings, lists, code, tables and data: URI images.
func htmlToPDF(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, _, err := readHTML(ctx, in)
	if err != nil {
		return err
	}
	reportUnfetched(unfetchedHTMLImages(doc), "HTML", "PDF", p)
	cleanHTML(doc, false)
	title := htmlTitle(doc)
	md, err := htmlToMarkdownBytes(ctx, doc)
	if err != nil {
		return err
	}
	tree, err := parseMarkdown(ctx, md)
	if err != nil {
		return err
	}
	d, err := newPDFDoc(ctx, p, title)
	if err != nil {
		return err
	}
	defer d.release()
	m := &mdPDF{pdfDoc: d, src: md}
	m.countSource() // the Markdown made of the HTML, in the HTML's order
	m.blocks(tree)
	return d.finish(out)
}

func markdownToPDF(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, src, err := readMarkdown(ctx, in)
	if err != nil {
		return err
	}
	reportUnfetched(unfetchedMarkdownImages(doc), "Markdown", "PDF", p)
	return markdownPDF(ctx, out, doc, src, p)
}
