package document

import (
	"archive/zip"
	"fmt"
	"io"
	"strings"

	"github.com/yuin/goldmark/ast"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/convsvc/convsvc/convert"
)

// What a document conversion cannot keep is reported as a warning on the job (issue 23),
// besides the glyph and SVG text warnings of the PDF and SVG renderers:
//
//   - plain text holds neither images nor link targets: Markdown and HTML images and link
//     URLs are reported when they go to txt (images_dropped, links_dropped);
//   - DOCX images (word/media) are not read, whatever the target (images_dropped);
//   - Markdown and HTML images that are links rather than data: URIs are not fetched: PDF and
//     EPUB show their alt text (images_dropped);
//   - a PDF page to an image: one page of a longer PDF is converted unless the page option
//     chose it (pages_dropped).

// documentDrops lists the warnings a pair may report (Converter.Drops): those of losses.go,
// and those of the text renderers (PDF layout, SVG), which report characters no font draws
// (glyphs_missing) and SVG text they cannot draw (text_not_rendered).
func documentDrops(from, to string) []string {
	var d []string
	switch {
	case (from == fmtMarkdown || from == fmtHTML) && to == fmtTXT:
		d = append(d, convert.WarnImagesDropped, convert.WarnLinksDropped)
	case from == fmtDOCX:
		d = append(d, convert.WarnImagesDropped)
	case (from == fmtMarkdown || from == fmtHTML) && (to == fmtPDF || to == fmtEPUB):
		d = append(d, convert.WarnImagesDropped)
	case from == fmtPDF && to != fmtTXT:
		d = append(d, convert.WarnPagesDropped)
	}
	switch {
	case from == fmtSVG:
		d = append(d, convert.WarnTextNotRendered, convert.WarnGlyphsMissing)
	case to == fmtPDF && (from == fmtMarkdown || from == fmtHTML || from == fmtTXT):
		d = append(d, convert.WarnGlyphsMissing)
	}
	return d
}

// reportTextLosses counts the images and links of a Markdown tree going to plain text.
func reportTextLosses(doc ast.Node, from string, p convert.Params) {
	images, links := 0, 0
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Image:
			images++
		case *ast.Link, *ast.AutoLink:
			links++
		}
		return ast.WalkContinue, nil
	})
	reportTextCounts(images, links, from, p)
}

// reportHTMLTextLosses counts the images and links of an HTML document going to plain text,
// before cleanHTML drops remote images.
func reportHTMLTextLosses(doc *html.Node, p convert.Params) {
	images, links := 0, 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Img:
				images++
			case atom.A:
				for _, a := range n.Attr {
					if a.Key == "href" && a.Val != "" {
						links++
						break
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	reportTextCounts(images, links, "HTML", p)
}

func reportTextCounts(images, links int, from string, p convert.Params) {
	if images > 0 {
		p.Warn(convert.WarnImagesDropped, fmt.Sprintf("the %s's %s not written to the plain text (alt text is kept)", from, count(images, "image was", "images were")))
	}
	if links > 0 {
		p.Warn(convert.WarnLinksDropped, fmt.Sprintf("the %s's %s reduced to text (the URLs were not written to the plain text)", from, count(links, "link was", "links were")))
	}
}

// unfetchedImages counts the images of a Markdown tree or an HTML document that are links
// rather than data: URIs: the service fetches nothing, so PDF and EPUB outputs show their alt
// text instead.
func unfetchedMarkdownImages(doc ast.Node) int {
	n := 0
	ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if img, ok := node.(*ast.Image); ok && entering && !isDataURI(string(img.Destination)) {
			n++
		}
		return ast.WalkContinue, nil
	})
	return n
}

func unfetchedHTMLImages(doc *html.Node) int {
	n := 0
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.ElementNode && c.DataAtom == atom.Img && !isDataURI(attr(c, "src")) {
			n++
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(doc)
	return n
}

func isDataURI(src string) bool { return strings.HasPrefix(strings.TrimSpace(src), "data:") }

// reportUnfetched warns about images that were links, which PDF and EPUB outputs replace by
// their alt text.
func reportUnfetched(n int, from, to string, p convert.Params) {
	if n > 0 {
		p.Warn(convert.WarnImagesDropped, fmt.Sprintf("the %s's %s not fetched, being links rather than data: URIs (the service fetches nothing); the %s shows their alt text", from, count(n, "image was", "images were"), to))
	}
}

// reportDOCXImages reports the images a DOCX carries in word/media, which are not read.
func reportDOCXImages(in *io.SectionReader, to string, p convert.Params) {
	zr, err := zip.NewReader(in, in.Size())
	if err != nil {
		return
	}
	n := 0
	for _, f := range zr.File {
		if strings.HasPrefix(strings.ToLower(f.Name), "word/media/") && !strings.HasSuffix(f.Name, "/") {
			n++
		}
	}
	if n > 0 {
		p.Warn(convert.WarnImagesDropped, fmt.Sprintf("the DOCX's %s not converted to %s (DOCX images are not read)", count(n, "embedded image was", "embedded images were"), to))
	}
}

// reportPDFPages reports a PDF of several pages of which one became an image, unless the job
// chose the page.
func reportPDFPages(pages, page int, to string, p convert.Params) {
	if pages > 1 && p.Options.Page == 0 && p.Options.Pages == "" {
		p.Warn(convert.WarnPagesDropped, fmt.Sprintf("the PDF has %d pages; only page %d was converted to %s (choose another with the page option, or every page with pages: \"all\")", pages, page+1, to))
	}
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
