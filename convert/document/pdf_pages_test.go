package document

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// pagesTool returns the path of an independent tool the page tests check outputs with; it
// fails under CI=true when the tool is missing, and skips otherwise.
func pagesTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (poppler-utils, unzip, imagemagick)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// pagesWrite writes b to a file of the test's temporary directory.
func pagesWrite(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pagesRun runs a tool and returns its standard output.
func pagesRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(pagesTool(t, name), args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out)
}

// TestPDF_Pages_Zip renders pages "3,1" of the 3-page sample as a zip of PNGs, in that order,
// each page at its own size; unzip -l lists the archive.
func TestPDF_Pages_Zip(t *testing.T) {
	c := docCatalog()
	out := docMustConvert(t, c, fmtPDF, "png", docPath("sample.pdf"), convert.Options{Pages: "3,1"})
	listing := pagesRun(t, "unzip", "-l", pagesWrite(t, "pages.zip", out))
	names := regexp.MustCompile(`page-\d{4}\.png`).FindAllString(listing, -1)
	if want := []string{"page-0003.png", "page-0001.png"}; !slices.Equal(names, want) {
		t.Fatalf("unzip -l lists %v, want %v\n%s", names, want, listing)
	}
	sizes := map[string][2]int{"page-0003.png": {876, 625}, "page-0001.png": {877, 1241}}
	for name, data := range docZipEntries(t, out) {
		img, err := png.Decode(strings.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := img.Bounds().Size(), sizes[name]; got.X != want[0] || got.Y != want[1] {
			t.Errorf("%s is %v, want %dx%d", name, got, want[0], want[1])
		}
	}
}

// TestPDF_Pages_JPEGResized: every page as JPEG, each resized to the width.
func TestPDF_Pages_JPEGResized(t *testing.T) {
	out := docMustConvert(t, docCatalog(), fmtPDF, "jpeg", docPath("sample.pdf"), convert.Options{Pages: "all", Width: 200})
	listing := pagesRun(t, "unzip", "-l", pagesWrite(t, "pages.zip", out))
	names := regexp.MustCompile(`page-\d{4}\.jpg`).FindAllString(listing, -1)
	if want := []string{"page-0001.jpg", "page-0002.jpg", "page-0003.jpg"}; !slices.Equal(names, want) {
		t.Fatalf("unzip -l lists %v, want %v", names, want)
	}
}

// TestPDF_Pages_TIFF writes every page into one multi-page TIFF; ImageMagick reads its three
// pages at their sizes.
func TestPDF_Pages_TIFF(t *testing.T) {
	out := docMustConvert(t, docCatalog(), fmtPDF, "tiff", docPath("sample.pdf"), convert.Options{Pages: "2-"})
	got := strings.Fields(pagesRun(t, "identify", "-format", "%wx%h ", pagesWrite(t, "pages.tif", out)))
	if want := []string{"877x1241", "876x625"}; !slices.Equal(got, want) {
		t.Fatalf("identify: pages %v, want %v", got, want)
	}
}

// TestPDF_Pages_PDF copies pages "3,1" into a new PDF: pdfinfo counts 2 pages, the first the
// landscape one.
func TestPDF_Pages_PDF(t *testing.T) {
	out := docMustConvert(t, docCatalog(), fmtPDF, fmtPDF, docPath("sample.pdf"), convert.Options{Pages: "3,1"})
	info := pagesRun(t, "pdfinfo", "-f", "1", "-l", "2", pagesWrite(t, "pages.pdf", out))
	if !regexp.MustCompile(`(?m)^Pages:\s+2$`).MatchString(info) {
		t.Fatalf("pdfinfo:\n%s", info)
	}
	sizes := regexp.MustCompile(`(?m)^Page\s+(\d) size:\s+([\d.]+) x ([\d.]+)`).FindAllStringSubmatch(info, -1)
	if len(sizes) != 2 || !strings.HasPrefix(sizes[0][3], "300") || !strings.HasPrefix(sizes[1][3], "595") {
		t.Fatalf("page sizes %v, want page 3 (x 300) then page 1 (x 595)\n%s", sizes, info)
	}
}

// TestPDF_Pages_Single: a spec of one page writes that page as one file, not a zip.
func TestPDF_Pages_Single(t *testing.T) {
	out := docMustConvert(t, docCatalog(), fmtPDF, "png", docPath("sample.pdf"), convert.Options{Pages: "3"})
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != 876 || got.Y != 625 {
		t.Errorf("size %v, want page 3's 876x625", got)
	}
}

// TestPDF_Pages_PastLast: a page past the last fails the conversion naming the page count,
// for every kind of output.
func TestPDF_Pages_PastLast(t *testing.T) {
	c := docCatalog()
	for _, tc := range []struct{ to, pages, want string }{
		{"png", "2-9", "pages: 9 is past the last page (3)"},
		{"png", "9", "pages: 9 is past the last page (3)"},
		{"tiff", "5-", "pages: 5 is past the last page (3)"},
		{fmtPDF, "1,4", "pages: 4 is past the last page (3)"},
	} {
		_, err := docConvertFile(t, c, fmtPDF, tc.to, docPath("sample.pdf"), convert.Options{Pages: tc.pages})
		docWantError(t, err, tc.want)
	}
}

// TestDocument_Pages renders every page of a Markdown document laid out as PDF: as many PNGs
// as pdfinfo counts pages in the same document converted to PDF.
func TestDocument_Pages(t *testing.T) {
	c := docCatalog()
	pdf := docMustConvert(t, c, fmtMarkdown, fmtPDF, docPath("sample.md"), convert.Options{})
	info := pagesRun(t, "pdfinfo", pagesWrite(t, "doc.pdf", pdf))
	n := regexp.MustCompile(`(?m)^Pages:\s+(\d+)$`).FindStringSubmatch(info)
	if n == nil {
		t.Fatalf("pdfinfo:\n%s", info)
	}
	out := docMustConvert(t, c, fmtMarkdown, "png", docPath("sample.md"), convert.Options{Pages: "all"})
	listing := pagesRun(t, "unzip", "-l", pagesWrite(t, "pages.zip", out))
	if got := len(regexp.MustCompile(`page-\d{4}\.png`).FindAllString(listing, -1)); strings.TrimSpace(n[1]) != strconv.Itoa(got) {
		t.Fatalf("%d pages in the zip, pdfinfo counts %s", got, n[1])
	}
}

// TestCatalog_PagesApply: pages applies where a PDF's pages are rendered or copied, and a
// spec that may name several pages makes the output a zip unless the target holds pages.
func TestCatalog_PagesApply(t *testing.T) {
	c := docCatalog()
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{fmtPDF, "png", true}, {fmtPDF, "tiff", true}, {fmtPDF, fmtPDF, true},
		{fmtMarkdown, "png", true}, {fmtHTML, "jpeg", true}, {fmtDOCX, "webp", true},
		{fmtMarkdown, fmtPDF, false}, {fmtSVG, "png", false}, {"png", "jpeg", false}, {fmtPDF, fmtTXT, false},
	} {
		err := c.ValidatePages(tc.from, tc.to, convert.Options{Pages: "all"})
		if (err == nil) != tc.ok {
			t.Errorf("%s -> %s: %v, want ok=%v", tc.from, tc.to, err, tc.ok)
		}
	}
	for _, tc := range []struct{ to, pages, want string }{
		{"png", "all", "application/zip"}, {"jpeg", "1-2", "application/zip"}, {"png", "2", "image/png"},
		{"png", "", "image/png"}, {"tiff", "all", "image/tiff"}, {fmtPDF, "1,3", "application/pdf"},
	} {
		if got := c.OutputFormat(tc.to, convert.Options{Pages: tc.pages}).MIME; got != tc.want {
			t.Errorf("OutputFormat(%s, pages %q) is %s, want %s", tc.to, tc.pages, got, tc.want)
		}
	}
}
