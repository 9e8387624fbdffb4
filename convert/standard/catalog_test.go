package standard

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/archive"
	"github.com/convsvc/convsvc/convert/audio"
	"github.com/convsvc/convsvc/convert/data"
	"github.com/convsvc/convsvc/convert/document"
	"github.com/convsvc/convsvc/convert/image"
)

func TestCatalog_Formats(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	fs := c.Formats()
	if !slices.IsSortedFunc(fs, func(a, b convert.Format) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("Formats not sorted by id")
	}
	cats := map[string]bool{}
	for _, f := range fs {
		cats[f.Category] = true
		if f.Name == "" || f.MIME == "" || len(f.Extensions) == 0 {
			t.Errorf("format %q is incomplete: %+v", f.ID, f)
		}
		for _, e := range f.Extensions {
			if strings.HasPrefix(e, ".") {
				t.Errorf("format %q extension %q has a dot", f.ID, e)
			}
		}
	}
	for _, cat := range []string{"image", "document", "data", "audio", "archive"} {
		if !cats[cat] {
			t.Errorf("no format in category %q", cat)
		}
	}
	// The result is a copy.
	fs[0].Extensions[0] = "changed"
	if f, _ := c.Format(fs[0].ID); f.Extensions[0] == "changed" {
		t.Error("Formats returned shared memory")
	}
	want := map[string]string{"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp", "tiff": "image/tiff", "webp": "image/webp"}
	for id, mime := range want {
		f, ok := c.Format(id)
		if !ok || f.MIME != mime || f.Category != "image" {
			t.Errorf("Format(%q) = %+v, %v", id, f, ok)
		}
	}
	if _, ok := c.Format("nope"); ok {
		t.Error("Format(nope) found")
	}
}

func TestCatalog_BuiltinGraph(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	// Raster images convert directly, one decode and one encode.
	for _, from := range []string{"bmp", "gif", "jpeg", "png", "tiff", "webp"} {
		for _, to := range []string{"bmp", "gif", "jpeg", "png", "tiff"} {
			if from == to {
				continue
			}
			if steps, err := c.Path(from, to); err != nil || len(steps) != 1 {
				t.Errorf("Path(%q, %q) = %v, %v; want one step", from, to, steps, err)
			}
		}
	}
	// Recognised-only formats reach nothing and nothing reaches them.
	for _, id := range []string{"psd", "rar", "7z"} {
		if _, ok := c.Format(id); !ok {
			t.Errorf("format %q not registered", id)
		}
		if got := c.Targets(id); len(got) != 0 {
			t.Errorf("Targets(%q) = %v, want none", id, got)
		}
		if got := c.Sources(id); len(got) != 0 {
			t.Errorf("Sources(%q) = %v, want none", id, got)
		}
	}
	// One category change is fine (a document rendered to an image); two are not.
	if _, err := c.Path("markdown", "png"); err != nil {
		t.Errorf("markdown -> png: %v", err)
	}
	if _, err := c.Path("csv", "png"); !errors.Is(err, convert.ErrUnsupported) {
		t.Errorf("csv -> png crosses data -> document -> image: %v", err)
	}
	if steps, _ := c.Path("png", "jpeg"); !steps[0].Lossy {
		t.Error("png to jpeg not marked lossy")
	}
	if steps, _ := c.Path("jpeg", "png"); steps[0].Lossy {
		t.Error("jpeg to png marked lossy")
	}
}

func TestCatalog_ImagesStopAfterLeavingTheirCategory(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	if _, err := c.Path("png", "pdf"); err != nil {
		t.Fatalf("png -> pdf: %v", err)
	}
	if _, err := c.Path("gif", "pdf"); err != nil {
		t.Fatalf("gif -> png -> pdf stays in images until the last step: %v", err)
	}
	for _, to := range []string{"txt", "html", "markdown"} {
		if _, err := c.Path("png", to); !errors.Is(err, convert.ErrUnsupported) {
			t.Errorf("png -> pdf -> %s would pretend to convert: %v", to, err)
		}
	}
	if _, err := c.Path("csv", "pdf"); err != nil {
		t.Errorf("csv -> html -> pdf is a real table rendering: %v", err)
	}
}

// TestStandard_EachFamilyAlone builds a catalog of each family alone, as a program that wants
// only images would: it registers without the others, holds only its own categories (SVG, a
// vector image, is the document family's), and the standard catalog is exactly the union of
// the families' formats.
func TestStandard_EachFamilyAlone(t *testing.T) {
	families := []struct {
		name       string
		register   func(*convert.Catalog)
		categories []string
	}{
		{"image", image.Register, []string{convert.CategoryImage}},
		{"document", document.Register, []string{convert.CategoryDocument, convert.CategoryImage}},
		{"data", data.Register, []string{convert.CategoryData}},
		{"audio", audio.Register, []string{convert.CategoryAudio}},
		{"archive", archive.Register, []string{convert.CategoryArchive}},
	}
	union := map[string]bool{}
	for _, fam := range families {
		c := convert.NewEmptyCatalog(convert.Limits{})
		fam.register(c)
		fs := c.Formats()
		if len(fs) == 0 {
			t.Errorf("%s: no formats", fam.name)
		}
		for _, f := range fs {
			if !slices.Contains(fam.categories, f.Category) {
				t.Errorf("%s registers %s of category %s", fam.name, f.ID, f.Category)
			}
			union[f.ID] = true
		}
		for _, f := range fs {
			for _, to := range c.Targets(f.ID) {
				if g, _ := c.Format(to); !slices.Contains(fam.categories, g.Category) {
					t.Errorf("%s alone converts %s to %s (%s)", fam.name, f.ID, to, g.Category)
				}
			}
		}
	}
	var got []string
	for _, f := range NewCatalog(convert.Limits{}).Formats() {
		got = append(got, f.ID)
		if !union[f.ID] {
			t.Errorf("standard catalog has %s, which no family registers", f.ID)
		}
	}
	if len(got) != len(union) {
		t.Errorf("standard catalog has %d formats, the families %d", len(got), len(union))
	}
}

// TestStandard_EveryConverterVersioned: every pair the standard catalog converts has a
// version along its path (convert.Catalog.PathVersion), so the conversion cache can key it
// and a codec change invalidates it; a converter registered without Version fails here.
func TestStandard_EveryConverterVersioned(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	pairs := 0
	for _, f := range c.Formats() {
		for _, to := range c.Targets(f.ID) {
			if strings.HasPrefix(f.ID, "poison") || strings.HasPrefix(to, "poison") {
				continue // fault-injection converters (-tags poison) are never cached
			}
			pairs++
			v, ok := c.PathVersion(f.ID, to)
			if !ok {
				t.Errorf("%s -> %s: a converter on its path has no Version", f.ID, to)
				continue
			}
			if !strings.Contains(v, "@") {
				t.Errorf("%s -> %s: PathVersion %q names no version", f.ID, to, v)
			}
		}
	}
	if pairs == 0 {
		t.Fatal("the standard catalog converts nothing")
	}
}
