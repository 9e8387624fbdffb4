package document

import (
	"bytes"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/gen2brain/avif"
	gwebp "github.com/gen2brain/webp"
	ico "github.com/sergeymakinen/go-ico"
	"github.com/spakin/netpbm"
	"github.com/xfmoulet/qoi"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/archive"
	"github.com/convsvc/convsvc/convert/audio"
	"github.com/convsvc/convsvc/convert/data"
	convimage "github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// testCatalog returns every family, registered as standard.Register does (standard cannot be
// imported here: it imports this package). The other families import no document code, so
// the document tests may use them.
func testCatalog(lim convert.Limits) *convert.Catalog {
	c := convert.NewEmptyCatalog(lim)
	convimage.Register(c)
	Register(c)
	data.Register(c)
	audio.Register(c)
	archive.Register(c)
	RegisterPDFPageArchive(c)
	return c
}

// docImageFormatOf is the image format of a sample the image family reads, else "".
func docImageFormatOf(source string) string {
	if id := docSourceFormat(source); convimage.CodecByID(id) != nil {
		return id
	}
	return ""
}

// docIsDataSample reports a source of the data family, whose tests check its tables.
func docIsDataSample(source string) bool {
	f, _ := docCatalog().Format(docSourceFormat(source))
	return f.Category == convert.CategoryData
}

// docSampleSize is the size of an image sample as the converters decode it (oriented).
func docSampleSize(t *testing.T, source string) image.Point {
	t.Helper()
	from := docSourceFormat(source)
	var out []byte
	if from == "png" {
		out = docReadOutput(t, source)
	} else {
		out = docMustConvert(t, docCatalog(), from, "png", source, convert.Options{})
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return image.Pt(cfg.Width, cfg.Height)
}

// docDecodeRaster decodes a raster output with a decoder independent of the image family.
func docDecodeRaster(t testing.TB, format string, data []byte) image.Image {
	t.Helper()
	r := bytes.NewReader(data)
	var img image.Image
	var err error
	switch format {
	case "png":
		img, err = png.Decode(r)
	case "jpeg":
		img, err = jpeg.Decode(r)
	case "gif":
		var g *gif.GIF
		if g, err = gif.DecodeAll(r); err == nil {
			img = g.Image[0]
		}
	case "bmp":
		img, err = bmp.Decode(r)
	case "tiff":
		img, err = tiff.Decode(r)
	case "webp":
		img, err = gwebp.Decode(r)
	case "avif":
		img, err = avif.Decode(r)
	case "qoi":
		img, err = qoi.Decode(r)
	case "ppm":
		img, err = netpbm.Decode(r, &netpbm.DecodeOptions{Target: netpbm.PAM})
	case "ico":
		img, err = ico.Decode(r)
	default:
		t.Fatalf("no decoder for %s outputs", format)
	}
	if err != nil {
		t.Fatalf("%s output does not decode: %v", format, err)
	}
	return img
}

// TestDocument_Matrix converts every sample to every document format it reaches, and every
// document to every raster format, and reads each output back (the document part of the
// standard catalog's conversion matrix). Data to Markdown and HTML is the data family's: its
// tests check the tables.
func TestDocument_Matrix(t *testing.T) {
	c := docCatalog()
	checkers := map[string]convtest.Checker{
		fmtPDF:      docCheckPDF,
		fmtTXT:      docCheckText,
		fmtEPUB:     docCheckEPUB,
		fmtMarkdown: docCheckMarkdown,
		fmtHTML:     docCheckHTML,
	}
	category := func(id string) string { f, _ := c.Format(id); return f.Category }
	for i := range convimage.Codecs {
		if codec := &convimage.Codecs[i]; codec.Encode != nil {
			checkers[codec.ID] = docCheckRaster(codec)
		}
	}
	owns := func(from, to string) bool {
		if raceShort() && (to == "avif" || to == "webp") {
			// A rendered page through the WebP or AVIF encoder takes 10-80 s under -race, and
			// -short's three targets per sample were mostly these two: the race step picks
			// them from the other targets; convert/image races both encoders.
			return false
		}
		switch category(to) {
		case convert.CategoryDocument:
			return !(category(from) == convert.CategoryData && (to == fmtMarkdown || to == fmtHTML))
		case convert.CategoryImage:
			return category(from) != convert.CategoryImage
		}
		return false
	}
	convtest.Matrix(t, c, owns, checkers)
}
