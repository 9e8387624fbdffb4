package document

import (
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// TestDocument_Warnings: images and link targets that plain text cannot hold, DOCX images and
// the other pages of a PDF rendered as one image are reported, exactly; a page chosen with
// the page option is not. sample-image.docx is made by
// testdata/documents/make-sample-image-docx.py (Python's standard library).
func TestDocument_Warnings(t *testing.T) {
	c := testCatalog(convert.Limits{})
	w := convtest.Warning
	cases := []convtest.WarningCase{
		{Sample: "sample.md", From: "markdown", To: "txt", Want: []convert.Warning{
			w(convert.WarnImagesDropped, "the Markdown's 1 image was not written to the plain text (alt text is kept)"),
			w(convert.WarnLinksDropped, "the Markdown's 2 links were reduced to text (the URLs were not written to the plain text)")}},
		{Sample: "sample.html", From: "html", To: "txt", Want: []convert.Warning{
			w(convert.WarnImagesDropped, "the HTML's 2 images were not written to the plain text (alt text is kept)"),
			w(convert.WarnLinksDropped, "the HTML's 1 link was reduced to text (the URLs were not written to the plain text)")}},
		{Sample: "sample-image.docx", From: "docx", To: "markdown", Want: []convert.Warning{
			w(convert.WarnImagesDropped, "the DOCX's 1 embedded image was not converted to Markdown (DOCX images are not read)")}},
		{Sample: "sample.docx", From: "docx", To: "html"},
		{Sample: "sample.pdf", From: "pdf", To: "png", Want: []convert.Warning{
			w(convert.WarnPagesDropped, "the PDF has 3 pages; only page 1 was converted to PNG (choose another with the page option, or every page with pages: \"all\")")}},
		{Sample: "sample.pdf", From: "pdf", To: "png", Opts: convert.Options{Page: 2}},
		{Sample: "sample.md", From: "markdown", To: "html"},
		{Sample: "sample.html", From: "html", To: "epub", Want: []convert.Warning{
			w(convert.WarnImagesDropped, "the HTML's 1 image was not fetched, being links rather than data: URIs (the service fetches nothing); the EPUB shows their alt text")}},
	}
	convtest.CheckWarnings(t, c, filepath.Join(convtest.Testdata, "documents"), cases)
}
