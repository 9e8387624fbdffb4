package document

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestDocument_Warnings: images and link targets that plain text cannot hold, DOCX images and
// the other pages of a PDF rendered as one image are reported, exactly; a page chosen with
// the page option is not. sample-image.docx is made by
// testdata/documents/make-sample-image-docx.py (Python's standard library).
func TestDocument_Warnings(t *testing.T) {
	c := testCatalog(convert.Limits{})
	w := func(code, message string) convert.Warning { return convert.Warning{Code: code, Message: message} }
	tests := []struct {
		sample, from, to string
		opts             convert.Options
		want             []convert.Warning
	}{
		{"sample.md", "markdown", "txt", convert.Options{}, []convert.Warning{
			w(convert.WarnImagesDropped, "the Markdown's 1 image was not written to the plain text (alt text is kept)"),
			w(convert.WarnLinksDropped, "the Markdown's 2 links were reduced to text (the URLs were not written to the plain text)")}},
		{"sample.html", "html", "txt", convert.Options{}, []convert.Warning{
			w(convert.WarnImagesDropped, "the HTML's 2 images were not written to the plain text (alt text is kept)"),
			w(convert.WarnLinksDropped, "the HTML's 1 link was reduced to text (the URLs were not written to the plain text)")}},
		{"sample-image.docx", "docx", "markdown", convert.Options{}, []convert.Warning{
			w(convert.WarnImagesDropped, "the DOCX's 1 embedded image was not converted to Markdown (DOCX images are not read)")}},
		{"sample.docx", "docx", "html", convert.Options{}, nil},
		{"sample.pdf", "pdf", "png", convert.Options{}, []convert.Warning{
			w(convert.WarnPagesDropped, "the PDF has 3 pages; only page 1 was converted to PNG (choose another with the page option, or convert to zip for every page)")}},
		{"sample.pdf", "pdf", "png", convert.Options{Page: 2}, nil},
		{"sample.md", "markdown", "html", convert.Options{}, nil},
		{"sample.html", "html", "epub", convert.Options{}, []convert.Warning{
			w(convert.WarnImagesDropped, "the HTML's 1 image was not fetched, being links rather than data: URIs (the service fetches nothing); the EPUB shows their alt text")}},
	}
	for _, tt := range tests {
		f, err := os.Open(filepath.Join("..", "..", "testdata", "documents", tt.sample))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := c.Convert(context.Background(), tt.from, tt.to, tt.opts, f, io.Discard, t.TempDir())
		f.Close()
		if err != nil {
			t.Fatalf("%s -> %s: %v", tt.sample, tt.to, err)
		}
		if !reflect.DeepEqual(ws, tt.want) {
			t.Errorf("%s -> %s: warnings\n%+v\nwant\n%+v", tt.sample, tt.to, ws, tt.want)
		}
	}
}
